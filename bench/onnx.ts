// `npm run bench -- onnx [--json] [--threads N] [--batch B] [--texts N] [--rounds R]`: our exported graphs in
// onnxruntime-node (fp32 and dynamic int8; batches in input order padded to their longest text,
// and length-sorted batches) and in transformers.js (fp32 and q8 from the model directory we
// write), side by side in one process on the UCI sentences. Prints sentences/s and each peer's
// speed relative to onnxruntime fp32 in input order.
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';

import type * as ort from 'onnxruntime-node';

import { hfTokenize, ortEmbedPadded, ortEmbedSorted, ortEncoderSession, transformersJsEmbedder } from '../fixtures/onnx-peers.js';
import { intOption, type ThroughputResult } from './_common.js';
import { allUciTexts } from '../fixtures/corpora.js';

interface Peer {
  impl: string;
  precision: string;
  pass(): Promise<void>;
}

/**
 * Best time per pass for each peer: one warm-up pass each, then `rounds` rounds that run every
 * peer once in turn, so drifting load on a shared machine hits all peers alike.
 */
async function bestSeconds(peers: Peer[], rounds: number): Promise<number[]> {
  for (const peer of peers) await peer.pass();
  const best = peers.map(() => Infinity);
  for (let round = 0; round < rounds; round++) {
    for (const [i, peer] of peers.entries()) {
      const started = performance.now();
      await peer.pass();
      best[i] = Math.min(best[i], (performance.now() - started) / 1000);
    }
  }
  return best;
}

export async function run(args: string[]): Promise<void> {
  const threads = intOption(args, 'threads', Math.min(2, availableParallelism()));
  const batch = intOption(args, 'batch', 32);
  const count = intOption(args, 'texts', 512);
  const texts = allUciTexts().slice(0, count);
  const rows = await hfTokenize(texts);
  const tokens = rows.reduce((sum, row) => sum + row.length, 0);
  const batches = (n: number) => Array.from({ length: Math.ceil(n / batch) }, (_, i) => [i * batch, Math.min(n, (i + 1) * batch)]);

  const fp32 = await ortEncoderSession('fp32', threads);
  const int8 = await ortEncoderSession('int8', threads);
  const jsFp32 = await transformersJsEmbedder('fp32', threads);
  const jsQ8 = await transformersJsEmbedder('q8', threads);
  const inInputOrder = (session: ort.InferenceSession) => async () => {
    for (const [start, end] of batches(rows.length)) await ortEmbedPadded(session, rows.slice(start, end));
  };
  const sorted = (session: ort.InferenceSession) => async () => {
    await ortEmbedSorted(session, rows, batch);
  };
  const viaPipeline = (embedder: typeof jsFp32) => async () => {
    for (const [start, end] of batches(texts.length)) await embedder.embed(texts.slice(start, end));
  };
  const peers: Peer[] = [
    { impl: 'onnxruntime-node', precision: 'fp32', pass: inInputOrder(fp32) },
    { impl: 'onnxruntime-node sorted', precision: 'fp32', pass: sorted(fp32) },
    { impl: 'onnxruntime-node', precision: 'int8', pass: inInputOrder(int8) },
    { impl: 'onnxruntime-node sorted', precision: 'int8', pass: sorted(int8) },
    { impl: 'transformers.js', precision: 'fp32', pass: viaPipeline(jsFp32) },
    { impl: 'transformers.js', precision: 'int8', pass: viaPipeline(jsQ8) },
  ];
  const seconds = await bestSeconds(peers, intOption(args, 'rounds', 3));
  const results: ThroughputResult[] = peers.map((peer, i) => ({
    impl: peer.impl,
    precision: peer.precision,
    corpus: 'uci',
    batch,
    threads,
    sentencesPerSec: texts.length / seconds[i],
    tokensPerSec: tokens / seconds[i],
  }));
  await Promise.all([fp32.release(), int8.release(), jsFp32.dispose(), jsQ8.dispose()]);

  if (args.includes('--json')) {
    console.log(JSON.stringify({ results }, null, 2));
    return;
  }
  const baseline = results[0].sentencesPerSec;
  console.log(`${texts.length} UCI sentences (${tokens} tokens), batch ${batch}, ${threads} threads`);
  console.log('impl                       precision  sentences/s  tokens/s  vs onnxruntime fp32');
  for (const r of results) {
    console.log(
      `${r.impl.padEnd(26)} ${r.precision.padEnd(10)} ${r.sentencesPerSec.toFixed(1).padStart(11)} ${r.tokensPerSec.toFixed(0).padStart(9)}  ${(r.sentencesPerSec / baseline).toFixed(2)}x`,
    );
  }
}
