// The fake provider's teacher mode through the real proxy routes and the three official SDKs: each dialect's
// labelling answer, streaming and not, read by readTeacherReply; the seeded error rate; every fault marker; plain
// chat answered with the label in words. (Service tier: the harness serves the proxy on 127.0.0.1 and logs to a real
// SqliteStore.)
import type Anthropic from '@anthropic-ai/sdk';
import type { Mistral } from '@mistralai/mistralai';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type FakeProvider, type FakeTeacher, startFakeProvider } from '../../fixtures/fake-provider.js';
import { isNoisyText } from '../../fixtures/fake-teacher.js';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import {
  readTeacherReply,
  type TeacherDialect,
  type TeacherLabel,
  type TeacherTask,
  type TeacherVerdict,
  teacherRequestBody,
} from '../../src/teacher/protocol.js';

const binary: TeacherTask = { taskType: 'binary-classification', labels: ['billing question'] };
const classes: TeacherTask = { taskType: 'multi-class-classification', labels: ['billing', 'bug', 'praise'] };
const sets: TeacherTask = { taskType: 'multi-label-classification', labels: ['urgent', 'refund'] };

/** The known labelling: the text's prefix names its task. */
function truth(text: string): TeacherLabel {
  if (text.startsWith('binary:')) return text.includes('invoice');
  if (text.startsWith('class:')) return text.includes('invoice') ? 'billing' : text.includes('crash') ? 'bug' : 'praise';
  return [...(text.includes('now') ? ['urgent'] : []), ...(text.includes('refund') ? ['refund'] : [])];
}

const kModels: Record<TeacherDialect, string> = {
  openai: 'provider-a:gpt-fake',
  mistral: 'provider-b:mistral-fake',
  anthropic: 'provider-c:claude-fake',
};

interface Rig {
  h: ProxyHarness;
  fake: FakeProvider;
  sdk: { openai: OpenAI; mistral: Mistral; anthropic: Anthropic };
}

async function startRig(teacher: FakeTeacher): Promise<Rig> {
  const fake = await startFakeProvider({ teacher });
  const h = await startProxyHarness({}, fake);
  return { h, fake, sdk: officialClients(h) };
}

/**
 * Asks the teacher through the proxy with that dialect's SDK, as protocol.ts writes the call, and returns the reply
 * as a non-streaming body (a stream is reassembled by the SDK's own helper where it has one).
 */
async function ask(rig: Rig, dialect: TeacherDialect, task: TeacherTask, texts: string[], stream: boolean): Promise<string> {
  const body = teacherRequestBody(dialect, kModels[dialect], task, texts);
  const { openai, mistral, anthropic } = rig.sdk;
  if (dialect === 'openai') {
    const params = body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    if (!stream) return JSON.stringify(await openai.chat.completions.create(params));
    return JSON.stringify(await openai.chat.completions.stream({ ...params, stream: true }).finalChatCompletion());
  }
  if (dialect === 'anthropic') {
    const params = body as unknown as Anthropic.MessageCreateParamsNonStreaming;
    if (!stream) return JSON.stringify(await anthropic.messages.create(params));
    return JSON.stringify(await anthropic.messages.stream(params).finalMessage());
  }
  const request = {
    model: kModels.mistral,
    temperature: 0,
    messages: body.messages as Array<{ role: 'system' | 'user'; content: string }>,
    responseFormat: { type: 'json_object' as const },
  };
  if (!stream) return JSON.stringify(await mistral.chat.complete(request));
  let content = '';
  for await (const event of await mistral.chat.stream(request)) {
    const delta = event.data.choices[0]?.delta.content;
    if (typeof delta === 'string') content += delta;
  }
  return JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content } }] });
}

const labels = (...values: TeacherLabel[]): TeacherVerdict[] => values.map((label) => ({ kind: 'label', label }));
const kBinaryTexts = ['binary: where is my invoice', 'binary: the app crashes'];
const kClassTexts = ['class: my invoice is wrong', 'class: it crashes on start', 'class: lovely app'];
const kSetTexts = ['sets: refund me now', 'sets: refund when you can', 'sets: hello'];
const kDialects: TeacherDialect[] = ['openai', 'mistral', 'anthropic'];
const refusal = "I can't help label these texts.";
const garbage = '{"labels": [{"index": 0, "label": ??? the rest is lost';

