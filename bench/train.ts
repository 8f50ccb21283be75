// `npm run bench -- train [--corpus uci|email] [--threads 2] [--task imdb] [--examples 20] [--iterations 20] [--steps N] [--method full|adapter] [--rank 8] [--json]`
// `npm run bench -- train --library [--corpus uci|email] [--method full|adapter] [--json]`: train() end to end as a caller waits for it
// Contrastive fine-tuning speed as the library runs it, on UCI sentences (short) or SpamAssassin
// e-mails (long, cut at the base model's 256 tokens as train() cuts them): SetFit pairs
// (iterations x examples x 2), batches of 16 pairs, each distinct text encoded once per batch.
// Side by side in one process: the same batches with every pair's two texts as rows of their
// own (32 texts a batch, as sentence-transformers feeds them), on UCI sentences only.
// --method adapter trains a LoRA adapter (rank --rank, alpha 2 x rank, every linear layer, the
// adapter recipe's learning rate) on the frozen base instead of the whole encoder; run each method
// in its own process to compare peak memory (RSS is the process's high-water mark).
// With --job: the pool's fine-tune task itself, in this process (every step, then the encoder saved
// and reloaded to embed the examples, or the adapter's tensors and the trainer's embeddings), for
// a job's time and peak memory by method; one method per process.
// With --library: train() itself on the same examples (tokenizing, 50 steps, saving the encoder,
// embedding the examples, fitting the head), fine-tuning on the whole pool's threads (its default)
// and on one worker's (the service's share), in turn in one process.
import { resolveBaseModel } from '../src/model/base-models.js';
import { MessageChannel } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { finetune } from '../src/worker/finetune.js';
import { closePool, poolThreads } from '../src/pool/pool.js';
import type { AdapterOptions } from '../src/native/trainer.js';
import { train } from '../src/train/train.js';
import { Tokenizer } from '../src/native/tokenizer.js';
import { EncoderTrainer, kDefaultAdapter } from '../src/native/trainer.js';
import { kAdapterRecipe, kBatchPairs, kFinetuneRecipe, packPairBatch, samplePairs } from '../src/train/pairs.js';
import { labelledEmails, uciSentences } from '../fixtures/corpora.js';
import type { LabelledText, UciTask } from '../fixtures/corpora.js';
import { pairBatch } from '../fixtures/pair-batch.js';

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
}

interface Result {
  impl: string;
  threads: number;
  steps: number;
  textsPerStep: number;
  tokensPerStep: number;
  secondsPerStep: number;
  /** CPU seconds (all threads) per step: steadier than wall time on a shared machine. */
  cpuSecondsPerStep: number;
  projectedSeconds: number;
  finalLoss: number;
}

