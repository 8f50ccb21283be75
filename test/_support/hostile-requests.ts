// Seeded hostile HTTP requests over every route of `svc serve`: wrong types, deep nesting, huge numbers, invalid
// UTF-8, NUL bytes, long ids, `..%2f` in hub paths, wrong content types, truncated bodies. Same seed, same requests.
import { seededRandom } from '../../src/random.js';

export interface HostileRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Declare a longer body than is sent, then close: the server must cope with the cut. */
  truncate?: boolean;
}

export interface FuzzContext {
  key: string;
  otherKey: string;
  projectId: string;
  otherProjectId: string;
  /** A trained model of the key's organization. */
  modelId: string;
}

/** Every UTF-8 byte that is not a letter or digit as %XX (encodeURIComponent throws on lone surrogates). */
function percentEncoded(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`))
    .join('');
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export class HostileRequests {
  readonly #random: () => number;

  constructor(
    seed: number,
    readonly context: FuzzContext,
  ) {
    this.#random = seededRandom(seed);
  }

  #int(n: number): number {
    return Math.floor(this.#random() * n);
  }

  #pick<T>(items: readonly T[]): T {
    return items[this.#int(items.length)];
  }

  #chance(p: number): boolean {
    return this.#random() < p;
  }

  /** Strings a careless parser or template chokes on. */
  text(): string {
    return this.#pick([
      () => '',
      () => 'a plain sentence about a film',
      () => 'nul\u0000inside',
      () => '\ud800 lone high, lone low \udc00',
      () => "$'$`$&(alert(1))//<script>alert(2)</script>",
      () => '../../../etc/passwd',
      () => '\u202e\u0301\u0000\uffff\ufffe',
      () => '😀'.repeat(1 + this.#int(500)),
      () => 'x'.repeat(this.#int(4000)),
      () => '__proto__',
      () => String.fromCharCode(...Array.from({ length: 64 }, () => this.#int(0x10000))),
    ])();
  }

  /** A value of the wrong type (or a hostile one of the right type). */
  value(depth = 0): Json {
    const choices: (() => Json)[] = [
      () => null,
      () => this.#chance(0.5),
      () => this.#pick([0, -0, 1e308, -1e308, 5e-324, 2 ** 53 + 1, -1, 1.5, 2 ** 31]),
      () => this.text(),
    ];
    if (depth < 4) {
      choices.push(
        () => Array.from({ length: this.#int(4) }, () => this.value(depth + 1)),
        () =>
          Object.fromEntries(
            Array.from({ length: this.#int(4) }, () => [this.#pick(['__proto__', 'constructor', 'text', 'a', '']), this.value(depth + 1)]),
          ),
      );
    }
    return this.#pick(choices)();
  }

  #examples(): Json[] {
    return Array.from({ length: 20 }, (_, i) => ({
      text: `example number ${i} ${i % 2 ? 'good' : 'bad'}`,
      label: i % 2 === 1,
      label_text: 'good',
    }));
  }

  /** A valid body with one to three mutations (never turning fine-tuning on: the suite would wait on training). */
  #mutate(body: { [key: string]: Json }, protectedKeys: readonly string[]): { [key: string]: Json } {
    const out = structuredClone(body);
    for (let n = 1 + this.#int(3); n > 0; n--) {
      const keys = Object.keys(out).filter((k) => !protectedKeys.includes(k));
      const key = this.#pick(keys);
      this.#pick([
        () => delete out[key],
        () => (out[key] = this.value()),
        () => (out[this.#pick(['extra', 'stream', 'max_tokens', '__proto__'])] = this.value()),
        () => {
          const list = out[key];
          if (Array.isArray(list) && list.length > 0) list[this.#int(list.length)] = this.value();
          else out[key] = [this.value(), this.value()];
        },
      ])();
    }
    return out;
  }

  #id(valid: string, shape: string): string {
    return this.#pick([
      () => valid,
      () => `${shape}${'0'.repeat(12)}`,
      () => 'a'.repeat(this.#pick([200, 5000])),
      () => '..%2f..%2fsvc.sqlite',
      () => '%00',
      () => '%ff%fe',
      () => encodeURIComponent("$'$`(alert(1))//"),
      () => percentEncoded(this.text()).slice(0, 3000),
    ])();
  }

  #json(value: Json): Buffer {
    return Buffer.from(JSON.stringify(value));
  }

  /** Bodies that are not the JSON they claim to be. */
  #brokenBody(): Buffer {
    return this.#pick([
      () => Buffer.alloc(0),
      () => Buffer.from('{"model": "svc-small", "inputs": ["abc'),
      () =>
        Buffer.concat([
          Buffer.from('{"model":"x","inputs":["'),
          Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]),
          Buffer.from('"]}'),
        ]),
      () => Buffer.from(`${'['.repeat(this.#pick([1000, 100_000]))}${']'.repeat(1000)}`),
      () => Buffer.from(`{"a":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_001)}`),
      () => Buffer.from('{"model":1e999999,"inputs":[123456789012345678901234567890e99999]}'),
      () => Buffer.from('\u0000\u0000\u0000'),
      () => Buffer.from('null'),
      () => Buffer.from('[]'),
      () => Buffer.from('"just a string"'),
      () => Buffer.from('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}'),
    ])();
  }

  #headers(json: boolean): Record<string, string> {
    const { key, otherKey } = this.context;
    const headers: Record<string, string> = {};
    const auth = this.#pick([
      `Bearer ${key}`,
      `Bearer ${key}`,
      `Bearer ${otherKey}`,
      'Bearer svc_nope',
      'Basic YTpi',
      '',
      `Bearer ${'k'.repeat(4000)}`,
      'Bearer \u00ff',
    ]);
    if (auth !== '') headers[this.#chance(0.2) ? 'x-api-key' : 'authorization'] = auth.replace(/[^\x20-\xff]/g, '?');
    if (json || this.#chance(0.5)) {
      headers['content-type'] = this.#pick([
        'application/json',
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=latin1',
        'application/jsonx',
        '*/*',
        '',
      ]);
    }
    return headers;
  }

  /** The next request. */
  next(): HostileRequest {
    const { projectId, otherProjectId, modelId } = this.context;
    const project = () => this.#id(this.#chance(0.2) ? otherProjectId : projectId, 'proj_');
    const model = () => this.#id(modelId, 'svc-small-');
    const predict = { model: modelId, inputs: [this.text(), 'a fine film'] };
    const train = { model: 'svc-small', task_type: 'binary-classification', examples: this.#examples(), finetune: false };
    const chat = {
      model: this.#pick(['provider-a:gpt-fake', 'provider-b:mistral-fake', 'provider-c:claude-fake', 'gpt', '']),
      max_tokens: 8,
      messages: [{ role: 'user', content: this.text() }],
    };
    const hubFile = () =>
      this.#pick([
        'config.json',
        'manifest.json',
        '..%2f..%2fsvc.sqlite',
        '%2e%2e/%2e%2e/serve.pid',
        'onnx%2fmodel.onnx',
        '..%2f..%2f..%2fetc%2fpasswd',
        '%00',
        'a'.repeat(3000),
        '.%2e/head.json',
      ]);
    const routes: (() => HostileRequest)[] = [
      () => ({ method: 'POST', path: '/v2/predict', headers: {}, body: this.#json(this.#mutate(predict, [])) }),
      () => ({ method: 'POST', path: '/v2/train', headers: {}, body: this.#json(this.#mutate(train, ['finetune'])) }),
      () => ({ method: this.#pick(['GET', 'DELETE', 'POST']), path: `/v2/models/${model()}`, headers: {} }),
      () => ({ method: 'GET', path: `/v2/models/${model()}/progress`, headers: {} }),
      () => ({ method: 'GET', path: this.#pick(['/v2/models', '/v2/openapi.json', '/health', '/v2/nowhere', '/', '/v2']), headers: {} }),
      () => ({
        method: 'POST',
        path: `/v2/${project()}/${this.#pick(['chat/completions', 'v1/chat/completions', 'v1/messages'])}`,
        headers: {},
        body: this.#json(this.#mutate(chat, [])),
      }),
      () => ({
        method: 'GET',
        path: `/v2/${project()}/requests?limit=${this.#pick(['1', '0', '-1', '1e3', 'abc', '500', '99999999999999999999'])}&before=${this.#pick(['', '1', 'x', '9'.repeat(30)])}`,
        headers: {},
      }),
      () => ({ method: 'GET', path: `/v2/${project()}/dashboard`, headers: {} }),
      () => ({ method: 'GET', path: `/hub/acme/${model()}/resolve/${this.#pick(['main', 'dev', '..%2f'])}/${hubFile()}`, headers: {} }),
      () => ({
        method: 'GET',
        path: `/hub/api/models/${this.#pick(['acme', 'globex', '..%2f', 'a'.repeat(500)])}/${model()}`,
        headers: {},
      }),
    ];
    const request = this.#pick(routes)();
    if (request.method !== 'GET' && this.#chance(0.3)) request.body = this.#brokenBody();
    request.headers = this.#headers(request.body !== undefined);
    if (request.body !== undefined && this.#chance(0.03)) request.truncate = true;
    return request;
  }
}
