// `npm run bench -- encoder [--json] [--threads N] [--batches 1,8,32,128] [--corpus uci,email]
//   [--uci-texts N] [--email-texts N] [--rounds R] [--latency-runs N]`
// The native encoder against its peers, side by side in one process, same texts, same threads:
// ours fp32, int8, bf16 and auto (pre-tokenized ids, and fp32 from raw texts; bf16 shows as a second
// fp32 row on a CPU without bf16 products, auto as `auto→` the precision it measured faster, with the kernel
// choice's rates printed first), onnxruntime-node fp32 and
// int8 on our exported graphs fed as users feed it (batches in input order padded to their
// longest text) and length-sorted, and transformers.js feature-extraction (fp32 and q8) on the
// model directory our exporter writes. Prints sentences/s, tokens/s, achieved GFLOP/s (useful
// work only: real tokens, no padding) and ours divided by each peer; then single-text latency.
import { availableParallelism, cpus } from 'node:os';
import { performance } from 'node:perf_hooks';

import type * as ort from 'onnxruntime-node';

import { Encoder } from '../src/native/encoder.js';
import { cpuInfo } from '../src/native/index.js';
import { kernelChoice } from '../src/native/kernel-choice.js';
import { hfTokenize, ortEmbedPadded, ortEncoderSession, transformersJsEmbedder } from '../fixtures/onnx-peers.js';
import { intOption, type ThroughputResult } from './_common.js';
import { allUciTexts, emailBodies } from '../fixtures/corpora.js';

interface Peer {
  impl: string;
  precision: string;
  /** Runs this peer's `part`-th batch of the corpus. */
  part(index: number): Promise<void> | void;
}

// svc-small: 6 layers, hidden 384, FFN 1536.
const kLayers = 6;
const kHidden = 384;
const kFfn = 1536;

/** Floating-point operations of the encoder on one text of `n` tokens (2 per multiply-add). */
function flopsPerText(n: number): number {
  const linear = 2 * n * (4 * kHidden * kHidden + 2 * kHidden * kFfn);
  const attention = 2 * 2 * n * n * kHidden; // Q K^T and P V
  return kLayers * (linear + attention);
}

function listOption(args: string[], name: string, fallback: string[]): string[] {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? fallback : String(args[at + 1]).split(',');
}

/**
 * Seconds per pass over all `parts` batches for each peer, robust to a shared machine: peers
 * take turns pass by pass (a peer's batches run back to back, so one runtime's idle spinning
 * threads do not eat into the next peer's batch), each (peer, batch) keeps its best time over
 * `rounds` rounds, and a pass is the sum of those bests. A warm-up round is not counted.
 */
async function bestPassSeconds(peers: Peer[], parts: number, rounds: number): Promise<number[]> {
  const best = peers.map(() => new Array<number>(parts).fill(Infinity));
  for (let round = 0; round <= rounds; round++) {
    for (const [i, peer] of peers.entries()) {
      for (let b = 0; b < parts; b++) {
        const started = performance.now();
        await peer.part(b);
        if (round > 0) best[i]![b] = Math.min(best[i]![b]!, (performance.now() - started) / 1000);
      }
    }
  }
  return best.map((times) => times.reduce((sum, t) => sum + t, 0));
}

interface Corpus {
  name: string;
  texts: string[];
  rows: number[][];
}

function packed(rows: readonly number[][]): { ids: Int32Array; lengths: Int32Array } {
  return { ids: Int32Array.from(rows.flat()), lengths: Int32Array.from(rows, (r) => r.length) };
}

