// Worker-thread entry for encoder.test.ts: loads an Encoder in the worker and posts one embedding
// back, with the number of weight sets loaded in the process at that moment.
import { parentPort, workerData } from 'node:worker_threads';

import { Encoder, loadedWeightSets } from '../../src/native/encoder.js';

const { ids } = workerData as { ids: Int32Array };
const encoder = Encoder.fromPretrained('svc-small', { threads: 1 });
const out = encoder.embedIdsSync(ids, Int32Array.of(ids.length));
// Weight sets in the whole process while this worker holds its encoder.
const weightSets = loadedWeightSets();
encoder.dispose();
parentPort!.postMessage({ out, weightSets }, [out.buffer as ArrayBuffer]);
