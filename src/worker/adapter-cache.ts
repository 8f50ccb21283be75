// A worker's LoRA adapters, read once and kept least recently used first within a byte budget, for the one base
// encoder per base model that predicts every adapter model (the segmented path: docs/engine.md). An adapter a batch
// uses is pinned from before its first adapter is looked up until the batch ends, so loading the batch's later
// adapters never evicts an earlier one; the native core also holds its own reference while a batch runs.
import { statSync } from 'node:fs';

import { SvcError } from '../errors.js';
import { Adapter } from '../native/adapter.js';

/** Counters since the worker started, and what it holds now. */
export interface AdapterCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  /** Resident bytes of the adapters held (A and B in the file's float type: fp16 from the trainer). */
  bytes: number;
  adapters: number;
}

interface Entry {
  identity: string;
  adapter: Adapter;
  pins: number;
}

/** Tells a file saved again at the same path from the one read (the same test the fine-tuned encoders use). */
function identityOf(file: string): string | null {
  try {
    const { ino, size, mtimeMs } = statSync(file);
    return `${ino}:${size}:${mtimeMs}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

export class AdapterCache {
  readonly #limit: number;
  // By base model and file; the Map's order is least recently used first.
  readonly #entries = new Map<string, Entry>();
  // Replaced while pinned: disposed when their batch ends.
  readonly #retired = new Set<Entry>();
  readonly #stats: AdapterCacheStats = { hits: 0, misses: 0, evictions: 0, bytes: 0, adapters: 0 };

  constructor(limitBytes: number) {
    this.#limit = limitBytes;
  }

  stats(): AdapterCacheStats {
    return { ...this.#stats, adapters: this.#entries.size };
  }

  /**
   * The adapters of a batch's segments (null stays null), pinned until `release` gets the same list. A model deleted
   * since its adapter was read keeps predicting from memory; one saved again is read again.
   */
  acquire(baseModel: string, files: readonly (string | null)[]): (Entry | null)[] {
    const held: (Entry | null)[] = [];
    try {
      for (const file of files) {
        const entry = file === null ? null : this.#get(baseModel, file);
        if (entry) entry.pins++;
        held.push(entry);
      }
    } catch (error) {
      this.release(held);
      throw error;
    }
    this.#evict();
    return held;
  }

  release(held: readonly (Entry | null)[]): void {
    for (const entry of held) {
      if (!entry) continue;
      entry.pins--;
      if (entry.pins === 0 && this.#retired.delete(entry)) entry.adapter.dispose();
    }
    this.#evict();
  }

  /**
   * A model's classifier was disposed: its adapter is dropped when the file is gone or saved again (a batch using it
   * finishes first), and kept in its place in the LRU order otherwise. A service unloads classifiers it loads again
   * (LibraryRuntime keeps 256 of them), and reading a 0.66 MB adapter again for each is what the cache is for; the
   * cache's bytes bound it either way.
   */
  forget(file: string): void {
    const identity = identityOf(file);
    for (const [key, entry] of this.#entries) {
      if (key.endsWith(`\0${file}`) && entry.identity !== identity) this.#drop(key, entry);
    }
  }

  #get(baseModel: string, file: string): Entry {
    const key = `${baseModel}\0${file}`;
    const entry = this.#entries.get(key);
    const identity = identityOf(file);
    if (entry && (identity === null || identity === entry.identity)) {
      this.#stats.hits++;
      this.#entries.delete(key); // re-inserted last: most recently used
      this.#entries.set(key, entry);
      return entry;
    }
    if (identity === null) throw new SvcError('not_found', 'the model was deleted: its adapter file is gone');
    this.#stats.misses++;
    if (entry) this.#drop(key, entry);
    const fresh: Entry = { identity, adapter: Adapter.load(file, { base: baseModel }), pins: 0 };
    this.#entries.set(key, fresh);
    this.#stats.bytes += fresh.adapter.bytes;
    return fresh;
  }

  /** Least recently used first, skipping pinned ones, until the budget holds. */
  #evict(): void {
    for (const [key, entry] of this.#entries) {
      if (this.#stats.bytes <= this.#limit) return;
      if (entry.pins > 0) continue;
      this.#stats.evictions++;
      this.#drop(key, entry);
    }
  }

  #drop(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#stats.bytes -= entry.adapter.bytes;
    if (entry.pins > 0) this.#retired.add(entry);
    else entry.adapter.dispose();
  }
}
