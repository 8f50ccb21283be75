// `svc serve`'s log lines: pino's JSON (one object a line) for machines, or short human lines on a terminal.
import { hostname } from 'node:os';
import { Writable } from 'node:stream';

import { environment, type EnvironmentSource } from '../environment.js';

/** How `svc serve` writes its log: `json` (pino's lines as they are) or `pretty` (time, level, message, fields). */
export const kLogFormats = Object.freeze(['pretty', 'json'] as const);
export type LogFormat = (typeof kLogFormats)[number];

const kLevelNames: Readonly<Record<number, string>> = Object.freeze({
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
});
/** pino's fields every line has; the rest are shown as key=value. */
const kBaseFields = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'reqId']);

/** `--log-format`, else `SVC_LOG_FORMAT`, else pretty on a terminal and JSON elsewhere. */
export function logFormatOf(flag: string | undefined, env: EnvironmentSource | undefined, isTTY: boolean): LogFormat {
  const value = flag ?? environment(env).logFormat;
  if (value === undefined) return isTTY ? 'pretty' : 'json';
  if (!(kLogFormats as readonly string[]).includes(value)) {
    throw new RangeError(`${flag === undefined ? 'SVC_LOG_FORMAT' : '--log-format'} must be pretty or json; got '${value}'`);
  }
  return value as LogFormat;
}

function fieldText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[\s"=]/.test(text) ? JSON.stringify(text) : text;
}

/**
 * One pino JSON line as a human line, or undefined to leave it out. On a terminal the log is quiet: a line per
 * request only when `requests` (--log-level debug or trace), and not Fastify's own "Server listening at" lines, since
 * `svc listening on ...` says it once.
 *
 * @example
 * ```ts
 * prettyLine('{"level":40,"time":1764160000000,"msg":"slow upstream","ms":812}', { requests: false });
 * // '12:26:40 WARN  slow upstream ms=812' (in the machine's time zone)
 * ```
 */
export function prettyLine(line: string, { requests }: { requests: boolean }): string | undefined {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line; // not pino's: as it is
  }
  const msg = typeof entry.msg === 'string' ? entry.msg : '';
  if (msg.startsWith('Server listening at')) return undefined;
  if (msg === 'request' && !requests) return undefined;
  const time = typeof entry.time === 'number' ? new Date(entry.time).toTimeString().slice(0, 8) : '--:--:--';
  const level = (kLevelNames[entry.level as number] ?? String(entry.level)).padEnd(5);
  const fields = Object.entries(entry)
    .filter(([key, value]) => !kBaseFields.has(key) && value !== null && value !== undefined)
    .map(([key, value]) => `${key}=${fieldText(value)}`);
  return [time, level, msg, ...fields].filter((part) => part.length > 0).join(' ');
}

/** A stream for pino that writes {@link prettyLine}s to `out`. */
export function prettyLogStream(out: NodeJS.WritableStream, options: { requests: boolean }): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const text = line.length === 0 ? undefined : prettyLine(line, options);
        if (text !== undefined) out.write(`${text}\n`);
      }
      done();
    },
  });
}

/** What `svc serve` says itself, outside Fastify's log: where it listens, what precision auto runs, its shutdown. */
export interface ServeMessages {
  info(msg: string): void;
  error(msg: string): void;
}

/**
 * `svc serve`'s own lines in the log's format. Pretty: the human line, on stdout (errors on stderr). JSON: a record
 * shaped like pino's (`level`, `time`, `pid`, `hostname`, `msg`) on stdout, so that whatever reads stdout (a log
 * collector, `jq`) gets one JSON object a line and nothing else. Written at every log level, as the human lines are:
 * they say where the service listens, which a script waits for.
 *
 * @example
 * ```ts
 * serveMessages('json', process.stdout, process.stderr).info('svc listening on http://127.0.0.1:8080 (data: /srv/svc-data)');
 * // stdout: {"level":30,"time":1764160000000,"pid":4242,"hostname":"box","msg":"svc listening on http://127.0.0.1:8080 (data: /srv/svc-data)"}
 * ```
 */
export function serveMessages(format: LogFormat, out: NodeJS.WritableStream, err: NodeJS.WritableStream): ServeMessages {
  if (format === 'pretty') return { info: (msg) => out.write(`${msg}\n`), error: (msg) => err.write(`${msg}\n`) };
  const host = hostname();
  const record = (level: number, msg: string) =>
    out.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, hostname: host, msg })}\n`);
  return { info: (msg) => record(30, msg), error: (msg) => record(50, msg) };
}
