// `npm run bench -- many-models [--json] [--models 1000] [--calls 400] [--cold-cache 16]`: many adapter models of
// one base through the library, against the same calls on one model.
//
// Models: ONE adapter model is really trained (svc-small, 24 UCI yelp sentences, finetune { method: 'adapter' },
// rank 8); the other N - 1 are DERIVED from it, not trained: its A and B with every value scaled by 1 + 5% uniform
// noise (seeded), written by the library's writeAdapter with the trained head. They cost what a trained adapter
// costs to predict (same rank, same modules), which is what this suite measures; their probabilities mean nothing.
//
// Measured (pool: 1 worker on every core, fp32): p50 / p99 per call and texts per second, round robin over the N
// models vs the same calls on model 0 alone, for 1 and 8 texts a call at concurrency 1 and 16; then with a cache of
// --cold-cache adapters, round robin so that every call's adapter has left the cache (p50 / p99 of those first
// predicts); and memory: the worker cache's bytes per adapter, and the process RSS growth with all N held.
import { subscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { allUciTexts, uciSentences } from '../fixtures/corpora.js';
import { Classifier, train } from '../src/index.js';
import { kAdapterFile, loraTensorName, readAdapter, writeAdapter } from '../src/model/adapter.js';
import type { AdapterTensor, LoraModule } from '../src/model/adapter.js';
import { resolveBaseModel } from '../src/model/base-models.js';
import { readModelDir } from '../src/model/directory.js';
import { parseBertConfig } from '../src/model/onnx/bert-weights.js';
import { writeModelDir } from '../src/model/write.js';
import { closePool, configurePool } from '../src/pool/pool.js';
import { seededRandom } from '../src/random.js';
import { kChannels, type AdapterCacheEvent } from '../src/telemetry.js';
import { intOption } from './_common.js';

const kAdapterBytesRank8 = 663_552; // fp16 A and B of rank 8 on the six linear layers of six layers, as the file holds them

interface Row {
  texts: number;
  concurrency: number;
  oneP50: number;
  oneP99: number;
  manyP50: number;
  manyP99: number;
  oneTextsPerSec: number;
  manyTextsPerSec: number;
}

const corpus = allUciTexts();

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

interface Measured {
  p50: number;
  p99: number;
  textsPerSec: number;
  latencies: number[];
  texts: number;
  seconds: number;
}

function combine(parts: Measured[]): Measured {
  const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
  const texts = parts.reduce((sum, p) => sum + p.texts, 0);
  const seconds = parts.reduce((sum, p) => sum + p.seconds, 0);
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), textsPerSec: texts / seconds, latencies, texts, seconds };
}

// Round robin over the models across measurements, so that a quarter starts where the last one stopped.
let cursor = 0;

/** `calls` predicts of `texts` texts each, `concurrency` at a time, the models in turn. */
async function measure(models: Classifier[], texts: number, concurrency: number, calls: number): Promise<Measured> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    while (next < calls) {
      const i = next++;
      const model = models[cursor++ % models.length]!;
      const batch = Array.from({ length: texts }, (_, j) => corpus[(i * texts + j) % corpus.length]!);
      const t0 = performance.now();
      await model.predict(batch);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), textsPerSec: (calls * texts) / seconds, latencies, texts: calls * texts, seconds };
}

/** The trained model's adapter with every value scaled by 1 + 5% noise: a derived model, not a trained one. */
function perturbed(pairs: Awaited<ReturnType<typeof readAdapter>>['pairs'], seed: number): AdapterTensor[] {
  const random = seededRandom(seed);
  const jitter = (values: Float32Array) => values.map((v) => v * (1 + 0.05 * (random() * 2 - 1)));
  const tensors: AdapterTensor[] = [];
  for (const [key, pair] of pairs) {
    const [, , layer, ...rest] = key.split('.');
    const module = rest.join('.') as LoraModule;
    const rank = pair.a.length / pair.in;
    tensors.push({ name: loraTensorName(Number(layer), module, 'A'), shape: [rank, pair.in], data: jitter(pair.a) });
    tensors.push({ name: loraTensorName(Number(layer), module, 'B'), shape: [pair.out, rank], data: jitter(pair.b) });
  }
  return tensors;
}

async function makeModels(root: string, count: number): Promise<string[]> {
  const examples = uciSentences('yelp').slice(0, 24).map((row) => ({ text: row.text, label: row.label, label_text: 'positive review' }));
  const t0 = performance.now();
  const trained = await train({ task_type: 'binary-classification', model: 'svc-small', examples, finetune: { method: 'adapter' } }, { seed: 1 });
  const first = join(root, 'm0');
  await trained.save(first);
  trained.dispose();
  console.error(`trained 1 adapter model in ${((performance.now() - t0) / 1000).toFixed(1)} s; deriving ${count - 1} by random perturbation`);
  const base = resolveBaseModel('svc-small');
  const config = parseBertConfig(JSON.parse(readFileSync(base.configFile, 'utf8')) as Record<string, unknown>);
  const { manifest, head, encoderFile } = await readModelDir(first);
  const adapter = await readAdapter(join(first, manifest.adapter_config_file as string), encoderFile as string, config);
  const dirs = [first];
  for (let m = 1; m < count; m++) {
    const dir = join(root, `m${m}`);
    await writeAdapter(dir, perturbed(adapter.pairs, m), adapter.settings, base, config);
    await writeModelDir(dir, { ...manifest, id: `${manifest.id.slice(0, 20)}-derived-${m}` }, head, join(dir, kAdapterFile));
    dirs.push(dir);
  }
  return dirs;
}

