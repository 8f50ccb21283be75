// The kernel choice by measurement (src/native/kernel-choice.ts, native/core/kernels/autotune.h): the pick among given
// measurements, then the real addon in fresh processes (a process measures once, so each case is its own process):
// measured, cached and reused, a corrupt or stale cache replaced, overrides obeyed, `svc info` printing the pick.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { cpuInfo } from '../../src/index.js';
import type { KernelChoice, KernelRate } from '../../src/index.js';
import { pickKernel } from '../../src/native/kernel-pick.js';
import { packageRoot } from '../../src/native/index.js';
import { svc } from '../_support/cli.js';

const scratch = mkdtempSync(join(tmpdir(), 'svc-kernels-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const rate = (kernel: KernelRate['kernel'], gflops: number, relError = kernel === 'fp32' ? 0 : 0.002): KernelRate => ({
  kernel,
  gflops,
  relError,
});

describe('pickKernel (given measurements)', () => {
  it('keeps fp32 where it is the only candidate', () => {
    expect(pickKernel([rate('fp32', 78)], ['fp32'])).toEqual({ kernel: 'fp32', bf16Kernel: null });
  });

  it('picks vdpbf16ps where it measured faster, without AMX (the AMD Zen 4 of issue 28: 1.9x)', () => {
    expect(pickKernel([rate('fp32', 318), rate('bf16-vector', 606)], ['fp32', 'bf16-vector'])).toEqual({
      kernel: 'bf16-vector',
      bf16Kernel: 'vector',
    });
  });

  it('keeps fp32 where vdpbf16ps measured slower (an Intel Xeon without AMX: 0.7x), but an explicit bf16 still has its kernel', () => {
    expect(pickKernel([rate('fp32', 100), rate('bf16-vector', 70)], ['fp32', 'bf16-vector'])).toEqual({
      kernel: 'fp32',
      bf16Kernel: 'vector',
    });
  });

  it('picks the fastest of three, and the faster bf16 kernel for explicit bf16', () => {
    const rates = [rate('fp32', 100), rate('bf16-vector', 70), rate('bf16-amx', 310)];
    expect(pickKernel(rates, ['fp32', 'bf16-vector', 'bf16-amx'])).toEqual({ kernel: 'bf16-amx', bf16Kernel: 'amx' });
    const vectorWins = [rate('fp32', 100), rate('bf16-vector', 190), rate('bf16-amx', 150)];
    expect(pickKernel(vectorWins, ['fp32', 'bf16-vector', 'bf16-amx'])).toEqual({ kernel: 'bf16-vector', bf16Kernel: 'vector' });
  });

  it('passes over a faster kernel whose output is outside the accuracy bound, and a gain within the noise', () => {
    expect(pickKernel([rate('fp32', 100), rate('bf16-vector', 300, 0.05)], ['fp32', 'bf16-vector']).kernel).toBe('fp32');
    expect(pickKernel([rate('fp32', 100), rate('bf16-vector', 300, Number.NaN)], ['fp32', 'bf16-vector']).kernel).toBe('fp32');
    expect(pickKernel([rate('fp32', 100), rate('bf16-vector', 105)], ['fp32', 'bf16-vector']).kernel).toBe('fp32');
    expect(pickKernel([rate('fp32', 100), rate('bf16-vector', 111)], ['fp32', 'bf16-vector']).kernel).toBe('bf16-vector');
  });

  it('obeys a forced emulated bf16 (it is never a measured candidate)', () => {
    expect(pickKernel([], ['fp32', 'bf16-emulated'], { force: 'bf16-emulated' })).toEqual({
      kernel: 'bf16-emulated',
      bf16Kernel: 'emulated',
    });
    expect(() => pickKernel([], ['fp32'], { force: 'bf16-emulated' })).toThrow("kernel 'bf16-emulated' is not available");
  });

  it('ignores a rate for a kernel the CPU does not have (a cap), and obeys a forced kernel only if the CPU has it', () => {
    expect(pickKernel([rate('fp32', 100), rate('bf16-amx', 300)], ['fp32']).kernel).toBe('fp32');
    expect(pickKernel([rate('fp32', 100), rate('bf16-vector', 300)], ['fp32', 'bf16-vector'], { force: 'fp32' })).toEqual({
      kernel: 'fp32',
      bf16Kernel: 'vector',
    });
    expect(() => pickKernel([], ['fp32'], { force: 'bf16-amx' })).toThrow(
      "kernel 'bf16-amx' is not available on this CPU (available: fp32)",
    );
  });
});