/** Prompt tokens as the fake counts them: whitespace words across the messages (Anthropic's system is apart). */
function promptWords(body: Record<string, unknown>): number {
  const messages = body.messages as Array<{ content: string }>;
  return messages
    .map((m) => m.content)
    .join(' ')
    .split(/\s+/)
    .filter(Boolean).length;
}

describe('labelling calls', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ labelOf: truth });
  });
  afterAll(async () => {
    await rig.h.close();
    await rig.fake.close();
  });

  for (const dialect of kDialects) {
    for (const stream of [false, true]) {
      it(`${dialect} ${stream ? 'streaming' : 'non-streaming'}: every task type's labels, in order`, async () => {
        const asked = (task: TeacherTask, texts: string[]) => ask(rig, dialect, task, texts, stream);
        expect(readTeacherReply(dialect, await asked(binary, kBinaryTexts), binary, 2)).toEqual(labels(true, false));
        expect(readTeacherReply(dialect, await asked(classes, kClassTexts), classes, 3)).toEqual(labels('billing', 'bug', 'praise'));
        expect(readTeacherReply(dialect, await asked(sets, kSetTexts), sets, 3)).toEqual(labels(['urgent', 'refund'], ['refund'], []));
      });
    }
  }

  it('the SDKs send the protocol body unchanged through the proxy, and the log counts words of the answer', async () => {
    for (const dialect of kDialects) {
      // Every call so far is logged before this one's row is looked for.
      const before = rig.fake.requests.length;
      const lastId = before === 0 ? 0 : (await rig.h.logRows(before))[0].id;
      await ask(rig, dialect, binary, kBinaryTexts, false);
      const expected = teacherRequestBody(dialect, kModels[dialect].split(':')[1], binary, kBinaryTexts);
      // The Mistral SDK spells out stream: false; nothing else is added or dropped.
      expect(rig.fake.requests[before].body).toEqual(dialect === 'mistral' ? { ...expected, stream: false } : expected);
      // {"labels": [{"index": 0, "label": true}, {"index": 1, "label": false}]}: 1 word + 4 a text
      const row = await rig.h.rowFor(kModels[dialect], lastId);
      expect(row).toMatchObject({ status: 200, tokensIn: promptWords(expected), tokensOut: 9, error: null });
    }
  });

  it('answers the indexes it was asked, whatever they are', async () => {
    const body = teacherRequestBody('openai', 'gpt-fake', binary, ['binary: invoice']);
    const messages = body.messages as Array<{ role: string; content: string }>;
    messages[1].content = '{"texts":[{"index":7,"text":"binary: an invoice"},{"index":3,"text":"binary: hi"}]}';
    const completion = await rig.sdk.openai.chat.completions.create({
      ...(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming),
      model: kModels.openai,
    });
    expect(completion.choices[0].message.content).toBe('{"labels": [{"index": 7, "label": true}, {"index": 3, "label": false}]}');
  });
});

describe('the seeded error rate', () => {
  let rig: Rig;
  const teacher: FakeTeacher = { labelOf: truth, errorRate: 0.1, seed: 42 };
  beforeAll(async () => {
    rig = await startRig(teacher);
  });
  afterAll(async () => {
    await rig.h.close();
    await rig.fake.close();
  });

  /** Labels `texts` 100 a call through provider A; every verdict must be a label. */
  async function labelAll(task: TeacherTask, texts: string[]): Promise<TeacherLabel[]> {
    const out: TeacherLabel[] = [];
    for (let start = 0; start < texts.length; start += 100) {
      const batch = texts.slice(start, start + 100);
      for (const verdict of readTeacherReply('openai', await ask(rig, 'openai', task, batch, false), task, batch.length)) {
        if (verdict.kind !== 'label') throw new Error(`expected a label, got ${JSON.stringify(verdict)}`);
        out.push(verdict.label);
      }
    }
    return out;
  }

  it('flips the binary label of 10% of 1,000 texts, the same texts on every run', async () => {
    const texts = Array.from({ length: 1000 }, (_, i) => `binary: message ${i} ${i % 2 === 0 ? 'about an invoice' : 'about the weather'}`);
    const got = await labelAll(binary, texts);
    const wrong = texts.filter((text, i) => got[i] !== truth(text));
    expect(wrong.length).toBe(92);
    expect(wrong).toEqual(texts.filter((text) => isNoisyText(text, teacher)));
    expect(await labelAll(binary, texts.slice(0, 100))).toEqual(got.slice(0, 100));
    expect(texts.filter((text) => isNoisyText(text, { ...teacher, seed: 43 })).length).toBe(86);
  });

  it('gives a wrong text another class, or one label toggled', async () => {
    const classTexts = Array.from({ length: 300 }, (_, i) => `class: ticket ${i} ${['invoice', 'crash', 'thanks'][i % 3]}`);
    const gotClasses = await labelAll(classes, classTexts);
    const wrongClasses = classTexts.filter((text, i) => gotClasses[i] !== truth(text));
    expect(wrongClasses.length).toBe(31);
    for (const label of gotClasses) expect(classes.labels).toContain(label);
    expect(wrongClasses).toEqual(classTexts.filter((text) => isNoisyText(text, teacher)));

    const setTexts = Array.from({ length: 300 }, (_, i) => `sets: case ${i} ${['refund now', 'refund', 'now', 'hello'][i % 4]}`);
    const gotSets = await labelAll(sets, setTexts);
    let toggled = 0;
    for (const [i, text] of setTexts.entries()) {
      const expected = truth(text) as string[];
      const got = gotSets[i] as string[];
      const differ = sets.labels.filter((label) => expected.includes(label) !== got.includes(label));
      expect(differ.length).toBe(isNoisyText(text, teacher) ? 1 : 0);
      toggled += differ.length;
    }
    expect(toggled).toBe(33);
  });
});

