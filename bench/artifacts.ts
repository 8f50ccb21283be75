// `npm run bench -- artifacts [--mb N] [--adapters]`: what storing and fetching model files costs, a folder and PostgreSQL side by
// side in one process.
// 1. The chunker alone: how fast PostgreSQL's content-defined cuts (and the SHA-256 of each chunk) go over an N MiB
//    file (default 96, about a model's ONNX graph): the CPU a put spends before it sends anything.
// 2. One N MiB file of random bytes: put, read back, and put the same bytes under a second model (PostgreSQL then
//    only cuts and hashes them: the file is stored once).
// 3. Two models of one base (svc-small's real ONNX export, two different heads): the bytes PostgreSQL stores for one
//    and for both, beside what whole-file sharing alone would store (each different file once: the layout before
//    content-defined chunks), and the put and read times of each.
// 4. Adapter models (`--adapters` runs only this part): rank-8 LoRA adapters on all six linear layers of svc-small
//    (random values), each with its head and manifest: the directory's size and what each model adds to PostgreSQL,
//    then what the hub's merged transformers.js export of one adds when it is first downloaded.
// The process's peak RSS shows that no backend holds a file whole. PostgreSQL is a throwaway local cluster, over
// loopback: a remote database adds its network.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import pg from 'pg';

import { startPostgres } from '../fixtures/postgres-cluster.js';
import { cdcChunks, cdcSizes } from '../src/artifacts/cdc.js';
import { fileChunks } from '../src/artifacts/chunks.js';
import { PostgresFiles } from '../src/artifacts/postgres-files.js';
import { DirectoryHub, type Hub } from '../src/model/hub.js';
import { kAdapterConfigFile, kAdapterFile, kLoraModules, loraTensorName, writeAdapter } from '../src/model/adapter.js';
import { resolveBaseModel } from '../src/model/base-models.js';
import { writeManifestAndHead } from '../src/model/directory.js';
import { modelFileNames } from '../src/model/hub.js';
import { kHeadFile, kManifestFormatVersion } from '../src/contract/manifest.js';
import { writeMergedTransformersDir } from '../src/model/merged-export.js';
import { loadBertWeights, writeTransformersJsModelDir } from '../src/model/onnx/index.js';
import { intOption } from './_common.js';

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

/**
 * What a backend's puts and reads cost: the folder hub's publish of a copy, and PostgreSQL's storage itself (a
 * PostgresHub's publish also keeps the model in the replica's cache, which is not what this compares).
 */
interface Backend {
  put(id: string, dir: string): Promise<void>;
  open: Hub['open'];
  close(): Promise<void>;
}

function folderBackend(root: string): Backend {
  const hub = new DirectoryHub(root);
  return {
    put: (id, dir) => hub.publish(id, (staging) => cp(dir, staging, { recursive: true })),
    open: (id, name) => hub.open(id, name),
    close: () => hub.close(),
  };
}

async function drain(store: Backend, id: string): Promise<void> {
  const { stream } = await store.open(id, 'onnx/model.onnx');
  for await (const piece of stream) void piece;
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const rate = (bytes: number, ms: number): string => `${(((bytes / 2 ** 20) * 1000) / ms).toFixed(0)} MiB/s`;

async function storedBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string | null }>('SELECT SUM(length(data)) AS bytes FROM artifact_chunks');
    return Number(rows[0].bytes ?? 0);
  } finally {
    await client.end();
  }
}

/** Bytes of each different file once (by SHA-256) over the given files. */
async function wholeFileBytes(files: string[]): Promise<number> {
  const sizes = new Map<string, number>();
  for (const file of files) {
    const hash = createHash('sha256');
    for await (const piece of fileChunks(file, 2 ** 20)) hash.update(piece);
    sizes.set(hash.digest('hex'), statSync(file).size);
  }
  return [...sizes.values()].reduce((a, b) => a + b, 0);
}

