// Pieces every benchmark suite shares: flag parsing and the --json result row.

/** `--<name> N` from the suite's arguments: a positive integer, or `fallback` when absent. */
export function intOption(args: readonly string[], name: string, fallback: number): number {
  const at = args.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(args[at + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new RangeError(`--${name} must be a positive integer`);
  return value;
}

/** One throughput measurement, as the encoder suites print it with --json. */
export interface ThroughputResult {
  impl: string;
  precision: string;
  corpus: string;
  batch: number;
  threads: number;
  sentencesPerSec: number;
  tokensPerSec: number;
}