describe('fault markers', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ labelOf: truth });
  });
  afterAll(async () => {
    await rig.h.close();
    await rig.fake.close();
  });

  const all = (count: number, verdict: TeacherVerdict) => Array.from({ length: count }, () => verdict);

  it('[[refuse]] makes the whole call a refusal in each dialect, streaming or not', async () => {
    const texts = ['binary: an invoice', 'binary: [[refuse]] hello'];
    const expected: Record<TeacherDialect, TeacherVerdict> = {
      openai: { kind: 'refused', detail: `refused: ${refusal}` },
      mistral: { kind: 'refused', detail: `answered without JSON: ${refusal}` },
      anthropic: { kind: 'refused', detail: `refused (stop_reason refusal): ${refusal}` },
    };
    for (const dialect of kDialects) {
      for (const stream of [false, true]) {
        expect(readTeacherReply(dialect, await ask(rig, dialect, binary, texts, stream), binary, 2)).toEqual(all(2, expected[dialect]));
      }
    }
  });

  it('[[garbage]] answers text that is not JSON (Anthropic: a text block, no tool call)', async () => {
    const texts = ['class: [[garbage]] x', 'class: an invoice'];
    const invalid: TeacherVerdict = { kind: 'invalid', detail: `answered JSON that does not parse: ${garbage}` };
    for (const stream of [false, true]) {
      expect(readTeacherReply('openai', await ask(rig, 'openai', classes, texts, stream), classes, 2)).toEqual(all(2, invalid));
      expect(readTeacherReply('mistral', await ask(rig, 'mistral', classes, texts, stream), classes, 2)).toEqual(all(2, invalid));
    }
    expect(readTeacherReply('anthropic', await ask(rig, 'anthropic', classes, texts, false), classes, 2)).toEqual(
      all(2, { kind: 'refused', detail: `answered without the record_labels tool: ${garbage}` }),
    );
  });

  it('[[outside]] gives that text a label outside the set, in every task type', async () => {
    for (const dialect of kDialects) {
      expect(
        readTeacherReply(dialect, await ask(rig, dialect, binary, ['binary: [[outside]]', 'binary: invoice'], false), binary, 2),
      ).toEqual([
        { kind: 'invalid', detail: 'label must be a boolean (got "maybe")' },
        { kind: 'label', label: true },
      ]);
      expect(readTeacherReply(dialect, await ask(rig, dialect, classes, ['class: crash', 'class: [[outside]]'], true), classes, 2)).toEqual(
        [
          { kind: 'label', label: 'bug' },
          { kind: 'invalid', detail: 'label "outside the set" is not one of the classes' },
        ],
      );
      expect(readTeacherReply(dialect, await ask(rig, dialect, sets, ['sets: [[outside]] refund'], false), sets, 1)).toEqual([
        { kind: 'invalid', detail: 'label "outside the set" is not one of the labels (got ["outside the set"])' },
      ]);
    }
  });

  /** The status (and retry-after) of a failed call, or 200. */
  async function statusOf(call: Promise<unknown>): Promise<{ status: number; retryAfter: string | null }> {
    try {
      await call;
      return { status: 200, retryAfter: null };
    } catch (error) {
      const { status, headers } = error as { status?: number; statusCode?: number; headers: Headers };
      return { status: status ?? (error as { statusCode: number }).statusCode, retryAfter: headers?.get('retry-after') ?? null };
    }
  }

  it('[[fail-500xN]] and [[fail-429xN]] fail the first N calls with a text, then answer', async () => {
    const five = ['binary: [[fail-500x2]] invoice', 'binary: fine'];
    const openaiCalls = [];
    for (let i = 0; i < 3; i++) openaiCalls.push(await statusOf(ask(rig, 'openai', binary, five, false)));
    expect(openaiCalls).toEqual([
      { status: 500, retryAfter: null },
      { status: 500, retryAfter: null },
      { status: 200, retryAfter: null },
    ]);
    expect(readTeacherReply('openai', await ask(rig, 'openai', binary, five, false), binary, 2)).toEqual(labels(true, false));

    const limited = ['class: [[fail-429]] crash'];
    expect(await statusOf(ask(rig, 'anthropic', classes, limited, true))).toEqual({ status: 429, retryAfter: '1' });
    expect(readTeacherReply('anthropic', await ask(rig, 'anthropic', classes, limited, true), classes, 1)).toEqual(labels('bug'));

    // Counted per text: the same marker in another text fails again.
    expect(await statusOf(ask(rig, 'mistral', sets, ['sets: [[fail-429x1]] now'], false))).toEqual({ status: 429, retryAfter: '1' });
    expect(await statusOf(ask(rig, 'mistral', sets, ['sets: [[fail-429x1]] now'], false))).toEqual({ status: 200, retryAfter: null });
    expect(await statusOf(ask(rig, 'mistral', sets, ['sets: [[fail-429x1]] refund'], false))).toEqual({ status: 429, retryAfter: '1' });
  });
});