async function chunker(file: string, bytes: number): Promise<void> {
  const sizes = cdcSizes();
  let chunks = 0;
  await timed(async () => {
    for await (const chunk of cdcChunks(file, sizes)) void chunk; // warm-up: the JIT and the page cache
  });
  const cut = await timed(async () => {
    for await (const chunk of cdcChunks(file, sizes)) chunks += chunk.length > 0 ? 1 : 0;
  });
  const hashed = await timed(async () => {
    for await (const chunk of cdcChunks(file, sizes)) createHash('sha256').update(chunk).digest();
  });
  console.log(
    `chunker   ${mib(bytes)} in ${chunks} chunks: cut ${cut.toFixed(0)} ms (${rate(bytes, cut)}), ` +
      `cut + SHA-256 ${hashed.toFixed(0)} ms (${rate(bytes, hashed)})`,
  );
}

async function oneBase(dir: string, url: string): Promise<void> {
  const heads = [1, 2].map((seed) => ({
    weights: Float32Array.from({ length: 384 }, (_, i) => Math.sin(seed * 1000 + i)),
    bias: seed / 10,
  }));
  const models = heads.map((head, k) => ({ id: `bench/svc-small-00000000000${k + 3}`, dir: join(dir, `base-${k}`), head }));
  for (const model of models) {
    await writeTransformersJsModelDir(model.dir, {
      baseModel: 'svc-small',
      task: 'text-classification',
      labelText: 'positive',
      head: model.head,
    });
  }
  const files = await Promise.all(models.map(async (m) => (await modelFileNames(m.dir)).map((name) => join(m.dir, ...name.split('/')))));
  const onnx = statSync(join(models[0].dir, 'onnx', 'model.onnx')).size;
  const store = await PostgresFiles.open(url);
  try {
    const stored: number[] = [];
    for (const model of models) {
      const put = await timed(() => store.put(model.id, model.dir));
      const read = await timed(() => drain(store, model.id));
      stored.push(await storedBytes(url));
      console.log(
        `postgres  model ${stored.length} of svc-small (ONNX ${mib(onnx)}): put ${put.toFixed(0)} ms, ` +
          `read the ONNX ${read.toFixed(0)} ms (${rate(onnx, read)})`,
      );
    }
    console.log(
      `postgres  stored for 1 model ${mib(stored[0])}, for 2 models ${mib(stored[1])} (x${(stored[1] / stored[0]).toFixed(3)}); ` +
        `each different file once would store ${mib(await wholeFileBytes(files[0]))} and ${mib(await wholeFileBytes(files.flat()))}`,
    );
  } finally {
    await store.close();
  }
}

/** An adapter model directory: a rank-8 adapter on every linear layer (values from `seed`), a head, a manifest. */
async function adapterModel(dir: string, seed: number): Promise<void> {
  const base = resolveBaseModel('svc-small');
  const { config } = loadBertWeights(base);
  const value = (i: number) => Math.sin(seed * 7919 + i) * 0.05;
  const tensors = [];
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const module of kLoraModules) {
      const inF = module === 'output.dense' ? config.intermediateSize : config.hiddenSize;
      const outF = module === 'intermediate.dense' ? config.intermediateSize : config.hiddenSize;
      tensors.push({
        name: loraTensorName(layer, module, 'A'),
        shape: [8, inF] as [number, number],
        data: Float32Array.from({ length: 8 * inF }, (_, i) => value(i + layer)),
      });
      tensors.push({
        name: loraTensorName(layer, module, 'B'),
        shape: [outF, 8] as [number, number],
        data: Float32Array.from({ length: 8 * outF }, (_, i) => value(i - layer)),
      });
    }
  }
  await writeAdapter(dir, tensors, { rank: 8, alpha: 16, modules: kLoraModules }, base, config);
  await writeManifestAndHead(
    dir,
    {
      format_version: kManifestFormatVersion,
      id: `svc-small-bench${seed}`,
      created_at: 0,
      task_type: 'binary-classification',
      base_model: 'svc-small',
      label_text: 'positive',
      body: 'adapter',
      adapter_file: kAdapterFile,
      adapter_config_file: kAdapterConfigFile,
      head_file: kHeadFile,
      training: { method: 'setfit', C: 1, solver: 'newton-cholesky', iterations: 7, max_length: 256, examples: 20 },
      metrics: { train_accuracy: 1, train_seconds: 1 },
      library_version: 'bench',
    },
    { weights: Float64Array.from({ length: 384 }, (_, i) => Math.cos(seed + i)), bias: seed / 10 },
  );
}