function slices(n: number, batch: number): [number, number][] {
  return Array.from({ length: Math.ceil(n / batch) }, (_, i) => [i * batch, Math.min(n, (i + 1) * batch)]);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const threads = intOption(args, 'threads', Math.min(2, availableParallelism()));
  const batchSizes = listOption(args, 'batches', ['1', '8', '32', '128']).map(Number);
  const corpusNames = listOption(args, 'corpus', ['uci', 'email']);
  const rounds = intOption(args, 'rounds', 3);
  const log = (line: string) => {
    if (!json) console.log(line);
  };

  const corpora: Corpus[] = [];
  for (const name of corpusNames) {
    const texts =
      name === 'uci' ? allUciTexts().slice(0, intOption(args, 'uci-texts', 256)) : emailBodies(intOption(args, 'email-texts', 48), 4000);
    corpora.push({ name, texts, rows: await hfTokenize(texts) });
  }

  const ours = Encoder.fromPretrained('svc-small', { precision: 'fp32', threads });
  const oursInt8 = Encoder.fromPretrained('svc-small', { precision: 'int8', threads });
  const oursBf16 = Encoder.fromPretrained('svc-small', { precision: 'bf16', threads });
  const oursAuto = Encoder.fromPretrained('svc-small', { precision: 'auto', threads });
  const choice = kernelChoice(threads);
  const ortFp32 = await ortEncoderSession('fp32', threads);
  const ortInt8 = await ortEncoderSession('int8', threads);
  const jsFp32 = await transformersJsEmbedder('fp32', threads);
  const jsQ8 = await transformersJsEmbedder('q8', threads);

  log(
    `svc-small encoder, ${threads} threads, kernels ${cpuInfo().level}, ${cpus()[0]?.model ?? 'unknown CPU'} (${availableParallelism()} cores)`,
  );
  const rates = choice.rates.map((r) => `${r.kernel} ${r.gflops.toFixed(1)} GFLOP/s`).join(', ');
  log(`precision 'auto' runs ${oursAuto.precision} (kernel ${choice.kernel}, ${choice.source}${rates ? `: ${rates}` : ''})`);
  // SVC_ISA caps only our kernels; onnxruntime and transformers.js pick theirs from the CPU.
  if (process.env.SVC_ISA) log(`SVC_ISA=${process.env.SVC_ISA} caps svc-classify's kernels only; the peers use the CPU's best`);
  const results: ThroughputResult[] = [];
  for (const corpus of corpora) {
    const tokens = corpus.rows.reduce((sum, r) => sum + r.length, 0);
    const flops = corpus.rows.reduce((sum, r) => sum + flopsPerText(r.length), 0);
    for (const batch of batchSizes) {
      const parts = slices(corpus.rows.length, batch);
      const packedBatches = parts.map(([s, e]) => packed(corpus.rows.slice(s, e)));
      // Length-sorted batches for onnxruntime: the least padding it can get.
      const order = corpus.rows.map((_, i) => i).sort((a, b) => corpus.rows[a]!.length - corpus.rows[b]!.length);
      const sortedParts = parts.map(([s, e]) => order.slice(s, e).map((i) => corpus.rows[i]!));
      const ids = (encoder: Encoder) => (b: number) => {
        encoder.embedIdsSync(packedBatches[b]!.ids, packedBatches[b]!.lengths);
      };
      const padded = (session: ort.InferenceSession) => async (b: number) => {
        const [s, e] = parts[b]!;
        await ortEmbedPadded(session, corpus.rows.slice(s, e));
      };
      const sorted = (session: ort.InferenceSession) => async (b: number) => {
        await ortEmbedPadded(session, sortedParts[b]!);
      };
      const pipeline = (embedder: typeof jsFp32) => async (b: number) => {
        const [s, e] = parts[b]!;
        await embedder.embed(corpus.texts.slice(s, e));
      };
      const peers: Peer[] = [
        { impl: 'svc-classify', precision: 'fp32', part: ids(ours) },
        { impl: 'svc-classify', precision: 'int8', part: ids(oursInt8) },
        { impl: 'svc-classify', precision: oursBf16.precision, part: ids(oursBf16) },
        { impl: 'svc-classify', precision: `auto→${oursAuto.precision}`, part: ids(oursAuto) },
        {
          impl: 'svc-classify texts',
          precision: 'fp32',
          part: (b) => {
            const [s, e] = parts[b]!;
            ours.embedSync(corpus.texts.slice(s, e));
          },
        },
        { impl: 'onnxruntime-node', precision: 'fp32', part: padded(ortFp32) },
        { impl: 'onnxruntime-node', precision: 'int8', part: padded(ortInt8) },
        { impl: 'onnxruntime-node sorted', precision: 'fp32', part: sorted(ortFp32) },
        { impl: 'onnxruntime-node sorted', precision: 'int8', part: sorted(ortInt8) },
        { impl: 'transformers.js', precision: 'fp32', part: pipeline(jsFp32) },
        { impl: 'transformers.js', precision: 'int8', part: pipeline(jsQ8) },
      ];
      const seconds = await bestPassSeconds(peers, parts.length, rounds);
      const cell = peers.map((peer, i) => ({
        impl: peer.impl,
        precision: peer.precision,
        corpus: corpus.name,
        batch,
        threads,
        sentencesPerSec: corpus.rows.length / seconds[i]!,
        tokensPerSec: tokens / seconds[i]!,
      }));
      results.push(...cell);
      log(`\n${corpus.name}: ${corpus.rows.length} texts, ${tokens} tokens, batch ${batch}`);
      log('impl                     precision  sentences/s   tokens/s  GFLOP/s  ours fp32 ÷  ours int8 ÷');
      for (const [i, r] of cell.entries()) {
        log(
          `${r.impl.padEnd(24)} ${r.precision.padEnd(9)} ${r.sentencesPerSec.toFixed(1).padStart(12)} ${r.tokensPerSec
            .toFixed(0)
            .padStart(10)} ${(flops / seconds[i]! / 1e9).toFixed(1).padStart(8)} ${(cell[0]!.sentencesPerSec / r.sentencesPerSec)
            .toFixed(2)
            .padStart(11)}x ${(cell[1]!.sentencesPerSec / r.sentencesPerSec).toFixed(2).padStart(11)}x`,
        );
      }
    }
  }

  // Single short text, one call at a time.
  const latencyRuns = intOption(args, 'latency-runs', 200);
  const text = 'This is an example sentence';
  const [row] = await hfTokenize([text]);
  const one = packed([row!]);
  const single: Peer[] = [
    { impl: 'svc-classify', precision: 'fp32', part: () => void ours.embedIdsSync(one.ids, one.lengths) },
    { impl: 'svc-classify', precision: 'int8', part: () => void oursInt8.embedIdsSync(one.ids, one.lengths) },
    { impl: 'svc-classify', precision: oursBf16.precision, part: () => void oursBf16.embedIdsSync(one.ids, one.lengths) },
    { impl: 'svc-classify', precision: `auto→${oursAuto.precision}`, part: () => void oursAuto.embedIdsSync(one.ids, one.lengths) },
    { impl: 'onnxruntime-node', precision: 'fp32', part: async () => void (await ortEmbedPadded(ortFp32, [row!])) },
    { impl: 'onnxruntime-node', precision: 'int8', part: async () => void (await ortEmbedPadded(ortInt8, [row!])) },
    { impl: 'transformers.js', precision: 'fp32', part: async () => void (await jsFp32.embed([text])) },
  ];
  // Each implementation in a block of calls (after 20 warm-up calls), blocks alternating over
  // two rounds: back-to-back calls of one implementation, as a service would make them.
  const times = single.map(() => [] as number[]);
  for (let round = 0; round < 2; round++) {
    for (const [p, peer] of single.entries()) {
      for (let i = 0; i < 20 + latencyRuns / 2; i++) {
        const started = performance.now();
        await peer.part(0);
        if (i >= 20) times[p]!.push(performance.now() - started);
      }
    }
  }
  log(`\nsingle-text latency ("${text}", ${row!.length} tokens), ${latencyRuns} runs each`);
  log('impl                     precision     p50 ms     p99 ms  ours fp32 p50 ÷');
  const p50 = times.map((t) =>
    percentile(
      t.sort((a, b) => a - b),
      0.5,
    ),
  );
  for (const [p, peer] of single.entries()) {
    log(
      `${peer.impl.padEnd(24)} ${peer.precision.padEnd(9)} ${p50[p]!.toFixed(3).padStart(10)} ${percentile(times[p]!, 0.99)
        .toFixed(3)
        .padStart(10)} ${(p50[0]! / p50[p]!).toFixed(2).padStart(15)}x`,
    );
  }

  ours.dispose();
  oursInt8.dispose();
  oursBf16.dispose();
  oursAuto.dispose();
  await Promise.all([ortFp32.release(), ortInt8.release(), jsFp32.dispose(), jsQ8.dispose()]);
  if (json) console.log(JSON.stringify({ results, kernelChoice: choice }, null, 2));
}