function rssMiB(): number {
  return process.memoryUsage().rss / 2 ** 20;
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const count = intOption(args, 'models', 1000);
  const calls = intOption(args, 'calls', 400);
  const coldCache = intOption(args, 'cold-cache', 16);
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-many-'));
  let cache: AdapterCacheEvent | undefined;
  subscribe(kChannels.adapterCache, (event) => void (cache = event as AdapterCacheEvent));
  try {
    const cores = availableParallelism();
    configurePool({ workers: 1, engineThreads: cores, adapterCacheBytes: Math.ceil(count * kAdapterBytesRank8 * 1.05) });
    const dirs = await makeModels(root, count);
    const models = await Promise.all(dirs.map((dir) => Classifier.load(dir)));
    const one = [models[0]!];
    await measure(one, 8, 4, 40); // the base encoder loaded, the engine warm
    const rssOne = rssMiB();
    const warm0 = performance.now();
    await measure(models, 1, 16, count); // every adapter read once
    const rssAll = rssMiB();
    console.error(`read ${count} adapters in ${((performance.now() - warm0) / 1000).toFixed(1)} s`);
    const held = cache!;
    const rows: Row[] = [];
    for (const texts of [1, 8]) {
      for (const concurrency of [1, 16]) {
        // In alternating quarters, so that what else the machine runs weighs on both sides alike.
        const n = Math.ceil((texts === 8 ? calls / 2 : calls) / 4);
        const singles = [];
        const manys = [];
        for (let quarter = 0; quarter < 4; quarter++) {
          singles.push(await measure(one, texts, concurrency, n));
          manys.push(await measure(models, texts, concurrency, n));
        }
        const single = combine(singles);
        const many = combine(manys);
        rows.push({
          texts, concurrency, oneP50: single.p50, oneP99: single.p99, manyP50: many.p50, manyP99: many.p99,
          oneTextsPerSec: single.textsPerSec, manyTextsPerSec: many.textsPerSec,
        });
      }
    }
    for (const m of models) m.dispose();
    await closePool();

    // Cold: a cache of a few adapters, round robin over all of them: every call reads its adapter anew.
    configurePool({ workers: 1, engineThreads: cores, adapterCacheBytes: coldCache * kAdapterBytesRank8 });
    const again = await Promise.all(dirs.map((dir) => Classifier.load(dir)));
    await measure([again[0]!], 8, 4, 40);
    const coldCalls = Math.min(count, 300);
    cursor = 0;
    const cold = await measure(again.slice(1, 1 + coldCalls), 1, 1, coldCalls);
    const misses = cache!;
    for (const m of again) m.dispose();

    const result = {
      models: count, trained: 1, derived: count - 1, rows,
      cold: { calls: coldCalls, cacheAdapters: coldCache, p50: cold.p50, p99: cold.p99, evictions: misses.evictions },
      memory: {
        adapters: count, cacheBytes: held.bytes, bytesPerAdapter: held.bytes / count,
        rssGrowthMiB: rssAll - rssOne, rssPerAdapterMiB: (rssAll - rssOne) / count,
      },
    };
    if (json) {
      console.log(JSON.stringify(result));
      return;
    }
    const f = (x: number) => x.toFixed(1);
    console.log(`${count} adapter models of svc-small (1 trained, ${count - 1} derived by random perturbation), 1 worker x ${cores} threads, fp32`);
    console.log('texts/call | conc. | one p50 / p99 ms | many p50 / p99 ms | p50 ratio | p99 ratio | one texts/s | many texts/s | throughput ratio');
    for (const r of rows) {
      console.log(
        `${r.texts} | ${r.concurrency} | ${f(r.oneP50)} / ${f(r.oneP99)} | ${f(r.manyP50)} / ${f(r.manyP99)} | ${(r.manyP50 / r.oneP50).toFixed(2)}x | ` +
          `${(r.manyP99 / r.oneP99).toFixed(2)}x | ${f(r.oneTextsPerSec)} | ${f(r.manyTextsPerSec)} | ${(r.manyTextsPerSec / r.oneTextsPerSec).toFixed(2)}x`,
      );
    }
    console.log(`first predict after its adapter left the cache (${coldCalls} calls, 1 text, cache of ${coldCache}): p50 ${f(cold.p50)} ms, p99 ${f(cold.p99)} ms`);
    console.log(
      `memory: ${count} adapters held in ${(held.bytes / 2 ** 20).toFixed(1)} MiB (${(held.bytes / count / 1e6).toFixed(3)} MB each, fp16); ` +
        `process RSS +${f(rssAll - rssOne)} MiB (${((rssAll - rssOne) / count).toFixed(3)} MiB per adapter)`,
    );
  } finally {
    await closePool();
    rmSync(root, { recursive: true, force: true });
  }
}