export async function run(args: string[]): Promise<void> {
  const threads = Number(option(args, 'threads', '2'));
  const task = option(args, 'task', 'imdb') as UciTask;
  const examples = Number(option(args, 'examples', '20'));
  const iterations = Number(option(args, 'iterations', '20'));
  const corpus = option(args, 'corpus', 'uci');
  if (corpus !== 'uci' && corpus !== 'email') throw new Error('--corpus takes uci or email');
  const json = args.includes('--json');
  const method = option(args, 'method', 'full');
  if (method !== 'full' && method !== 'adapter') throw new Error('--method takes full or adapter');
  const rank = Number(option(args, 'rank', String(kDefaultAdapter.rank)));
  const adapter = method === 'adapter' ? { ...kDefaultAdapter, rank, alpha: 2 * rank } : undefined;
  const recipe = adapter ? kAdapterRecipe : kFinetuneRecipe;
  const base = resolveBaseModel('svc-small');
  const half = examples / 2;
  let chosen: LabelledText[];
  if (corpus === 'email') {
    chosen = labelledEmails(half);
  } else {
    // 10 + 10 examples of the task, spread over the file, the same every run.
    const rows = uciSentences(task);
    const positives = rows.filter((r) => r.label);
    const negatives = rows.filter((r) => !r.label);
    chosen = [
      ...Array.from({ length: half }, (_, i) => positives[Math.floor((i * positives.length) / half)]!),
      ...Array.from({ length: half }, (_, i) => negatives[Math.floor((i * negatives.length) / half)]!),
    ];
  }
  if (args.includes('--library')) {
    await runLibrary(corpus, chosen, method === 'adapter' ? { method, rank } : { method: 'full' }, json);
    return;
  }
  if (args.includes('--job')) {
    runJob(corpus, chosen, method, adapter, threads, iterations, json);
    return;
  }
  const encoded = Tokenizer.fromPretrained('svc-small').encodeBatch(
    chosen.map((r) => r.text),
    { maxLength: base.maxLength },
  );
  let offset = 0;
  const tokens = Array.from(encoded.lengths, (n) => encoded.ids.slice(offset, (offset += n)));
  const pairs = samplePairs(
    chosen.map((r) => r.label),
    { iterations, seed: 42 },
  );
  const totalSteps = Math.ceil(pairs.a.length / kBatchPairs);
  const steps = Math.min(totalSteps, Number(option(args, 'steps', String(totalSteps))));

  const results: Result[] = [];
  // On e-mails only the library's way runs: the peer row would double a minutes-long run.
  // With --method, the library's way only: the peer row would raise the process's peak memory.
  const single = corpus === 'email' || args.includes('--method');
  const impls = single ? (['distinct texts'] as const) : (['distinct texts', 'two texts per pair'] as const);
  for (const impl of impls) {
    const loadStart = performance.now();
    const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, {
      totalSteps,
      threads,
      seed: 42,
      ...recipe,
      ...(adapter ? { adapter } : {}),
    });
    const loadSeconds = (performance.now() - loadStart) / 1000;
    let texts = 0;
    let tokenCount = 0;
    let loss = 0;
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    for (let s = 0; s < steps; s += 1) {
      const batch =
        impl === 'distinct texts'
          ? packPairBatch(tokens, pairs, s * kBatchPairs, kBatchPairs)
          : pairBatch(tokens, pairs, s * kBatchPairs, kBatchPairs);
      texts += batch.lengths.length;
      tokenCount += batch.ids.length;
      loss = trainer.step(batch).loss;
    }
    const secondsPerStep = (performance.now() - start) / 1000 / steps;
    const cpu = process.cpuUsage(cpuStart);
    trainer.dispose();
    results.push({
      impl,
      threads,
      steps,
      textsPerStep: texts / steps,
      tokensPerStep: tokenCount / steps,
      secondsPerStep,
      cpuSecondsPerStep: (cpu.user + cpu.system) / 1e6 / steps,
      projectedSeconds: loadSeconds + secondsPerStep * totalSteps,
      finalLoss: loss,
    });
  }
  const peakRssMB = process.resourceUsage().maxRSS / 1024;
  if (json) {
    console.log(
      JSON.stringify({
        corpus,
        task,
        examples,
        method,
        ...(adapter ? { rank } : {}),
        pairs: pairs.a.length,
        totalSteps,
        peakRssMB,
        results,
      }),
    );
    return;
  }
  const what = adapter ? `LoRA adapter rank ${rank} on every linear layer` : 'the whole encoder';
  console.log(
    `fine-tuning svc-small (${what}) on ${corpus === 'email' ? 'SpamAssassin e-mails' : `UCI ${task}`}: ${examples} examples, ${pairs.a.length} pairs, ${totalSteps} steps of ${kBatchPairs} pairs, ${threads} threads`,
  );
  for (const r of results) {
    console.log(
      `${r.impl.padEnd(20)} ${r.textsPerStep.toFixed(1).padStart(5)} texts/step ${r.tokensPerStep.toFixed(0).padStart(5)} tokens/step ` +
        `${(r.secondsPerStep * 1000).toFixed(0).padStart(6)} ms/step ${(r.cpuSecondsPerStep * 1000).toFixed(0).padStart(6)} cpu-ms/step  ${totalSteps} steps (with load): ${r.projectedSeconds.toFixed(1)} s  loss after ${r.steps}: ${r.finalLoss.toFixed(4)}`,
    );
  }
  if (results[1])
    console.log(`distinct texts speed over two texts per pair: ${(results[1].secondsPerStep / results[0]!.secondsPerStep).toFixed(2)}x`);
  console.log(`peak RSS ${peakRssMB.toFixed(0)} MB`);
}

