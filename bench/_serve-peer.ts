// The server a Node user would otherwise write: Fastify plus a transformers.js text-classification
// pipeline on an exported model directory. Run as its own process by bench/serve.ts:
//   node --import tsx bench/_serve-peer.ts <model-dir> <fp32|q8>
// It prints `peer listening on <url>` once the model is loaded.
import { basename, dirname } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import Fastify from 'fastify';

const [modelDir, dtype] = process.argv.slice(2);
if (!modelDir || (dtype !== 'fp32' && dtype !== 'q8')) {
  console.error('usage: _serve-peer.ts <model-dir> <fp32|q8>');
  process.exit(2);
}
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = dirname(modelDir);
const classify = await pipeline('text-classification', basename(modelDir), { dtype });

const app = Fastify();
app.post<{ Body: { inputs: string[] } }>('/predict', async (request) => ({
  predictions: await classify(request.body.inputs, { top_k: 1 }),
}));
const url = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`peer listening on ${url}`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)));
