// Retrain a classifier and promote the new version, in one process with the service's own calls (no HTTP): version 1
// from 20 of train.jsonl's messages, version 2 from those and 4 more, each with held-out texts as its validation set; the
// evaluation report compares version 2 with the live version 1 on version 1's held-out texts, and version 2 is
// promoted only if it scores at least as well. DATA_DIR (default: a fresh temporary directory) is this example's own.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LibraryRuntime, SqliteStore, SvcService } from 'svc-classify/server';

const dataDir = process.env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'svc-versions-'));
const service = new SvcService({ store: SqliteStore.open(dataDir), runtime: new LibraryRuntime({ hub: `${dataDir}/hub` }) });
await service.start();
if ((await service.store.getOrganization('acme')) === null) await service.createOrganization('acme');
const principal = await service.authenticate((await service.createApiKey('acme')).key);

const rows = readFileSync(new URL('./train.jsonl', import.meta.url), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
// Every sixth row is held out for validation; the other 20 train version 1.
const held = rows.filter((_, i) => i % 6 === 5);
const kept = rows.filter((_, i) => i % 6 !== 5);
// Later, four more messages were labelled: version 2 trains on all 24.
const labelled = [
  ['My card was billed for an order I cancelled.', true],
  ['Can I get a copy of last month\'s invoice?', true],
  ['The parcel arrived with a broken lid.', false],
  ['Which size should I order for a 10-year-old?', false],
].map(([text, label]) => ({ text, label, label_text: 'billing question' }));
const body = (examples) => ({ model: 'svc-small', task_type: 'binary-classification', finetune: false, examples, validation: held });

const model = await service.train(principal, body(kept));
await service.idle();
const version = await service.versions.add(principal, model.id, body([...kept, ...labelled]));
await service.idle();
const report = await service.evaluations.report(principal, model.id, version.version);
const { this: candidate, live } = report.compared_with_live;
console.log(`version ${version.version}: F1 ${candidate.macro_f1.toFixed(2)} vs live version ${report.compared_with_live.version}: ${live.macro_f1.toFixed(2)}`);
if (candidate.macro_f1 >= live.macro_f1) await service.versions.promote(principal, model.id, { version: version.version });
const { live_version } = await service.versions.list(principal, model.id);
const answer = await service.predict(principal, { model: model.id, inputs: ['Why was I charged twice this month?'] });
console.log(`live: version ${live_version}; "${answer.predictions[0].label}" for a billing question`);
await service.close();
