// 2,000 seeded mutations of a tiny model's config.json, tokenizer.json, safetensors header and
// manifest, each loaded through the public API in a child process (test/_support/model-mutations-child.ts): every
// load gives embeddings of valid shape or throws an Error, and a crash fails the test by its signal.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { Encoder } from '../../src/native/encoder.js';

const kMutations = 2000;
const kSeed = 20261124;
const scratch = mkdtempSync(join(tmpdir(), 'svc-mutations-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('model file mutations', () => {
  it(`${kMutations} seeded mutations each load or throw an Error, and none crashes`, () => {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'test/_support/model-mutations-child.ts', scratch, String(kSeed), String(kMutations)],
      { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 50_000 },
    );
    const lastMutation = child.stderr
      .trimEnd()
      .split('\n')
      .filter((l) => l.startsWith('mutation '))
      .at(-1);
    // A signal (SIGSEGV, SIGABRT) or a non-zero status: the mutation that was loading is the cause.
    expect({ signal: child.signal, status: child.status, error: child.error?.message }, lastMutation).toEqual({
      signal: null,
      status: 0,
      error: undefined,
    });
    const summary = JSON.parse(child.stdout) as {
      total: number;
      ok: number;
      loadErrors: number;
      useErrors: number;
      bad: string[];
      kinds: Record<string, [number, number, number]>;
    };
    expect(summary.bad).toEqual([]);
    expect(summary.total).toBe(kMutations);
    expect(summary.ok + summary.loadErrors + summary.useErrors).toBe(kMutations);
    // Every kind of file both survives some mutations and refuses others (the mutations bite).
    for (const kind of ['config', 'tokenizer', 'safetensors', 'manifest']) {
      const [ok, refused] = summary.kinds[kind]!;
      expect(ok, kind).toBeGreaterThan(0);
      expect(refused, kind).toBeGreaterThan(0);
    }
  }, 60_000);

  it('loads the real svc-small through the same reader', () => {
    const encoder = Encoder.fromPretrained('svc-small', { threads: 1, precision: 'fp32' });
    const out = encoder.embedSync(['This is an example sentence']);
    expect(Array.from(out.slice(0, 4), (x) => +x.toFixed(4))).toEqual([0.0677, 0.0636, 0.0487, 0.0794]);
    encoder.dispose();
  });
});
