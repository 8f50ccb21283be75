// `npm run bench -- many-models [--json] [--models 1000] [--calls 400] [--cold-cache 16] [--registered 10000]
// [--via library|http|both]`: many adapter models of one base through the library and over HTTP (/v2/predict on a
// real server, bench/_many-models-http.ts), against the same calls on one model.
//
// Models: ONE adapter model is really trained (svc-small, 24 UCI yelp sentences, finetune { method: 'adapter' },
// rank 8); the other N - 1 are DERIVED from it, not trained: its A and B with every value scaled by 1 + 5% uniform
// noise (seeded), written by the library's writeAdapter with the trained head. They cost what a trained adapter
// costs to predict (same rank, same modules), which is what this suite measures; their probabilities mean nothing.
//
// Measured (pool: 1 worker on every core, fp32): p50 / p99 per call and texts per second, round robin over the N
// models vs the same calls on model 0 alone, for 1 and 8 texts a call at concurrency 1 and 16; then with a cache of
// --cold-cache adapters, round robin so that every call's adapter has left the cache (p50 / p99 of those first
// predicts; over HTTP with --registered models in the service); and memory: the worker cache's bytes per adapter, and the process RSS growth with all N held.
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
import { type HttpService, predictOverHttp, startHttpService } from './_many-models-http.js';

const kAdapterBytesRank8 = 663_552; // fp16 A and B of rank 8 on the six linear layers of six layers, as the file holds them

interface Row {
  via: 'library' | 'http';
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

/** One call at a time: p50 / p99 of their latencies, texts per second of one text each. */
function summarize(latencies: number[]): Measured {
  const sorted = [...latencies].sort((a, b) => a - b);
  const seconds = sorted.reduce((sum, ms) => sum + ms, 0) / 1000;
  return {
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    textsPerSec: sorted.length / seconds,
    latencies: sorted,
    texts: sorted.length,
    seconds,
  };
}

function combine(parts: Measured[]): Measured {
  const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
  const texts = parts.reduce((sum, p) => sum + p.texts, 0);
  const seconds = parts.reduce((sum, p) => sum + p.seconds, 0);
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), textsPerSec: texts / seconds, latencies, texts, seconds };
}

// Round robin over the models across measurements, so that a quarter starts where the last one stopped.
let cursor = 0;

/** Predicts `batch` with model `model` of a list; resolves when the answer is back. */
type Predict = (model: number, batch: string[]) => Promise<unknown>;

/** Through the library: Classifier.predict. */
function libraryPredict(models: Classifier[]): Predict {
  return (model, batch) => models[model]!.predict(batch);
}

/** Through a real server: POST /v2/predict. */
function httpPredict(service: HttpService, ids: readonly string[]): Predict {
  return (model, batch) => predictOverHttp(service, ids[model]!, batch);
}

/** `calls` predicts of `texts` texts each, `concurrency` at a time, the `models` models in turn. */
async function measure(predict: Predict, models: number, texts: number, concurrency: number, calls: number): Promise<Measured> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    while (next < calls) {
      const i = next++;
      const model = cursor++ % models;
      const batch = Array.from({ length: texts }, (_, j) => corpus[(i * texts + j) % corpus.length]!);
      const t0 = performance.now();
      await predict(model, batch);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    textsPerSec: (calls * texts) / seconds,
    latencies,
    texts: calls * texts,
    seconds,
  };
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
  const examples = uciSentences('yelp')
    .slice(0, 24)
    .map((row) => ({ text: row.text, label: row.label, label_text: 'positive review' }));
  const t0 = performance.now();
  const trained = await train(
    { task_type: 'binary-classification', model: 'svc-small', examples, finetune: { method: 'adapter' } },
    { seed: 1 },
  );
  const first = join(root, 'm0');
  // The adapter folder alone: the models here are served by the library, never loaded in transformers.js.
  await trained.save(first, { transformersJs: false });
  trained.dispose();
  console.error(
    `trained 1 adapter model in ${((performance.now() - t0) / 1000).toFixed(1)} s; deriving ${count - 1} by random perturbation`,
  );
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

/** Each row of texts per call x concurrency: one model against all of them round robin, in alternating quarters. */
async function compare(via: Row['via'], one: Predict, many: Predict, count: number, calls: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const texts of [1, 8]) {
    for (const concurrency of [1, 16]) {
      // In alternating quarters, so that what else the machine runs weighs on both sides alike.
      const n = Math.ceil((texts === 8 ? calls / 2 : calls) / 4);
      const singles = [];
      const manys = [];
      for (let quarter = 0; quarter < 4; quarter++) {
        singles.push(await measure(one, 1, texts, concurrency, n));
        manys.push(await measure(many, count, texts, concurrency, n));
      }
      const single = combine(singles);
      const multi = combine(manys);
      rows.push({
        via,
        texts,
        concurrency,
        oneP50: single.p50,
        oneP99: single.p99,
        manyP50: multi.p50,
        manyP99: multi.p99,
        oneTextsPerSec: single.textsPerSec,
        manyTextsPerSec: multi.textsPerSec,
      });
    }
  }
  return rows;
}