async function adapters(dir: string, url: string): Promise<void> {
  const models = [1, 2, 3].map((seed) => ({ id: `bench/svc-small-adapter${seed}`, dir: join(dir, `adapter-${seed}`), seed }));
  for (const model of models) await adapterModel(model.dir, model.seed);
  const sizes = await Promise.all(
    models.map(async (m) => (await modelFileNames(m.dir)).reduce((sum, name) => sum + statSync(join(m.dir, name)).size, 0)),
  );
  const adapterBytes = statSync(join(models[0].dir, kAdapterFile)).size;
  console.log(
    `adapter   model directory ${(sizes[0] / 1e6).toFixed(3)} MB (${sizes[0]} bytes; adapter_model.safetensors ${adapterBytes} bytes, fp16)`,
  );
  const store = await PostgresFiles.open(url);
  try {
    let before = await storedBytes(url);
    for (const model of models) {
      const put = await timed(() => store.put(model.id, model.dir));
      const now = await storedBytes(url);
      console.log(
        `postgres  adapter model ${model.seed}: adds ${((now - before) / 1e6).toFixed(3)} MB (${now - before} bytes), put ${put.toFixed(0)} ms`,
      );
      before = now;
    }
    const merged = join(dir, 'merged');
    const build = await timed(() => writeMergedTransformersDir(models[0].dir, merged));
    const put = await timed(() => store.put('_merged/bench', merged));
    const now = await storedBytes(url);
    console.log(
      `postgres  its merged transformers.js export (built once, on the first download): built in ${build.toFixed(0)} ms, ` +
        `adds ${mib(now - before)}, put ${put.toFixed(0)} ms`,
    );
  } finally {
    await store.close();
  }
}

export async function run(args: string[]): Promise<void> {
  if (args.includes('--adapters')) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-adapters-'));
    const cluster = await startPostgres();
    try {
      await adapters(dir, await cluster.createDatabase());
    } finally {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const mb = intOption(args, 'mb', 96);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-artifacts-'));
  const model = join(dir, 'model');
  mkdirSync(join(model, 'onnx'), { recursive: true });
  // Written a MiB at a time: the bench itself never holds the file either.
  for (let i = 0; i < mb; i += 1) writeFileSync(join(model, 'onnx', 'model.onnx'), randomBytes(1024 * 1024), { flag: 'a' });
  const cluster = await startPostgres();
  try {
    await chunker(join(model, 'onnx', 'model.onnx'), mb * 2 ** 20);
    const backends: [string, Backend][] = [
      ['folder', folderBackend(join(dir, 'hub'))],
      ['postgres', await PostgresFiles.open(await cluster.createDatabase())],
    ];
    const rssBefore = process.memoryUsage().rss;
    for (const [name, store] of backends) {
      const put = await timed(() => store.put('bench/svc-small-000000000001', model));
      const read = await timed(() => drain(store, 'bench/svc-small-000000000001'));
      const again = await timed(() => store.put('bench/svc-small-000000000002', model));
      console.log(
        `${name.padEnd(9)} put ${mb} MiB ${put.toFixed(0)} ms (${rate(mb * 2 ** 20, put)}), read ${read.toFixed(0)} ms ` +
          `(${rate(mb * 2 ** 20, read)}), same bytes under a second model ${again.toFixed(0)} ms`,
      );
      await store.close();
    }
    console.log(
      `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB (before the puts: ${(rssBefore / 2 ** 20).toFixed(0)} MiB)`,
    );
    await oneBase(dir, await cluster.createDatabase());
    await adapters(dir, await cluster.createDatabase());
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
