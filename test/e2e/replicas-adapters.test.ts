// Two `svc serve` replicas on one PostgreSQL database, model files in the database: adapter models are stored and
// shipped as adapters. Train through one replica, predict through the other, which fetches the model's small files
// (the adapter, not the 87 MB encoder) into its cache. That replica's cache holds one model's files at a time and
// each of its workers one adapter, so predicting two models in turn evicts each one's folder while its classifier is
// loaded, and its worker, having evicted the adapter too, finds the file gone: no predict may fail for it.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { kAdapterFolderFiles } from '../_support/adapter-files.js';
import { exited, serve, svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';
import { usePostgres } from '../_support/postgres.js';

const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-replicas-adapters-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const kTexts = ['A wonderful, moving film.', 'Dull and far too long.'];

/** Every file under `root` with its size, by path relative to it. */
function filesUnder(root: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile())
      out.set(join(entry.parentPath, entry.name).slice(root.length + 1), statSync(join(entry.parentPath, entry.name)).size);
  }
  return out;
}

describe('two replicas serve adapter models from one database', () => {
  it(
    'trains on one, predicts on the other from the adapter alone, and survives its cache evicting models mid-stream',
    async () => {
      const database = await pgServer.cluster.createDatabase();
      expect((await svc(['orgs', 'create', 'acme', '--database', database])).code).toBe(0);
      const key = (await svc(['keys', 'create', '--org', 'acme', '--database', database])).stdout.trim();
      const flags = (data: string) => ['--database', database, '--data', join(dir, data), '--engine-threads', '1'];
      const [one, two] = await Promise.all([
        serve([...flags('one'), '--workers', '1']),
        // Room for one adapter model's files (under 1 MB) on disk, and for one adapter in each of its two workers.
        serve([...flags('two'), '--workers', '2', '--model-cache-mb', '1', '--adapter-cache-mb', '1']),
      ]);
      try {
        const ids: string[] = [];
        for (const start of [0, 10]) {
          const body = {
            model: 'svc-small',
            task_type: 'binary-classification',
            examples: imdbExamples(start, 10),
            finetune: { method: 'adapter' },
            num_iterations: 1,
          };
          const trained = await httpCall(one.url, 'POST', '/v2/train', key, body);
          expect(trained.status).toBe(200);
          ids.push((JSON.parse(trained.text) as { id: string }).id);
        }
        for (const id of ids) {
          let status = 'training';
          for (let i = 0; i < 1800 * kLevelSlowdown && status === 'training'; i += 1) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            status = (JSON.parse((await httpCall(two.url, 'GET', `/v2/models/${id}`, key)).text) as { status: string }).status;
          }
          expect(status).toBe('trained');
        }

        // The same answer from both replicas; replica two read the model from the database.
        const body = { model: ids[0], inputs: kTexts };
        const fromTwo = await httpCall(two.url, 'POST', '/v2/predict', key, body);
        const fromOne = await httpCall(one.url, 'POST', '/v2/predict', key, body);
        expect(fromTwo.status).toBe(200);
        expect(fromTwo.text).toBe(fromOne.text);
        // What replica two fetched: the adapter and its small files, no encoder weights.
        const fetched = filesUnder(join(dir, 'two', 'model-cache', 'acme', ids[0]!));
        expect([...fetched.keys()].sort()).toEqual([...kAdapterFolderFiles]);
        expect(fetched.get('adapter_model.safetensors')).toBeLessThan(700_000); // rank 8 in fp16
        const bytes = [...fetched.values()].reduce((a, b) => a + b, 0);
        expect(bytes).toBeLessThan(1_000_000);

        // Both models in turn from several clients at once: each fetch evicts the other model's folder.
        const answers: number[] = [];
        const failures: string[] = [];
        await Promise.all(
          Array.from({ length: 2 }, async (_, lane) => {
            for (let call = 0; call < 8; call++) {
              const body = { model: ids[(lane + call) % 2], inputs: kTexts };
              let answer = await httpCall(two.url, 'POST', '/v2/predict', key, body);
              // A loaded test machine may shed a call (503 overloaded, retry-after): a client retries it, as here.
              for (let retry = 0; retry < 30 && answer.status === 503; retry++) {
                await new Promise((resolve) => setTimeout(resolve, 2000));
                answer = await httpCall(two.url, 'POST', '/v2/predict', key, body);
              }
              answers.push(answer.status);
              if (answer.status !== 200) failures.push(answer.text);
            }
          }),
        );
        expect(failures).toEqual([]);
        expect(answers).toHaveLength(16);
        // The cache kept its cap: one model's folder at a time.
        expect(readdirSync(join(dir, 'two', 'model-cache', 'acme'))).toHaveLength(1);
      } finally {
        one.child.kill('SIGTERM');
        two.child.kill('SIGTERM');
        expect([await exited(one.child), await exited(two.child)]).toEqual([0, 0]);
      }
    },
    300_000 * kLevelSlowdown,
  );
});
