// `npm run bench -- cpu-report [--quick] [--out report.md]`: the tables that depend on the CPU, in one command,
// printed as markdown with the CPU's model and flags, ready for docs/benchmarks.md.
//
// Most of our machines are AVX2 or AVX-512 without bf16 products, so the figures that need AVX512_BF16 or AMX
// (what `precision: 'auto'` picks and gains over fp32, fine-tuning's bf16 products, the e-mail encoder against
// onnxruntime) are rarely measured. Wherever such a CPU is at hand, this runs them:
//   1. the encoder suite (UCI sentences and e-mails, batch 8 and 32): auto, fp32, bf16 and int8 against
//      onnxruntime-node and transformers.js, with auto's pick and the rates it measured;
//   2. fine-tuning steps (the default adapter recipe) at the CPU's level and capped at each lower level that
//      changes the products (AMX tiles -> `vdpbf16ps` -> fp32 -> AVX2 fp32), short texts and e-mails;
//   3. `train()` end to end on 20 short texts at the CPU's level and at `SVC_ISA=avx2`.
// Each part runs as its own `npm run bench` child so that SVC_ISA can cap it; `--quick` halves the rounds and
// skips the e-mail steps. The CPU is whatever runs the command: nothing here assumes one.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { cpuInfo } from '../src/native/index.js';

const here = dirname(fileURLToPath(import.meta.url));

/** The /proc/cpuinfo flags that decide our kernels (docs/engine.md, "Kernel levels"). */
const kFlags = ['avx2', 'fma', 'avx_vnni', 'avx512f', 'avx512_vnni', 'avx512_bf16', 'amx_tile', 'amx_bf16', 'amx_int8'];

interface EncoderRow {
  impl: string;
  precision: string;
  corpus: string;
  batch: number;
  sentencesPerSec: number;
}

interface StepRow {
  impl: string;
  secondsPerStep: number;
  cpuSecondsPerStep: number;
  projectedSeconds: number;
  finalLoss: number;
}

interface LibraryRow {
  threads: number;
  seconds: number;
  cpuSeconds: number;
  finalLoss: number;
}

function cpuFlags(): string[] {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('flags'));
    const present = new Set((line ?? '').split(':')[1]?.trim().split(/\s+/) ?? []);
    return kFlags.filter((flag) => present.has(flag));
  } catch {
    return [];
  }
}

