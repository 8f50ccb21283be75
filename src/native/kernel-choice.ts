/**
 * Which kernel runs the encoder's linear layers, chosen by measuring them on this CPU rather than by a rule written on
 * another one (vdpbf16ps measured 0.7x fp32 on one Intel Xeon and 1.7-1.9x on an AMD Zen 4). The first time a process
 * needs the choice it times every candidate the CPU allows for a few tens of milliseconds (native measureKernels),
 * picks with {@link pickKernel}, and caches the measurement in a file keyed by the CPU model, the kernel flags
 * (after SVC_ISA's cap) and the addon build, so later processes read it instead. A file that is unreadable, corrupt or
 * written for another CPU or build is measured again and replaced; one that cannot be written is only a lost cache.
 *
 * Overrides: `SVC_KERNEL=fp32|bf16-vector|bf16-amx|bf16-emulated` forces the pick (no measurement; `bf16-emulated`
 * runs bf16's rounding with fp32 instructions on any CPU, to test what a bf16 CPU would answer), `SVC_ISA` caps the candidates,
 * and an explicit precision ('fp32', 'int8', 'bf16') never asks for a choice at all.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { cpus, homedir } from 'node:os';
import { join } from 'node:path';
import { debuglog } from 'node:util';

import { environment } from '../environment.js';
import { SvcError } from '../errors.js';
import { kKernelNames, pickKernel } from './kernel-pick.js';
import type { KernelName, KernelRate } from './kernel-pick.js';
import { loadAddon, packageRoot, resolveAddonPath } from './load.js';

const debug = debuglog('svc');

/** What was picked on this CPU, from what measurement. */
export interface KernelChoice {
  /** What precision `'auto'` runs: `'bf16'` where a bf16 kernel measured faster than fp32 within the bound, else `'fp32'`. */
  precision: 'fp32' | 'bf16';
  /** The kernel picked. */
  kernel: KernelName;
  /** The bf16 kernel in use where the CPU has bf16 products (the faster of AMX and vdpbf16ps); null without them. */
  bf16Kernel: 'amx' | 'vector' | 'emulated' | null;
  /** Whether fine-tuning's linear layers multiply in bf16 (where the CPU has bf16 products and they measured faster). */
  trainBf16: boolean;
  /** Each candidate's measured rate; empty when SVC_KERNEL forced the pick. */
  rates: KernelRate[];
  /** `'measured'` in this process, read from the `'cache'` file, or `'forced'` by SVC_KERNEL. */
  source: 'measured' | 'cache' | 'forced';
  /** The cache file, or null when forced or when no cache folder could be written. */
  cacheFile: string | null;
  /** Threads the rates were measured on. */
  threads: number;
  /** When the rates were measured (ISO 8601). */
  measuredAt: string | null;
}

// The measurement's time budget: long enough for several interleaved rounds of each candidate at the vector levels.
const kBudgetMs = 40;
const kFormat = 1;
// A lock older than this belongs to a process that died while measuring.
const kStaleLockMs = 30_000;
const kWaitForOtherMs = 5_000;

const choices = new Map<number, KernelChoice>();

/** `SVC_CACHE_DIR`, else `$XDG_CACHE_HOME/svc-classify`, else `~/.cache/svc-classify`. */
export function kernelCacheDir(): string {
  const { cacheDir, xdgCacheHome } = environment();
  return cacheDir ?? join(xdgCacheHome ?? join(homedir(), '.cache'), 'svc-classify');
}

function availableKernels(): KernelName[] {
  // Emulated bf16 is never measured: it is there only when forced (the core reads SVC_KERNEL for it at load).
  if (environment().kernel === 'bf16-emulated') return ['fp32', 'bf16-emulated'];
  const cpu = loadAddon().cpuInfo();
  return ['fp32', ...(cpu.bf16 ? (['bf16-vector'] as const) : []), ...(cpu.amx ? (['bf16-amx'] as const) : [])];
}

// What a measurement is valid for: this CPU model, its kernel flags after SVC_ISA's cap, this addon build, the threads.
function cacheKey(threads: number): string {
  let addon = 'unknown';
  try {
    const path = resolveAddonPath(packageRoot());
    const st = statSync(path);
    addon = `${st.size}:${Math.round(st.mtimeMs)}`;
  } catch {
    // no file to stat (a bundled addon): the key still names the CPU
  }
  return JSON.stringify({ cpu: cpus()[0]?.model ?? 'unknown', arch: process.arch, flags: loadAddon().cpuInfo(), addon, threads });
}

interface CacheFile {
  format: number;
  key: string;
  measuredAt: string;
  rates: KernelRate[];
}

function isRate(value: unknown): value is KernelRate {
  const r = value as KernelRate;
  return (
    typeof r === 'object' &&
    r !== null &&
    kKernelNames.includes(r.kernel) &&
    Number.isFinite(r.gflops) &&
    r.gflops > 0 &&
    Number.isFinite(r.relError) &&
    r.relError >= 0
  );
}

