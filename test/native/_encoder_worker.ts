// Worker-thread entry for encoder.test.ts: loads an Encoder in the worker and posts one embedding back.
import { parentPort, workerData } from 'node:worker_threads';

import { Encoder } from '../../src/native/encoder.js';

const { ids } = workerData as { ids: Int32Array };
const encoder = Encoder.fromPretrained('svc-small', { threads: 1 });
const out = encoder.embedIdsSync(ids, Int32Array.of(ids.length));
encoder.dispose();
parentPort!.postMessage(out, [out.buffer]);
