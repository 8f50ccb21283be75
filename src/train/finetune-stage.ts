// The fine-tuning stage from the main thread: it starts the pool task, relays its per-step
// progress, and turns an AbortSignal into the task's stop flag (checked between steps), so an
// aborted run ends within one step and leaves the worker and its loaded encoders alive.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';

import { SvcError } from '../errors.js';
import { kAdapterFile, writeAdapter } from '../model/adapter.js';
import type { LoraModule } from '../model/adapter.js';
import { resolveBaseModel } from '../model/base-models.js';
import { loadBertWeights } from '../model/onnx/index.js';
import { kDefaultAdapter } from '../native/trainer.js';
import type { AdapterOptions, AdapterTarget } from '../native/trainer.js';
import type { TruncationSide } from '../native/tokenizer.js';
import { poolOptions, runTask } from '../pool/pool.js';
import type { FinetuneResult, FinetuneStepMessage } from '../pool/tasks.js';
import type { ExampleTargets } from './pairs.js';

export interface FinetuneStageOptions {
  baseModel: string;
  /** The examples' texts, then any more to embed with the fine-tuned encoder. */
  texts: string[];
  /** Which tokens a text too long for the encoder loses (`'start'`: its first ones; default `'end'`). */
  truncate?: TruncationSide;
  targets: ExampleTargets;
  iterations: number;
  seed: number;
  /** Engine threads for the steps (TrainOptions.threads). */
  threads: number;
  /** Train a LoRA adapter of this rank on the frozen base instead of the whole encoder; null: full fine-tuning. */
  adapterRank: number | null;
  /** The end-to-end phase after the contrastive steps (TrainOptions.endToEnd); null or left out: none. */
  endToEnd?: { epochs: number } | null;
  onStep?: (step: FinetuneStepMessage) => void;
  signal?: AbortSignal;
  /** Whose job it is: the run waits for that organization's turn in the training share (train()'s `tenant`). */
  tenant?: string;
}

/**
 * A fine-tuned encoder in its own temporary directory (the caller owns and removes it): `encoderFile` is the whole
 * encoder's weights, or with an adapter its adapter_model.safetensors (adapter_config.json beside it).
 */
export interface FinetunedEncoder extends Omit<FinetuneResult, 'encoderFile' | 'adapter'> {
  encoderFile: string;
  dir: string;
  threads: number;
  /** The adapter trained (rank, alpha, layers); null for full fine-tuning. */
  adapter: AdapterOptions | null;
}

/** The PEFT module path of each of the trainer's adapter targets. */
const kTargetModules: Readonly<Record<AdapterTarget, LoraModule>> = Object.freeze({
  query: 'attention.self.query',
  key: 'attention.self.key',
  value: 'attention.self.value',
  'attention.output.dense': 'attention.output.dense',
  'intermediate.dense': 'intermediate.dense',
  'output.dense': 'output.dense',
});

/** The adapter a request's rank trains: the default layers and alpha / r (so the same scale at any rank). */
export function adapterOptions(rank: number): AdapterOptions {
  return { rank, alpha: (kDefaultAdapter.alpha / kDefaultAdapter.rank) * rank, targets: kDefaultAdapter.targets };
}

/**
 * Threads for a fine-tuning run in the service: its own worker's share of the cores, like any other
 * task. Taking every core would put more busy threads than cores beside the worker that answers
 * predictions; training gets at most `trainingWorkers()` workers, so the prediction worker's cores stay
 * its own. (The library's `train()`, which nothing else waits beside, takes the whole pool's threads.)
 */
export function finetuneThreads(): number {
  return poolOptions().engineThreads;
}

/** Fine-tuning runs write their encoder under `<tmpdir>/svc-classify-finetune-<pid>-XXXXXX` until it is saved. */
export const kFinetuneFolderPrefix = 'svc-classify-finetune-';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the fine-tuning folders of processes that are gone (killed mid-training). A folder whose pid is alive is
 * kept, even if the pid was reused: a leftover folder costs disk, a removed live one costs a training run.
 * Resolves to the folders removed.
 */
export async function sweepFinetuneFolders(root: string = tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const pid = new RegExp(`^${kFinetuneFolderPrefix}([1-9]\\d{0,9})-`).exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || alive(Number(pid))) continue;
    await rm(join(root, name), { recursive: true, force: true });
    removed.push(join(root, name));
  }
  return removed.sort();
}

export async function runFinetuneStage(options: FinetuneStageOptions): Promise<FinetunedEncoder> {
  if (options.signal?.aborted) throw new SvcError('aborted', 'training was aborted');
  // The pid in the name lets a later start-up remove the folder if this process dies with it (sweepFinetuneFolders).
  const dir = await mkdtemp(join(tmpdir(), `${kFinetuneFolderPrefix}${process.pid}-`));
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const onAbort = () => Atomics.store(stop, 0, 1);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (message: FinetuneStepMessage) => options.onStep?.(message));
  const { threads } = options;
  const adapter = options.adapterRank === null ? null : adapterOptions(options.adapterRank);
  try {
    // One task for the whole run (the steps share the trainer's state in the worker): it takes one turn.
    const result = await runTask<FinetuneResult | null>(
      {
        kind: 'finetune',
        baseModel: options.baseModel,
        texts: options.texts,
        truncate: options.truncate,
        targets: options.targets,
        iterations: options.iterations,
        seed: options.seed,
        threads,
        adapter,
        endToEnd: options.endToEnd ?? null,
        outDir: dir,
        progress: port2,
        stop,
      },
      undefined,
      [port2],
      // The stop flag ends a running task between steps; the signal only stops the wait for its turn.
      { tenant: options.tenant, waitSignal: options.signal },
    );
    if (result === null || options.signal?.aborted) throw new SvcError('aborted', 'training was aborted');
    if (adapter === null) return { ...result, encoderFile: result.encoderFile as string, dir, threads, adapter };
    const base = resolveBaseModel(options.baseModel);
    await writeAdapter(
      dir,
      result.adapter ?? [],
      { rank: adapter.rank, alpha: adapter.alpha, modules: adapter.targets.map((t) => kTargetModules[t]) },
      base,
      loadBertWeights(base).config,
    );
    // `embeddings` are the trainer's (base + adapter in fp32); the caller embeds again with the adapter as saved
    // (fp16, merged at load), which is what predictions compute.
    return { ...result, encoderFile: join(dir, kAdapterFile), dir, threads, adapter };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    port1.close();
  }
}