/**
 * `registered` models in one service whose workers hold `cacheAdapters` adapters: a first pass predicts `calls` of
 * them once each, each its model's first predict in the service (the classifier loads: manifest, head, and the
 * worker's native read and check of the adapter); a second pass the same ones again, by when each one's adapter has
 * left the worker's cache while its classifier stays loaded (a few hundred fit the service's maxLoadedModelBytes).
 */
async function coldOverHttp(dirs: string[], registered: number, cacheAdapters: number, calls: number, cores: number) {
  const t0 = performance.now();
  const service = await startHttpService(dirs, registered, {
    workers: 1,
    engineThreads: cores,
    adapterCacheBytes: cacheAdapters * kAdapterBytesRank8,
  });
  console.error(`registered ${registered} models in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  try {
    const predict = httpPredict(service, service.ids);
    await measure((_, batch) => predict(0, batch), 1, 8, 4, 40);
    // Spread over all registered models: model (1 + k * stride) for k < calls. Each cold call is followed by a warm
    // one on model 0, so that the two compare at the same moments of a loaded machine.
    const stride = Math.max(1, Math.floor(registered / calls));
    const pass = async (): Promise<{ cold: Measured; warm: Measured }> => {
      const cold: number[] = [];
      const warm: number[] = [];
      for (let k = 0; k < calls; k++) {
        cold.push(await predictOverHttp(service, service.ids[(1 + k * stride) % registered]!, [corpus[k % corpus.length]!]));
        warm.push(await predictOverHttp(service, service.ids[0]!, [corpus[(k + 1) % corpus.length]!]));
      }
      return { cold: summarize(cold), warm: summarize(warm) };
    };
    const first = await pass();
    const again = await pass();
    return { first: first.cold, again: again.cold, warm: summarize([...first.warm.latencies, ...again.warm.latencies]) };
  } finally {
    await service.close();
  }
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const count = intOption(args, 'models', 1000);
  const calls = intOption(args, 'calls', 400);
  const coldCache = intOption(args, 'cold-cache', 16);
  const registered = intOption(args, 'registered', 10_000);
  const viaArg = args.indexOf('--via');
  const via = viaArg < 0 ? 'both' : args[viaArg + 1];
  if (via !== 'library' && via !== 'http' && via !== 'both') throw new RangeError('--via must be library, http or both');
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-many-'));
  let cache: AdapterCacheEvent | undefined;
  subscribe(kChannels.adapterCache, (event) => void (cache = event as AdapterCacheEvent));
  const cores = availableParallelism();
  const pool = { workers: 1, engineThreads: cores, adapterCacheBytes: Math.ceil(count * kAdapterBytesRank8 * 1.05) };
  try {
    configurePool(pool);
    const dirs = await makeModels(root, count);
    const rows: Row[] = [];
    let memory;
    let libraryCold: Measured | undefined;
    if (via !== 'http') {
      // Model 0 alone first: loading a classifier reads its adapter into the worker's cache, so the others load after
      // the one-model RSS is taken.
      const models = [await Classifier.load(dirs[0]!)];
      const predict = libraryPredict(models);
      const one: Predict = (_, batch) => predict(0, batch);
      await measure(one, 1, 8, 4, 40); // the base encoder loaded, the engine warm
      const rssOne = rssMiB();
      const warm0 = performance.now();
      models.push(...(await Promise.all(dirs.slice(1).map((dir) => Classifier.load(dir)))));
      await measure(predict, count, 1, 16, count); // every model predicted once
      const rssAll = rssMiB();
      console.error(`loaded ${count} adapter models and predicted each once in ${((performance.now() - warm0) / 1000).toFixed(1)} s`);
      const held = cache!;
      memory = {
        adapters: count,
        cacheBytes: held.bytes,
        bytesPerAdapter: held.bytes / count,
        rssGrowthMiB: rssAll - rssOne,
        rssPerAdapterMiB: (rssAll - rssOne) / count,
      };
      rows.push(...(await compare('library', one, predict, count, calls)));
      for (const m of models) m.dispose();
      await closePool();

      // Cold: a cache of a few adapters, round robin over all of them: every call reads its adapter anew.
      configurePool({ ...pool, adapterCacheBytes: coldCache * kAdapterBytesRank8 });
      const again = await Promise.all(dirs.map((dir) => Classifier.load(dir)));
      const predictAgain = libraryPredict(again);
      await measure((_, batch) => predictAgain(0, batch), 1, 8, 4, 40);
      const coldCalls = Math.min(count - 1, 300);
      cursor = 0;
      libraryCold = await measure((m, batch) => predictAgain(1 + m, batch), coldCalls, 1, 1, coldCalls);
      for (const m of again) m.dispose();
      await closePool();
    }
    let httpCold: Measured | undefined;
    let httpFirst: Measured | undefined;
    let httpWarm: Measured | undefined;
    if (via !== 'library') {
      const service = await startHttpService(dirs, count, pool);
      try {
        const predict = httpPredict(service, service.ids);
        const one: Predict = (_, batch) => predict(0, batch);
        await measure(one, 1, 8, 4, 40);
        await measure(predict, count, 1, 16, count);
        rows.push(...(await compare('http', one, predict, count, calls)));
      } finally {
        await service.close();
      }
      ({
        first: httpFirst,
        again: httpCold,
        warm: httpWarm,
      } = await coldOverHttp(dirs, registered, coldCache, Math.min(300, registered - 1), cores));
    }

    const cold = (m: Measured | undefined) => m && { calls: m.latencies.length, cacheAdapters: coldCache, p50: m.p50, p99: m.p99 };
    const result = {
      models: count,
      trained: 1,
      derived: count - 1,
      rows,
      cold: cold(libraryCold),
      httpCold: cold(httpCold) && { ...cold(httpCold), registered },
      httpFirst: cold(httpFirst) && { ...cold(httpFirst), registered },
      httpWarm: cold(httpWarm) && { ...cold(httpWarm), registered },
      memory,
    };
    if (json) {
      console.log(JSON.stringify(result));
      return;
    }
    const f = (x: number) => x.toFixed(1);
    console.log(
      `${count} adapter models of svc-small (1 trained, ${count - 1} derived by random perturbation), 1 worker x ${cores} threads, fp32`,
    );
    console.log(
      'via | texts/call | conc. | one p50 / p99 ms | many p50 / p99 ms | p50 ratio | p99 ratio | one texts/s | many texts/s | throughput ratio',
    );
    for (const r of rows) {
      console.log(
        `${r.via} | ${r.texts} | ${r.concurrency} | ${f(r.oneP50)} / ${f(r.oneP99)} | ${f(r.manyP50)} / ${f(r.manyP99)} | ${(r.manyP50 / r.oneP50).toFixed(2)}x | ` +
          `${(r.manyP99 / r.oneP99).toFixed(2)}x | ${f(r.oneTextsPerSec)} | ${f(r.manyTextsPerSec)} | ${(r.manyTextsPerSec / r.oneTextsPerSec).toFixed(2)}x`,
      );
    }
    if (libraryCold) {
      console.log(
        `library: first predict after its adapter left the cache (${libraryCold.latencies.length} calls, 1 text, cache of ${coldCache}): p50 ${f(libraryCold.p50)} ms, p99 ${f(libraryCold.p99)} ms`,
      );
    }
    if (httpFirst) {
      console.log(
        `http, ${registered} models registered: first predict of a model in the service, its classifier loaded and its adapter read (${httpFirst.latencies.length} calls, 1 text, cache of ${coldCache}): p50 ${f(httpFirst.p50)} ms, p99 ${f(httpFirst.p99)} ms`,
      );
    }
    if (httpWarm) {
      console.log(
        `http, ${registered} models registered: warm one-text calls on model 0 between those (${httpWarm.latencies.length} calls): p50 ${f(httpWarm.p50)} ms, p99 ${f(httpWarm.p99)} ms`,
      );
    }
    if (httpCold) {
      console.log(
        `http, ${registered} models registered: first predict after its adapter left the cache (${httpCold.latencies.length} calls, 1 text, cache of ${coldCache}): p50 ${f(httpCold.p50)} ms, p99 ${f(httpCold.p99)} ms`,
      );
    }
    if (memory) {
      console.log(
        `memory: ${count} adapters held in ${(memory.cacheBytes / 2 ** 20).toFixed(1)} MiB (${(memory.bytesPerAdapter / 1e6).toFixed(3)} MB each, fp16); ` +
          `process RSS +${f(memory.rssGrowthMiB)} MiB (${memory.rssPerAdapterMiB.toFixed(3)} MiB per adapter)`,
      );
    }
  } finally {
    await closePool();
    rmSync(root, { recursive: true, force: true });
  }
}
