// The adapter files of a fine-tuned model: PEFT's adapter_config.json and adapter_model.safetensors, their size, and
// the checks a reader makes (each error names the field or the tensor).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { adapterConfigJson, kLoraModules, loraTensorName, parseAdapterConfig, readAdapter, writeAdapter } from '../../src/model/adapter.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { parseBertConfig } from '../../src/model/onnx/bert-weights.js';
import { encodeSafetensors, float16ToFloat32, float32ToFloat16, SafetensorsFile } from '../../src/model/safetensors.js';
import { kSmallShape, randomAdapter } from '../_support/adapter.js';

const base = resolveBaseModel('svc-small');
const config = parseBertConfig(JSON.parse(readFileSync(base.configFile, 'utf8')) as Record<string, unknown>);
let root: string;
let n = 0;
const fresh = () => join(root, `a${n++}`);

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-adapter-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const read = (dir: string) => readAdapter(join(dir, 'adapter_config.json'), join(dir, 'adapter_model.safetensors'), config);

describe('float32ToFloat16', () => {
  it('rounds to nearest even and saturates to infinity', () => {
    expect(float32ToFloat16(1)).toBe(0x3c00);
    expect(float32ToFloat16(-2)).toBe(0xc000);
    expect(float32ToFloat16(65504)).toBe(0x7bff);
    expect(float32ToFloat16(65520)).toBe(0x7c00);
    expect(float32ToFloat16(2 ** -24)).toBe(0x0001);
    expect(float32ToFloat16(1 + 2 ** -11)).toBe(0x3c00); // a tie goes to the even mantissa
    expect(float32ToFloat16(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(float32ToFloat16(NaN) & 0x7e00).toBe(0x7e00);
  });

  it('round-trips every finite fp16 value', () => {
    for (let bits = 0; bits < 0x7c00; bits++) {
      expect(float32ToFloat16(float16ToFloat32(bits))).toBe(bits);
      expect(float32ToFloat16(float16ToFloat32(bits | 0x8000))).toBe(bits | 0x8000);
    }
  });
});

describe('adapter_config.json', () => {
  it("is PEFT's LoRA layout and reads back to the same settings", () => {
    const json = adapterConfigJson({ rank: 8, alpha: 16, modules: kLoraModules }, base);
    expect(json).toMatchObject({
      peft_type: 'LORA',
      task_type: 'FEATURE_EXTRACTION',
      base_model_name_or_path: 'sentence-transformers/all-MiniLM-L6-v2',
      r: 8,
      lora_alpha: 16,
      lora_dropout: 0,
      bias: 'none',
      fan_in_fan_out: false,
      target_modules: ['query', 'key', 'value', 'attention.output.dense', 'intermediate.dense', 'output.dense'],
    });
    expect(parseAdapterConfig(json, 'c')).toEqual({ rank: 8, alpha: 16, modules: kLoraModules, scale: 2 });
  });

  it('says a module set PEFT suffixes cannot as a pattern', () => {
    const modules = ['attention.self.query', 'output.dense'] as const;
    const json = adapterConfigJson({ rank: 4, alpha: 4, modules }, base);
    expect(json.target_modules).toBe('encoder\\.layer\\.\\d+\\.(attention\\.self\\.query|output\\.dense)');
    expect(parseAdapterConfig(json, 'c').modules).toEqual(modules);
    // PEFT's suffix rule: 'dense' is every dense layer.
    expect(parseAdapterConfig({ ...json, target_modules: ['dense'] }, 'c').modules).toEqual([
      'attention.output.dense',
      'intermediate.dense',
      'output.dense',
    ]);
  });

  it('refuses what the encoder cannot apply, naming the field', () => {
    const good = adapterConfigJson({ rank: 8, alpha: 16, modules: kLoraModules }, base);
    expect(() => parseAdapterConfig({ ...good, peft_type: 'IA3' }, 'c.json')).toThrow('c.json: peft_type "IA3" is not "LORA"');
    expect(() => parseAdapterConfig({ ...good, r: 0 }, 'c.json')).toThrow('c.json: r must be an integer from 1 to 256');
    expect(() => parseAdapterConfig({ ...good, bias: 'all' }, 'c.json')).toThrow('c.json: bias "all" is not supported (only "none")');
    expect(() => parseAdapterConfig({ ...good, fan_in_fan_out: true }, 'c.json')).toThrow('fan_in_fan_out is not supported');
    expect(() => parseAdapterConfig({ ...good, rank_pattern: { query: 4 } }, 'c.json')).toThrow('rank_pattern is not supported');
    expect(() => parseAdapterConfig({ ...good, target_modules: ['pooler'] }, 'c.json')).toThrow(
      'c.json: target_modules ["pooler"] adapts none of',
    );
  });
});

describe('adapter_model.safetensors', () => {
  it('holds rank 8 on all six linear layers in fp16, under 1 MB, and reads back as written', async () => {
    const dir = fresh();
    const tensors = randomAdapter(kSmallShape);
    await writeAdapter(dir, tensors, { rank: 8, alpha: 16, modules: kLoraModules }, base, config);
    const file = SafetensorsFile.open(join(dir, 'adapter_model.safetensors'));
    const params = tensors.reduce((sum, t) => sum + t.data.length, 0);
    // 6 layers x (4 x 8 x (384 + 384) + 2 x 8 x (384 + 1536)): 1.33 MB in fp32, 0.66 MB in fp16.
    expect(params).toBe(331_776);
    expect(file.names).toHaveLength(72);
    expect(file.info(loraTensorName(0, 'attention.self.query', 'A'))).toMatchObject({ dtype: 'F16', shape: [8, 384] });
    expect(file.info(loraTensorName(5, 'intermediate.dense', 'B'))).toMatchObject({ dtype: 'F16', shape: [1536, 8] });
    const size = statSync(join(dir, 'adapter_model.safetensors')).size;
    expect(size).toBeGreaterThan(params * 2);
    expect(size).toBeLessThan(params * 2 + 16_384);
    const adapter = await read(dir);
    const q = adapter.pairs.get('encoder.layer.3.attention.self.key')!;
    const written = tensors.find((t) => t.name === loraTensorName(3, 'attention.self.key', 'A'))!.data;
    expect(Array.from(q.a.subarray(0, 5))).toEqual(Array.from(written.subarray(0, 5), (v) => float16ToFloat32(float32ToFloat16(v))));
  });

  async function tampered(edit: (tensors: ReturnType<typeof randomAdapter>) => ReturnType<typeof randomAdapter>): Promise<string> {
    const dir = fresh();
    const modules = ['attention.self.query'] as const;
    await writeAdapter(dir, randomAdapter(kSmallShape, { rank: 2, modules }), { rank: 2, alpha: 2, modules }, base, config);
    const tensors = edit(randomAdapter(kSmallShape, { rank: 2, modules }));
    writeFileSync(join(dir, 'adapter_model.safetensors'), encodeSafetensors(tensors.map((t) => ({ ...t, dtype: 'F32' as const }))));
    return dir;
  }
  const qA = loraTensorName(2, 'attention.self.query', 'A');
  const qB = loraTensorName(2, 'attention.self.query', 'B');

  it('refuses a tensor of the wrong shape, naming it', async () => {
    const dir = await tampered((ts) =>
      ts.map((t) => (t.name === qA ? { ...t, shape: [3, 256] as [number, number], data: new Float32Array(768) } : t)),
    );
    await expect(read(dir)).rejects.toThrow(`tensor '${qA}' has shape [3, 256], expected [2, 384] (r = 2 and the base's config)`);
  });

  it('refuses a non-finite value, naming the tensor and element', async () => {
    const dir = await tampered((ts) => ts.map((t) => (t.name === qB ? { ...t, data: t.data.map((v, i) => (i === 7 ? NaN : v)) } : t)));
    await expect(read(dir)).rejects.toThrow(`tensor '${qB}' holds a non-finite value at element 7`);
  });

  it('refuses an unknown tensor and a missing one', async () => {
    const extra = 'base_model.model.pooler.dense.lora_A.weight';
    const dir = await tampered((ts) => [...ts, { name: extra, shape: [2, 384], data: new Float32Array(768) }]);
    await expect(read(dir)).rejects.toThrow(
      `tensor '${extra}' is not a LoRA weight of the adapted modules (attention.self.query) in the base's 6 layers`,
    );
    const missing = await tampered((ts) => ts.filter((t) => t.name !== qB));
    await expect(read(missing)).rejects.toThrow(`tensor '${qB}' is missing (adapter_config.json adapts this module)`);
  });

  it("is refused by the worker's native read with the same messages (what Classifier.load runs)", async () => {
    const { Adapter } = await import('../../src/native/adapter.js');
    const load = (dir: string) => () => Adapter.load(dir, { base: 'svc-small' });
    const cases: [string, string][] = [
      [
        await tampered((ts) => ts.map((t) => (t.name === qB ? { ...t, data: t.data.map((v, i) => (i === 7 ? NaN : v)) } : t))),
        `tensor '${qB}' holds a non-finite value at element 7`,
      ],
      [
        await tampered((ts) =>
          ts.map((t) => (t.name === qA ? { ...t, shape: [3, 256] as [number, number], data: new Float32Array(768) } : t)),
        ),
        `tensor '${qA}' has shape [3, 256], expected [2, 384] (r = 2 and the base's config)`,
      ],
      [await tampered((ts) => ts.filter((t) => t.name !== qB)), `tensor '${qB}' is missing (adapter_config.json adapts this module)`],
    ];
    // A module adapter_config.json does not adapt, though the encoder has it.
    const kA = loraTensorName(1, 'attention.self.key', 'A');
    cases.push([
      await tampered((ts) => [...ts, { name: kA, shape: [2, 384], data: new Float32Array(768) }]),
      `tensor '${kA}' is not a LoRA weight of the adapted modules (attention.self.query) in the base's 6 layers`,
    ]);
    for (const [dir, message] of cases) {
      expect(load(dir)).toThrow(`${join(dir, 'adapter_model.safetensors')}: ${message}`);
      expect(load(dir)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
      await expect(read(dir)).rejects.toThrow(message);
    }
  });

  it('is refused by the native encoder too, which names the tensor', async () => {
    const { Encoder } = await import('../../src/native/encoder.js');
    const dir = await tampered((ts) => ts.map((t) => (t.name === qB ? { ...t, data: t.data.map((v, i) => (i === 7 ? Infinity : v)) } : t)));
    expect(() => Encoder.fromPretrained('svc-small', { adapter: dir, threads: 1 })).toThrow(
      `tensor '${qB}' holds a non-finite value at element 7`,
    );
    const short = await tampered((ts) =>
      ts.map((t) => (t.name === qA ? { ...t, shape: [3, 256] as [number, number], data: new Float32Array(768) } : t)),
    );
    expect(() => Encoder.fromPretrained('svc-small', { adapter: short, threads: 1 })).toThrow(
      `tensor '${qA}' has shape [3, 256], expected [2, 384]`,
    );
  });
});