// The choice as a fresh process makes it, with the given environment: { choice, encoderPrecision? }.
function choiceIn(env: Record<string, string>, precision?: string): { choice: KernelChoice; encoder?: string } {
  const source = `
    import { kernelChoice, Encoder } from './src/index.ts';
    const encoder = ${precision ? `Encoder.fromPretrained('svc-small', { threads: 2, precision: ${JSON.stringify(precision)} })` : 'null'};
    console.log(JSON.stringify({ choice: kernelChoice(2), encoder: encoder?.precision }));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
    cwd: packageRoot(),
    env: { ...process.env, SVC_KERNEL: '', ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'], // a refusal's stderr goes into the thrown error's message
  });
  return JSON.parse(out.trim()) as { choice: KernelChoice; encoder?: string };
}

describe('kernelChoice (real addon, real timings)', () => {
  // The CPU's own kernels: the child processes below run without SVC_KERNEL, even when this run emulates bf16.
  const hardwareBf16 = cpuInfo().bf16 && process.env.SVC_KERNEL !== 'bf16-emulated';
  const available = ['fp32', ...(hardwareBf16 ? ['bf16-vector'] : []), ...(cpuInfo().amx ? ['bf16-amx'] : [])];

  it('measures every candidate on first need, caches it, and a second process reuses the cache', () => {
    const dir = join(scratch, 'reuse');
    const first = choiceIn({ SVC_CACHE_DIR: dir }).choice;
    expect(first.source).toBe('measured');
    expect(first.rates.map((r) => r.kernel)).toEqual(available);
    for (const r of first.rates) {
      expect(r.gflops).toBeGreaterThan(0);
      expect(r.relError).toBeLessThan(1 / 128);
    }
    expect(first.cacheFile).toMatch(new RegExp(`^${dir}/kernels-[0-9a-f]{16}\\.json$`));
    expect(first.precision).toBe(first.kernel === 'fp32' ? 'fp32' : 'bf16');
    expect(first.trainBf16).toBe(first.kernel !== 'fp32');
    const second = choiceIn({ SVC_CACHE_DIR: dir }).choice;
    expect(second).toEqual({ ...first, source: 'cache' }); // the same rates and time: nothing measured again
    expect(readdirSync(dir)).toEqual([first.cacheFile!.slice(dir.length + 1)]); // no lock or temporary file left
  });

  it('falls back to XDG_CACHE_HOME/svc-classify without SVC_CACHE_DIR', () => {
    const xdg = join(scratch, 'xdg');
    const choice = choiceIn({ SVC_CACHE_DIR: '', XDG_CACHE_HOME: xdg }).choice;
    expect(choice.cacheFile?.startsWith(join(xdg, 'svc-classify') + '/')).toBe(true);
  });

  it('measures again and replaces a corrupt cache file, a stale one, and one written for other kernels', () => {
    const dir = join(scratch, 'corrupt');
    const first = choiceIn({ SVC_CACHE_DIR: dir }).choice;
    const file = first.cacheFile!;
    const variants = [
      '{"format": 1, "key": ', // cut short
      '\u0000\u0001 not json',
      JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), key: 'another CPU' }),
      JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), rates: [{ kernel: 'fp32', gflops: -1, relError: 0 }] }),
      JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), rates: [] }),
    ];
    for (const content of variants) {
      writeFileSync(file, content);
      const again = choiceIn({ SVC_CACHE_DIR: dir }).choice;
      expect(again.source, content).toBe('measured');
      expect(again.cacheFile).toBe(file);
      const rewritten = JSON.parse(readFileSync(file, 'utf8')) as { rates: KernelRate[]; measuredAt: string };
      expect(rewritten.measuredAt).toBe(again.measuredAt);
      expect(rewritten.rates).toEqual(again.rates);
    }
  });

  it('still answers when the cache folder cannot be written (the rates are only not kept)', () => {
    const blocked = join(scratch, 'blocked');
    writeFileSync(blocked, 'a file where the folder would be');
    const choice = choiceIn({ SVC_CACHE_DIR: join(blocked, 'cache') }).choice;
    expect(choice).toMatchObject({ source: 'measured', cacheFile: null });
    expect(choice.rates[0]).toMatchObject({ kernel: 'fp32' });
  });

  it('SVC_ISA=scalar caps the candidates to fp32, measured and cached apart from the uncapped level', () => {
    const dir = join(scratch, 'levels');
    const uncapped = choiceIn({ SVC_CACHE_DIR: dir, SVC_ISA: '' }).choice; // '' is no cap, whatever this run's is
    const scalar = choiceIn({ SVC_CACHE_DIR: dir, SVC_ISA: 'scalar' });
    expect(scalar.choice).toMatchObject({ source: 'measured', precision: 'fp32', kernel: 'fp32', bf16Kernel: null });
    expect(scalar.choice.rates.map((r) => r.kernel)).toEqual(['fp32']);
    expect(scalar.choice.cacheFile).not.toBe(uncapped.cacheFile);
    expect(choiceIn({ SVC_CACHE_DIR: dir, SVC_ISA: 'scalar' }).choice.source).toBe('cache');
  });

  it('SVC_KERNEL forces the pick without measuring; a kernel the CPU lacks or an unknown name is refused', () => {
    const dir = join(scratch, 'forced');
    const forced = choiceIn({ SVC_CACHE_DIR: dir, SVC_KERNEL: 'fp32' }, 'auto');
    expect(forced.choice).toMatchObject({ source: 'forced', kernel: 'fp32', precision: 'fp32', rates: [], cacheFile: null });
    expect(forced.encoder).toBe('fp32');
    expect(() => readdirSync(dir)).toThrow(); // nothing measured, nothing written
    const missing = available.includes('bf16-amx') ? null : 'bf16-amx';
    if (missing) {
      expect(() => choiceIn({ SVC_CACHE_DIR: dir, SVC_KERNEL: missing }, 'auto')).toThrow(
        `SVC_KERNEL: kernel 'bf16-amx' is not available on this CPU (available: ${available.join(', ')})`,
      );
    }
    expect(() => choiceIn({ SVC_CACHE_DIR: dir, SVC_KERNEL: 'fp16' })).toThrow(
      "SVC_KERNEL must be one of fp32, bf16-vector, bf16-amx, bf16-emulated; got 'fp16'",
    );
  });

  it('SVC_KERNEL=bf16-emulated runs bf16 on any CPU, within the bound auto holds bf16 to, and measures nothing', () => {
    const dir = join(scratch, 'emulated');
    const source = `
      import { kernelChoice, cpuInfo, Encoder } from './src/index.ts';
      const texts = ['Why was I charged twice this month?', 'The app will not let me log in.', 'A wonderful, moving film.',
        'Refund the second payment please', 'Great food, slow service, would come back for the soup.'];
      const fp32 = Encoder.fromPretrained('svc-small', { threads: 2, precision: 'fp32' });
      const auto = Encoder.fromPretrained('svc-small', { threads: 2 }); // the default precision
      const a = fp32.embedSync(texts), b = auto.embedSync(texts);
      let lowest = 1, bitwise = true;
      for (let t = 0; t < texts.length; t++) {
        let dot = 0;
        for (let i = 0; i < fp32.dim; i++) { dot += a[t * fp32.dim + i] * b[t * fp32.dim + i]; bitwise &&= a[t * fp32.dim + i] === b[t * fp32.dim + i]; }
        lowest = Math.min(lowest, dot); // both L2-normalized
      }
      console.log(JSON.stringify({ choice: kernelChoice(2), bf16: cpuInfo().bf16, precisions: [fp32.precision, auto.precision], lowest, bitwise }));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
      cwd: packageRoot(),
      env: { ...process.env, SVC_CACHE_DIR: dir, SVC_KERNEL: 'bf16-emulated' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const result = JSON.parse(out.trim()) as {
      choice: KernelChoice;
      bf16: boolean;
      precisions: string[];
      lowest: number;
      bitwise: boolean;
    };
    expect(result.choice).toMatchObject({
      source: 'forced',
      kernel: 'bf16-emulated',
      precision: 'bf16',
      bf16Kernel: 'emulated',
      trainBf16: true,
    });
    expect(result.bf16).toBe(true);
    expect(result.precisions).toEqual(['fp32', 'bf16']);
    expect(result.bitwise).toBe(false); // bf16's rounding did run
    expect(result.lowest).toBeGreaterThanOrEqual(0.9999);
    expect(() => readdirSync(dir)).toThrow();
  });

  it("an encoder with precision 'auto' runs the pick; an explicit fp32 or int8 encoder measures nothing", () => {
    const dir = join(scratch, 'encoder');
    const auto = choiceIn({ SVC_CACHE_DIR: dir }, 'auto');
    expect(auto.encoder).toBe(auto.choice.precision);
    const explicit = join(scratch, 'explicit');
    const source = `
      import { Encoder } from './src/index.ts';
      for (const precision of ['fp32', 'int8']) Encoder.fromPretrained('svc-small', { threads: 2, precision }).dispose();`;
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
      cwd: packageRoot(),
      env: { ...process.env, SVC_CACHE_DIR: explicit },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(() => readdirSync(explicit)).toThrow();
  });

  it('svc info prints the pick and the measured rates', async () => {
    const dir = join(scratch, 'info');
    const first = await svc(['info', '--json'], { SVC_CACHE_DIR: dir, SVC_KERNEL: '' });
    expect(first.code).toBe(0);
    const info = JSON.parse(first.stdout) as { precision: { auto: string }; kernels: KernelChoice };
    expect(info.kernels.source).toBe('measured');
    expect(info.precision.auto).toBe(info.kernels.precision);
    expect(info.kernels.rates.map((r) => r.kernel)).toEqual(available);
    const second = JSON.parse((await svc(['info', '--json'], { SVC_CACHE_DIR: dir, SVC_KERNEL: '' })).stdout) as typeof info;
    expect(second.kernels).toEqual({ ...info.kernels, source: 'cache' });
  });
});