// The cached rates when the file is whole, for this key, and covers exactly the candidates; null otherwise.
function readCache(file: string, key: string, available: readonly KernelName[]): CacheFile | null {
  let parsed: CacheFile;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as CacheFile;
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || parsed.format !== kFormat || parsed.key !== key) return null;
  if (typeof parsed.measuredAt !== 'string' || !Array.isArray(parsed.rates) || !parsed.rates.every(isRate)) return null;
  const names = parsed.rates.map((r) => r.kernel).sort();
  if (names.join() !== [...available].sort().join()) return null;
  return parsed;
}

function writeCache(file: string, content: CacheFile): boolean {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify(content, null, 2) + '\n');
    renameSync(tmp, file); // whole or not at all, for readers in other processes
    return true;
  } catch (error) {
    debug('kernel choice: cannot write %s: %s', file, (error as Error).message);
    try {
      unlinkSync(tmp);
    } catch {
      // never written
    }
    return false;
  }
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// One process (or worker) measures at a time, so two pool workers starting together neither halve each other's
// rates nor both spend the budget: the others wait for its file.
function takeLock(lock: string): boolean {
  try {
    closeSync(openSync(lock, 'wx'));
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > kStaleLockMs) unlinkSync(lock);
    } catch {
      // gone meanwhile
    }
    return false;
  }
}

function measure(threads: number): KernelRate[] {
  return loadAddon()
    .measureKernels(threads, kBudgetMs)
    .map((r) => ({ kernel: r.name as KernelName, gflops: r.gflops, relError: r.relError }));
}

// The cached measurement for this key, else a new one (written back). `cacheFile` is null when none could be kept.
function ratesFor(
  threads: number,
  available: readonly KernelName[],
): Omit<KernelChoice, 'precision' | 'kernel' | 'bf16Kernel' | 'trainBf16'> {
  const key = cacheKey(threads);
  const dir = kernelCacheDir();
  const file = join(dir, `kernels-${createHash('sha256').update(key).digest('hex').slice(0, 16)}.json`);
  const cached = readCache(file, key, available);
  if (cached) return { rates: cached.rates, source: 'cache', cacheFile: file, threads, measuredAt: cached.measuredAt };
  let writable = true;
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    writable = false;
  }
  const lock = `${file}.lock`;
  let locked = writable && takeLock(lock);
  for (let waited = 0; writable && !locked && waited < kWaitForOtherMs; waited += 25) {
    sleepMs(25);
    const other = readCache(file, key, available);
    if (other) return { rates: other.rates, source: 'cache', cacheFile: file, threads, measuredAt: other.measuredAt };
    locked = takeLock(lock);
  }
  try {
    const rates = measure(threads);
    const measuredAt = new Date().toISOString();
    const kept = writable && writeCache(file, { format: kFormat, key, measuredAt, rates });
    debug('kernel choice: measured %j on %d thread(s)%s', rates, threads, kept ? `, cached in ${file}` : '');
    return { rates, source: 'measured', cacheFile: kept ? file : null, threads, measuredAt };
  } finally {
    if (locked) {
      try {
        unlinkSync(lock);
      } catch {
        // removed as stale by another process
      }
    }
  }
}

function forcedKernel(): KernelName | undefined {
  const forced = environment().kernel;
  if (forced === undefined) return undefined;
  if (!kKernelNames.includes(forced as KernelName)) {
    throw new SvcError('invalid_request', `SVC_KERNEL must be one of ${kKernelNames.join(', ')}; got '${forced}'`);
  }
  return forced as KernelName;
}

/**
 * The kernel choice for encoders on `threads` threads: measured once per CPU model and addon build (then read from the
 * cache folder, see {@link kernelCacheDir}), and applied to the native core (which bf16 kernel runs). What precision
 * `'auto'` resolves to, what fine-tuning multiplies in, and the measured rates.
 *
 * @example
 * ```ts
 * import { kernelChoice } from 'svc-classify';
 * kernelChoice(2);
 * // on an AVX2 CPU: { precision: 'fp32', kernel: 'fp32', bf16Kernel: null, trainBf16: false,
 * //   rates: [{ kernel: 'fp32', gflops: 78.5, relError: 0 }], source: 'cache', threads: 2, ... }
 * ```
 */
export function kernelChoice(threads: number): KernelChoice {
  const known = choices.get(threads);
  if (known) return known;
  const available = availableKernels();
  const force = forcedKernel();
  const measured =
    force !== undefined
      ? { rates: [], source: 'forced' as const, cacheFile: null, threads, measuredAt: null }
      : ratesFor(threads, available);
  let pick;
  try {
    pick = pickKernel(measured.rates, available, force !== undefined ? { force } : {});
  } catch (error) {
    throw new SvcError('invalid_request', `SVC_KERNEL: ${(error as Error).message}`);
  }
  if (pick.bf16Kernel) loadAddon().setBf16Kernel(pick.bf16Kernel);
  const choice: KernelChoice = {
    precision: pick.kernel === 'fp32' ? 'fp32' : 'bf16',
    kernel: pick.kernel,
    bf16Kernel: pick.bf16Kernel,
    trainBf16: pick.kernel !== 'fp32',
    ...measured,
  };
  choices.set(threads, choice);
  return choice;
}
