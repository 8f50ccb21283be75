// The hub contract: every Hub backend runs these same tests (test/artifacts/directory.test.ts,
// test/artifacts/postgres.test.ts). How a backend keeps the bytes (folders, blobs counted by hash) is tested in
// each backend's own file.
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { Hub } from '../../src/model/hub.js';

/** The chunk size the contract opens hubs with: small, so that a few-MiB file spans several chunks. */
export const kTestChunk = 256 * 1024;

export interface HubBackend {
  /** A hub on a fresh, empty location, its streams in pieces of `chunkBytes`. */
  open(chunkBytes: number): Promise<Hub>;
}

/** Publishes a copy of the local directory `dir` as model `id`. */
export function put(hub: Hub, id: string, dir: string): Promise<void> {
  return hub.publish(id, (staging) => cp(dir, staging, { recursive: true }));
}

/** Writes `files` (name -> bytes) under a fresh temporary directory and returns it. */
export async function modelDir(files: Record<string, Buffer | string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-artifact-'));
  for (const [name, bytes] of Object.entries(files)) {
    const path = join(dir, ...name.split('/'));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }
  return dir;
}

/** A maker of model directories for the tests of the calling describe, each removed after its test. */
export function useModelDirs(): (files: Record<string, Buffer | string>) => Promise<string> {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });
  return async (files) => {
    const made = await modelDir(files);
    dirs.push(made);
    return made;
  };
}

/** Every piece a stream delivers, in order. */
export async function pieces(stream: NodeJS.ReadableStream): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const piece of stream) out.push(piece as Buffer);
  return out;
}

export function hubContract(name: string, backend: HubBackend): void {
  describe(`${name}: the Hub contract`, () => {
    let store: Hub;
    const dir = useModelDirs();
    beforeEach(async () => {
      store = await backend.open(kTestChunk);
    });
    afterEach(async () => {
      await store.close();
    });

    it('gives back a multi-MiB file byte for byte, and lists every file with its size', async () => {
      const weights = randomBytes(3 * 1024 * 1024 + 12_345);
      await put(
        store,
        'acme/svc-small-000000000001',
        await dir({
          'config.json': '{"a":1}\n',
          'onnx/model.onnx': weights,
          'tokenizer.json': '{}',
        }),
      );
      expect(await store.list('acme/svc-small-000000000001')).toEqual([
        { name: 'config.json', size: 8 },
        { name: 'onnx/model.onnx', size: weights.length },
        { name: 'tokenizer.json', size: 2 },
      ]);
      const reader = await store.open('acme/svc-small-000000000001', 'onnx/model.onnx');
      expect(reader.size).toBe(weights.length);
      expect(Buffer.concat(await pieces(reader.stream)).equals(weights)).toBe(true);
      const config = await store.open('acme/svc-small-000000000001', 'config.json');
      expect(Buffer.concat(await pieces(config.stream)).toString()).toBe('{"a":1}\n');
    });

    it('streams a file larger than one chunk chunk by chunk', async () => {
      const bytes = randomBytes(3 * kTestChunk + 100);
      await put(store, 'acme/svc-small-000000000002', await dir({ 'onnx/model.onnx': bytes }));
      const { stream } = await store.open('acme/svc-small-000000000002', 'onnx/model.onnx');
      const got = await pieces(stream);
      expect(got.map((p) => p.length)).toEqual([kTestChunk, kTestChunk, kTestChunk, 100]);
      expect(Buffer.concat(got).equals(bytes)).toBe(true);
    });

    it("replaces a model's files as a whole: no file of the old set stays", async () => {
      await put(store, 'acme/svc-small-000000000003', await dir({ 'head.json': 'old', 'extra.bin': 'x' }));
      await put(store, 'acme/svc-small-000000000003', await dir({ 'head.json': 'new!' }));
      expect(await store.list('acme/svc-small-000000000003')).toEqual([{ name: 'head.json', size: 4 }]);
      const { stream } = await store.open('acme/svc-small-000000000003', 'head.json');
      expect(Buffer.concat(await pieces(stream)).toString()).toBe('new!');
      await expect(store.open('acme/svc-small-000000000003', 'extra.bin')).rejects.toThrow(
        "model 'acme/svc-small-000000000003' has no file 'extra.bin'",
      );
    });

    it('deletes one model and keeps the others, even those holding the same bytes', async () => {
      const files = { 'tokenizer.json': randomBytes(kTestChunk + 1), 'head.json': 'h' };
      await put(store, 'acme/svc-small-000000000004', await dir(files));
      await put(store, 'beta/svc-small-000000000005', await dir(files));
      expect(await store.remove('acme/svc-small-000000000004')).toBe(true);
      expect(await store.remove('acme/svc-small-000000000004')).toBe(false);
      await expect(store.list('acme/svc-small-000000000004')).rejects.toThrow("model 'acme/svc-small-000000000004' is not in the hub");
      await expect(store.open('acme/svc-small-000000000004', 'head.json')).rejects.toThrow(
        "model 'acme/svc-small-000000000004' is not in the hub",
      );
      const { stream } = await store.open('beta/svc-small-000000000005', 'tokenizer.json');
      expect(Buffer.concat(await pieces(stream)).equals(files['tokenizer.json'])).toBe(true);
    });

    it('refuses what is not a hub id or a model file name', async () => {
      await expect(store.list('../etc')).rejects.toThrow("'../etc' is not a hub id (expected <org>/<model_id>)");
      await put(store, 'acme/svc-small-000000000006', await dir({ 'head.json': 'h' }));
      await expect(store.open('acme/svc-small-000000000006', '../head.json')).rejects.toThrow(
        "model 'acme/svc-small-000000000006' has no file '../head.json'",
      );
    });
  });
}