describe('plain chat prompts', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ labelOf: truth, errorRate: 0.1 });
  });
  afterAll(async () => {
    await rig.h.close();
    await rig.fake.close();
  });

  it('answer the last user message with its label in words, or as {"label": ...} when JSON was asked', async () => {
    const { openai, mistral, anthropic } = rig.sdk;
    const prompt = (content: string) => [
      { role: 'system' as const, content: 'Is this message about billing? Answer yes or no.' },
      { role: 'user' as const, content },
    ];
    const plain = await openai.chat.completions.create({ model: kModels.openai, messages: prompt('binary: my invoice is late') });
    expect(plain.choices[0].message.content).toBe('yes');
    expect(plain.usage).toMatchObject({ completion_tokens: 1 });
    const json = await openai.chat.completions.create({
      model: kModels.openai,
      messages: prompt('binary: the weather'),
      response_format: { type: 'json_object' },
    });
    expect(json.choices[0].message.content).toBe('{"label": false}');

    const mistralReply = await mistral.chat.complete({ model: kModels.mistral, messages: prompt('sets: refund me now') });
    expect(mistralReply.choices[0].message?.content).toBe('urgent, refund');
    const none = await mistral.chat.complete({
      model: kModels.mistral,
      messages: prompt('sets: hello'),
      responseFormat: { type: 'json_object' },
    });
    expect(none.choices[0].message?.content).toBe('{"label": []}');

    const deltas: string[] = [];
    const stream = anthropic.messages.stream({
      model: kModels.anthropic,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'class: it crashes' }],
    });
    stream.on('text', (text) => deltas.push(text));
    const message = await stream.finalMessage();
    expect(deltas).toEqual(['bug']);
    expect(message.content).toEqual([{ type: 'text', text: 'bug' }]);
  });

  it('fail, refuse and answer garbage on the same markers', async () => {
    const { openai } = rig.sdk;
    const ask1 = (content: string) => openai.chat.completions.create({ model: kModels.openai, messages: [{ role: 'user', content }] });
    await expect(ask1('binary: [[fail-500]] invoice')).rejects.toMatchObject({ status: 500 });
    expect((await ask1('binary: [[fail-500]] invoice')).choices[0].message.content).toBe('yes');
    expect((await ask1('binary: [[refuse]]')).choices[0].message.content).toBe(refusal);
    expect((await ask1('binary: [[garbage]]')).choices[0].message.content).toBe(garbage);
    expect((await ask1('class: [[outside]]')).choices[0].message.content).toBe('outside the set');
  });
});
