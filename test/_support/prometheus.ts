// Reads a /metrics body with a Prometheus text-format parser (prom2json's output shape), so tests check what a
// scraper sees, not what prom-client holds.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

interface Sample {
  labels?: Record<string, string>;
  value?: string;
  count?: string;
  sum?: string;
  buckets?: Record<string, string>;
}
export interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Sample[];
}

export function parseMetrics(text: string): Family[] {
  return (parsePrometheusTextFormat as (text: string) => Family[])(text);
}

function find(families: Family[], name: string, labels: Record<string, string>): Sample | undefined {
  const family = families.find((f) => f.name === name);
  if (family === undefined) throw new Error(`no metric family ${name}`);
  return family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

/** A counter's or gauge's value for the labels (0 when that series has not appeared yet). */
export function value(families: Family[], name: string, labels: Record<string, string> = {}): number {
  return Number(find(families, name, labels)?.value ?? 0);
}

/**
 * A histogram's count and sum for the labels (zeros when that series has not appeared yet). The parser folds
 * every series of a labelled histogram into one, so it is handed the family's header and that series' lines
 * only; of a labelled series it keeps the buckets alone, so its count is the +Inf bucket and its sum is NaN.
 */
export function histogram(text: string, name: string, labels: Record<string, string> = {}): { count: number; sum: number } {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const series = text
    .split('\n')
    .filter(
      (line) =>
        line.startsWith(`# HELP ${name} `) ||
        line.startsWith(`# TYPE ${name} `) ||
        (/^\w+/.exec(line)?.[0].replace(/_(bucket|sum|count)$/, '') === name && pairs.every((pair) => line.includes(pair))),
    );
  const [family] = parseMetrics(`${series.join('\n')}\n`);
  const sample = family?.metrics[0];
  if (sample === undefined) return { count: 0, sum: 0 };
  return { count: Number(sample.count ?? sample.buckets?.['+Inf']), sum: Number(sample.sum) };
}