/** train() as a library caller runs it, timed from the call to the classifier; CPU time covers every thread. */
async function runLibrary(
  corpus: string,
  chosen: LabelledText[],
  finetune: { method: 'full' } | { method: 'adapter'; rank: number },
  json: boolean,
): Promise<void> {
  // The method named (--method, full unless told), not train()'s default, so that the figures stay comparable.
  const request = {
    model: 'svc-small',
    task_type: 'binary-classification' as const,
    examples: chosen.map((r) => ({ text: r.text, label: r.label, label_text: 'positive' })),
    finetune,
  };
  const rows = [];
  for (const threads of [poolThreads(), 1]) {
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    const classifier = await train(request, { threads });
    const seconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpuStart);
    const finetune = classifier.manifest.training.finetune!;
    rows.push({ threads, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, steps: finetune.steps, finalLoss: finetune.final_loss });
    classifier.dispose();
  }
  await closePool();
  if (json) {
    console.log(JSON.stringify({ corpus, examples: chosen.length, library: rows }));
    return;
  }
  console.log(
    `train() on ${corpus === 'email' ? 'SpamAssassin e-mails' : 'UCI sentences'}: ${chosen.length} examples, from the call to the classifier`,
  );
  for (const r of rows) {
    console.log(
      `fine-tuning threads ${r.threads}: ${r.seconds.toFixed(1).padStart(6)} s  ${r.cpuSeconds.toFixed(1).padStart(6)} CPU s  ${r.steps} steps  loss ${r.finalLoss.toFixed(4)}`,
    );
  }
}

/** The fine-tune pool task run in this process: its seconds and the process's peak RSS. */
function runJob(
  corpus: string,
  chosen: LabelledText[],
  method: string,
  adapter: AdapterOptions | undefined,
  threads: number,
  iterations: number,
  json: boolean,
): void {
  const outDir = mkdtempSync(join(tmpdir(), 'svc-bench-job-'));
  const { port1, port2 } = new MessageChannel();
  const start = performance.now();
  try {
    const result = finetune({
      kind: 'finetune',
      baseModel: 'svc-small',
      texts: chosen.map((r) => r.text),
      targets: { kind: 'classes', classes: Int32Array.from(chosen, (r) => (r.label ? 1 : 0)), count: 2 },
      iterations,
      seed: 42,
      threads,
      ...(adapter ? { adapter } : {}),
      outDir,
      progress: port2,
      stop: new Int32Array(new SharedArrayBuffer(4)),
    })!;
    const seconds = (performance.now() - start) / 1000;
    const peakRssMB = process.resourceUsage().maxRSS / 1024;
    const row = {
      corpus,
      method,
      steps: result.steps,
      seconds,
      secondsPerStep: seconds / result.steps,
      peakRssMB,
      finalLoss: result.finalLoss,
    };
    if (json) console.log(JSON.stringify(row));
    else
      console.log(
        `fine-tune job (${method}) on ${corpus}: ${result.steps} steps in ${seconds.toFixed(1)} s (${((seconds / result.steps) * 1000).toFixed(0)} ms/step with saving and embedding), peak RSS ${peakRssMB.toFixed(0)} MB, loss ${result.finalLoss.toFixed(4)}`,
      );
  } finally {
    port1.close();
    rmSync(outDir, { recursive: true, force: true });
  }
}
