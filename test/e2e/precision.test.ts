// `svc serve --precision int8` (or SVC_PRECISION=int8): the same trained model, served by the int8
// engine, answers within a stated tolerance of an fp32 server. `--precision bf16` likewise, within a tighter one.
// The default is `auto`: what this CPU measured faster, within bf16's bound of fp32.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { cpuInfo } from '../../src/index.js';
import { exited, serve, svc } from '../_support/cli.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
// The texts the serve bench sends.
const texts = uciSentences('yelp')
  .slice(0, 64)
  .map((r) => r.text);
/** Largest |int8 - fp32| probability allowed on these texts, and the mean (measured: docs/benchmarks.md, "HTTP predict"). */
const kMaxDifference = 0.03;
const kMeanDifference = 0.01;
/** Largest |bf16 - fp32| allowed (measured 0.0007 on the serve bench's 512 texts). */
const kBf16MaxDifference = 0.003;

const dir = mkdtempSync(join(tmpdir(), 'svc-precision-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Predicted {
  model: string;
  label_text: string;
  predictions: { label: boolean; probability: number }[];
}

async function call(url: string, key: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** Starts `svc serve` on the data directory, predicts the texts, stops it. */
async function predictWith(
  args: string[],
  env: Record<string, string>,
  key: string,
  model: string,
): Promise<{ answer: Predicted; output: string }> {
  const server = await serve(['--data', dir, ...args], { NODE_DEBUG: 'svc', ...env });
  try {
    const answer = (await call(server.url, key, 'POST', '/v2/predict', { model, inputs: texts })) as unknown as Predicted;
    return { answer, output: server.output() };
  } finally {
    server.child.kill('SIGTERM');
    await exited(server.child);
  }
}

describe('svc serve --precision', () => {
  // The model the first test trains and its fp32 answers, for the auto test after it.
  let trained: { key: string; model: string; fp32: { answer: Predicted } } | undefined;

  it(
    'int8 answers within the stated tolerance of fp32',
    async () => {
      expect((await svc(['orgs', 'create', 'acme', '--data', dir])).code).toBe(0);
      const key = (await svc(['keys', 'create', '--org', 'acme', '--data', dir])).stdout.trim();
      const trainer = await serve(['--data', dir]);
      let model: string;
      try {
        model = (
          await call(trainer.url, key, 'POST', '/v2/train', {
            model: 'svc-small',
            task_type: 'binary-classification',
            examples,
            finetune: false,
          })
        ).id as string;
        let status = 'training';
        for (let i = 0; i < 1200 * kLevelSlowdown && status === 'training'; i++) {
          await new Promise((r) => setTimeout(r, 100));
          status = (await call(trainer.url, key, 'GET', `/v2/models/${model}`)).status as string;
        }
        expect(status).toBe('trained');
      } finally {
        trainer.child.kill('SIGTERM');
        await exited(trainer.child);
      }

      const fp32 = await predictWith(['--precision', 'fp32'], {}, key, model);
      expect(fp32.output).toContain('predicting in fp32');
      const int8 = await predictWith(['--precision', 'int8'], {}, key, model);
      expect(int8.output).toContain('predicting in int8');
      const fromEnv = await predictWith([], { SVC_PRECISION: 'int8' }, key, model);
      expect(fromEnv.output).toContain('predicting in int8');

      expect(int8.answer.model).toBe(model);
      expect(int8.answer.label_text).toBe('positive review');
      expect(int8.answer.predictions).toHaveLength(texts.length);
      const differences = texts.map((_, i) => Math.abs(int8.answer.predictions[i].probability - fp32.answer.predictions[i].probability));
      const mean = differences.reduce((s, d) => s + d, 0) / differences.length;
      expect(Math.max(...differences)).toBeLessThan(kMaxDifference);
      expect(mean).toBeLessThan(kMeanDifference);
      // int8 really ran: its probabilities are not fp32's.
      expect(mean).toBeGreaterThan(0);
      // The same engine either way it is asked for.
      fromEnv.answer.predictions.forEach((p, i) => expect(p.probability).toBeCloseTo(int8.answer.predictions[i].probability, 6));

      // bf16: the linear layers' products in bf16 (AMX tiles or vdpbf16ps), within kBf16MaxDifference of fp32;
      // the fp32 engine itself on other CPUs (the log says so).
      const bf16 = await predictWith(['--precision', 'bf16'], {}, key, model);
      expect(bf16.output).toContain('predicting in bf16');
      const bf16Differences = texts.map((_, i) =>
        Math.abs(bf16.answer.predictions[i].probability - fp32.answer.predictions[i].probability),
      );
      if (cpuInfo().bf16) {
        expect(Math.max(...bf16Differences)).toBeLessThan(kBf16MaxDifference);
        expect(Math.max(...bf16Differences)).toBeGreaterThan(0);
      } else {
        expect(bf16.output).toContain('fp32 products: this CPU has no bf16 products');
        bf16Differences.forEach((d) => expect(d).toBeLessThan(1e-6));
      }
      trained = { key, model, fp32 };
      // A model trained and five servers started one after another: minutes on a machine others load too.
    },
    240_000 * kLevelSlowdown,
  );

  it("auto, the default, runs what this CPU measured faster, says which, and stays within bf16's bound of fp32", async () => {
    if (!trained) throw new Error('the model of the test above did not train');
    const { key, model, fp32 } = trained;
    // svc info reads the pick from the same cache folder the server's workers measured into.
    const cache = join(dir, 'kernel-cache');
    const auto = await predictWith([], { SVC_CACHE_DIR: cache }, key, model); // no --precision: the default
    expect(auto.output).toContain('predicting in auto');
    expect(auto.output).toMatch(/svc: precision auto runs (fp32|bf16) \(kernel /);
    const info = await svc(['info', '--json'], { SVC_CACHE_DIR: cache });
    const picked = JSON.parse(info.stdout) as { precision: { auto: string }; kernels: { source: string } };
    // Measured by the server's workers, read back here; forced when this run sets SVC_KERNEL (bf16-emulated).
    expect(picked.kernels.source).toBe(process.env.SVC_KERNEL ? 'forced' : 'cache');
    expect(auto.output).toContain(`svc: precision auto runs ${picked.precision.auto} (`);
    const autoDifferences = texts.map((_, i) => Math.abs(auto.answer.predictions[i].probability - fp32.answer.predictions[i].probability));
    if (picked.precision.auto === 'bf16') expect(Math.max(...autoDifferences)).toBeLessThan(kBf16MaxDifference);
    else autoDifferences.forEach((d) => expect(d).toBeLessThan(1e-6));
  });

  it('refuses a precision it does not know, naming where it came from, as a wrong command line (exit 2)', async () => {
    const usage = "Run 'svc serve --help' for its options and examples.";
    const flag = await svc(['serve', '--port', '0', '--data', dir, '--precision', 'int4']);
    expect(flag.code).toBe(2);
    expect(flag.stderr.trim()).toBe(`svc serve: --precision must be 'fp32', 'int8', 'bf16' or 'auto'\n${usage}`);
    const env = await svc(['serve', '--port', '0', '--data', dir], { SVC_PRECISION: 'fp16' });
    expect(env.code).toBe(2);
    expect(env.stderr.trim()).toBe(`svc serve: SVC_PRECISION must be 'fp32', 'int8', 'bf16' or 'auto'\n${usage}`);
  });
});