/** Runs one suite in a child process (with `isa` as SVC_ISA when given) and returns its last JSON value. */
function suite<T>(args: string[], isa?: string): T {
  const env = { ...process.env, ...(isa ? { SVC_ISA: isa } : {}) };
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'run.ts'), ...args, '--json'], {
    env,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.status !== 0) throw new Error(`npm run bench -- ${args.join(' ')}${isa ? ` (SVC_ISA=${isa})` : ''} exited ${child.status}`);
  const out = child.stdout;
  const start = out.search(/^\{/m);
  if (start < 0) throw new Error(`npm run bench -- ${args.join(' ')} printed no JSON`);
  // The encoder prints one indented object; the train suite one line per run, the last the whole result.
  const text = out.slice(start).trim();
  const lastLine = text.split('\n').at(-1)!;
  const value = (text.startsWith('{\n') ? JSON.parse(text) : JSON.parse(lastLine)) as T;
  console.error(`cpu-report: ${args.join(' ')}${isa ? ` at ${isa}` : ''} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return value;
}

/** The levels below the CPU's own that change fine-tuning's products, highest first. */
function productLevels(level: string, info: ReturnType<typeof cpuInfo>): { isa?: string; products: string }[] {
  const levels: { isa?: string; products: string }[] = [];
  const own = info.amx ? 'AMX bf16 tiles' : info.bf16 ? 'bf16 (`vdpbf16ps`)' : 'fp32';
  levels.push({ products: `${own}, ${level}` });
  if (info.amx) levels.push({ isa: 'avx512-vnni', products: 'bf16 (`vdpbf16ps`), avx512-vnni' });
  if (info.bf16) levels.push({ isa: 'avx512', products: 'fp32, avx512' });
  if (info.avx512) levels.push({ isa: 'avx2', products: 'fp32, avx2' });
  return levels;
}

function fixed(value: number | undefined, digits = 1): string {
  return value === undefined ? '' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function encoderTable(rows: EncoderRow[], pick: string): string[] {
  const rate = (corpus: string, batch: number, impl: string, precision: string) =>
    rows.find((r) => r.corpus === corpus && r.batch === batch && r.impl === impl && r.precision.startsWith(precision))?.sentencesPerSec;
  const lines = [
    '| texts | batch | auto (runs ' +
      pick +
      ') | fp32 | bf16 | int8 | auto ÷ fp32 | onnxruntime-node fp32 / int8 | auto ÷ onnxruntime fp32 | int8 ÷ onnxruntime int8 | transformers.js fp32 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const corpus of ['uci', 'email']) {
    for (const batch of [8, 32]) {
      const auto = rate(corpus, batch, 'svc-classify', 'auto');
      const fp32 = rate(corpus, batch, 'svc-classify', 'fp32');
      const ortFp32 = rate(corpus, batch, 'onnxruntime-node', 'fp32');
      const ortInt8 = rate(corpus, batch, 'onnxruntime-node', 'int8');
      const int8 = rate(corpus, batch, 'svc-classify', 'int8');
      if (auto === undefined || fp32 === undefined) continue;
      lines.push(
        `| ${corpus === 'uci' ? 'UCI sentences' : 'e-mails'} | ${batch} | ${fixed(auto)} | ${fixed(fp32)} | ${fixed(rate(corpus, batch, 'svc-classify', 'bf16'))} | ${fixed(int8)} | ${fixed(auto / fp32, 2)}x | ${fixed(ortFp32)} / ${fixed(ortInt8)} | ${fixed(auto / ortFp32!, 2)}x | ${fixed(int8! / ortInt8!, 2)}x | ${fixed(rate(corpus, batch, 'transformers.js', 'fp32'))} |`,
      );
    }
  }
  return lines;
}

export async function run(args: string[]): Promise<void> {
  const quick = args.includes('--quick');
  const outIndex = args.indexOf('--out');
  const outFile = outIndex >= 0 ? args[outIndex + 1] : undefined;
  const info = cpuInfo();
  const model = cpus()[0]?.model ?? 'unknown CPU';
  const rounds = quick ? '2' : '3';

  const encoder = suite<{
    results: EncoderRow[];
    kernelChoice: { kernel: string; precision: string; source: string; rates: { kernel: string; gflops: number }[] };
  }>(['encoder', '--corpus', 'uci,email', '--batches', '8,32', '--rounds', rounds, '--latency-runs', '40']);
  const steps = productLevels(info.level, info).map((level) => ({
    ...level,
    short: suite<{ results: StepRow[] }>(['train', '--method', 'adapter', '--steps', quick ? '10' : '20'], level.isa).results[0]!,
    email: quick
      ? undefined
      : suite<{ results: StepRow[] }>(['train', '--method', 'adapter', '--corpus', 'email', '--steps', '3'], level.isa).results[0]!,
  }));
  const library = [undefined, ...(info.avx512 || info.avxvnni ? ['avx2'] : [])].map((isa) => ({
    isa,
    rows: suite<{ library: LibraryRow[] }>(['train', '--library', '--method', 'adapter'], isa).library,
  }));

  const choice = encoder.kernelChoice;
  const rates = choice.rates.map((r) => `${r.kernel} ${r.gflops.toFixed(1)} GFLOP/s`).join(', ');
  const report = [
    `### ${model}`,
    '',
    `${availableParallelism()} cores, kernel level \`${info.level}\`, flags ${cpuFlags()
      .map((f) => `\`${f}\``)
      .join(
        ' ',
      )}, Node ${process.versions.node}, ${new Date().toISOString().slice(0, 16)} UTC. Made by \`npm run bench -- cpu-report${quick ? ' --quick' : ''}\`.`,
    '',
    `\`precision: 'auto'\` runs ${choice.precision} (kernel ${choice.kernel}, ${choice.source}${rates ? `: ${rates}` : ''}).`,
    '',
    'Encoder, 2 threads, sentences/s (onnxruntime-node fed padded batches in input order):',
    '',
    ...encoderTable(encoder.results, choice.precision),
    '',
    'Fine-tuning steps, the default adapter (rank 8), 2 threads; 50 steps projected with loading:',
    '',
    '| products, level | short texts: ms / step (CPU ms) | 50 steps | e-mails: ms / step (CPU ms) | 50 steps | loss after the short steps |',
    '|---|---:|---:|---:|---:|---:|',
    ...steps.map(
      (s) =>
        `| ${s.products} | ${fixed(s.short.secondsPerStep * 1000, 0)} (${fixed(s.short.cpuSecondsPerStep * 1000, 0)}) | ${fixed(s.short.projectedSeconds)} s | ${s.email ? `${fixed(s.email.secondsPerStep * 1000, 0)} (${fixed(s.email.cpuSecondsPerStep * 1000, 0)})` : ''} | ${s.email ? `${fixed(s.email.projectedSeconds)} s` : ''} | ${s.short.finalLoss.toFixed(4)} |`,
    ),
    '',
    '`train()` end to end on 20 short UCI reviews (the default adapter), as a caller waits for it:',
    '',
    '| level | fine-tuning threads | wall | CPU | final loss |',
    '|---|---:|---:|---:|---:|',
    ...library.flatMap(({ isa, rows }) =>
      rows.map(
        (r) => `| ${isa ?? info.level} | ${r.threads} | ${fixed(r.seconds)} s | ${fixed(r.cpuSeconds)} s | ${r.finalLoss.toFixed(4)} |`,
      ),
    ),
    '',
  ].join('\n');
  console.log(report);
  if (outFile) writeFileSync(outFile, report);
}
