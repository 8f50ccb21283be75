// The library alone: train a classifier on the 24 sample examples, then classify two new texts.
import { readFileSync } from 'node:fs';
import { closePool, train } from 'svc-classify';

// One { "text", "label", "label_text" } per line; label_text ("billing question") names what label: true means.
const examples = readFileSync(new URL('train.jsonl', import.meta.url), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
const classifier = await train({ model: 'svc-small', task_type: 'binary-classification', examples, finetune: false });
const texts = ['Why was I charged twice this month?', 'The app will not let me log in.'];
for (const [i, { label, probability }] of (await classifier.predict(texts)).entries()) console.log(label, probability.toFixed(3), texts[i]);
await closePool(); // the pool's worker threads would otherwise keep the process alive
