// Worker-thread entry for trainer.test.ts: trains two steps in the worker and posts the losses back.
import { parentPort, workerData } from 'node:worker_threads';

import { resolveBaseModel } from '../../src/model/base-models.js';
import { EncoderTrainer } from '../../src/native/trainer.js';
import type { PairBatch } from '../../src/native/trainer.js';

const { batch } = workerData as { batch: PairBatch };
const base = resolveBaseModel('svc-small');
const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 10, threads: 2, seed: 7, lr: 1e-4 });
const losses = [trainer.step(batch).loss, trainer.step(batch).loss];
trainer.dispose();
parentPort!.postMessage(losses);
