import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

import type { ProviderOptions } from '../proxy/types.js';
import { environment } from '../environment.js';
import * as is from '../is.js';
import { checkPrecision } from '../native/encoder.js';
import type { PrecisionSetting } from '../native/encoder.js';
import { poolOptions, runTask } from '../pool/pool.js';
import type { PingResult } from '../pool/tasks.js';
import { kServerDefaults, logLevel, startServer } from '../server/app.js';
import { parseTrustProxy } from '../server/trust-proxy.js';
import { checkRedisUrl, databaseUrlFromEnv, redactDatabaseUrl, redisUrlFromEnv } from '../service/open.js';
import { baseModelFlags } from './base-models.js';
import type { RetentionOptions } from '../service/retention.js';
import { logFormatOf, prettyLogStream, serveMessages, type LogFormat } from './log-format.js';

// If something keeps the event loop alive after a clean shutdown, exit anyway after this long.
const kExitGraceMs = 5000;

function positiveInteger(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new RangeError(`--${name} must be an integer from 0 to 65535, got '${value}'`);
  return n;
}

/** A count flag (`--workers 2`): a positive integer; a wrong one is a usage error (RangeError). */
function count(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new RangeError(`--${name} must be a positive integer, got '${value}'`);
  return is.positiveInteger(Number(value), `--${name}`);
}

function mib(value: number | undefined): number | undefined {
  return value === undefined ? undefined : value * 2 ** 20;
}

/**
 * Where pino's lines go: stdout as JSON, or (pretty: a terminal's default) as short human lines without a line per
 * request unless the log level is debug or trace.
 */
function logStreamOf(format: LogFormat, level: string | undefined): { write(line: string): void } | undefined {
  if (format === 'json') return undefined;
  const effective = level ?? environment().logLevel ?? kServerDefaults.logLevel;
  return prettyLogStream(process.stdout, { requests: effective === 'debug' || effective === 'trace' });
}

/** `--precision`, else `SVC_PRECISION`; a wrong one is a usage error naming where it came from. */
function precisionOf(flag: string | undefined): PrecisionSetting | undefined {
  if (flag !== undefined) return usageOf(() => checkPrecision(flag, '--precision'));
  const env = environment().precision;
  return env ? usageOf(() => checkPrecision(env, 'SVC_PRECISION')) : undefined;
}

/** "precision auto runs fp32 (kernel fp32, from the cache: fp32 78.5 GFLOP/s)". */
function precisionInUse(ping: PingResult): string {
  const k = ping.kernels;
  const rates = k?.rates.map((r) => `${r.kernel} ${r.gflops.toFixed(1)} GFLOP/s`).join(', ');
  const how = k === null ? '' : ` (kernel ${k.kernel}, ${k.source === 'cache' ? 'from the cache' : k.source}${rates ? `: ${rates}` : ''})`;
  return `precision auto runs ${ping.precision}${how}`;
}

/** The library's TypeError for a wrong value, as the CLI's usage error (a RangeError: exit 2, not 1). */
function usageOf<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw error instanceof TypeError ? new RangeError(error.message) : error;
  }
}

/**
 * `svc serve [--port 8080] [--host 127.0.0.1] [--data ./svc-data] [--database postgres://...] [--redis redis://...] [--artifacts DIR]
 * [--workers N] [--engine-threads N] [--precision fp32|int8|bf16|auto] [--adapter-cache-mb N]
 * [--predict-queue TEXTS] [--predict-queue-per-org TEXTS] [--predict-deadline-ms MS]
 * [--proxy-models ...] [--provider-a-url URL] [--provider-a-key KEY] ... [--log-level info] [--log-format pretty|json] [--metrics-token T]
 * [--request-log-days N] [--request-log-max-rows N] [--failed-auth-limit N] [--trust-proxy true|N|ADDRS] [--base-model NAME=DIR ...]` (B and C likewise; keys and the metrics token are better
 * given as `SVC_PROVIDER_A_KEY` and `SVC_METRICS_TOKEN`, which `ps` does not show).
 * Logs the address; on SIGINT or SIGTERM stops taking requests, lets in-flight
 * ones finish and leaves unfinished training jobs queued for the next start.
 */
export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', default: String(kServerDefaults.port) },
      host: { type: 'string', default: kServerDefaults.host },
      data: { type: 'string', default: kServerDefaults.dataDir },
      database: { type: 'string' },
      redis: { type: 'string' },
      artifacts: { type: 'string' },
      'model-cache-mb': { type: 'string' },
      workers: { type: 'string' },
      'engine-threads': { type: 'string' },
      precision: { type: 'string' },
      'adapter-cache-mb': { type: 'string' },
      'predict-queue': { type: 'string' },
      'predict-queue-per-org': { type: 'string' },
      'predict-deadline-ms': { type: 'string' },
      'proxy-models': { type: 'string' },
      'provider-a-url': { type: 'string' },
      'provider-b-url': { type: 'string' },
      'provider-c-url': { type: 'string' },
      'provider-a-key': { type: 'string' },
      'provider-b-key': { type: 'string' },
      'provider-c-key': { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      'metrics-token': { type: 'string' },
      'request-log-days': { type: 'string' },
      'request-log-max-rows': { type: 'string' },
      'failed-auth-limit': { type: 'string' },
      'trust-proxy': { type: 'string' },
      'base-model': { type: 'string', multiple: true },
    },
  });
  // Registered here, so that a bad one is named as the flag that gave it; given flags replace SVC_BASE_MODELS.
  const baseModels = baseModelFlags(values['base-model']);
  const providers: ProviderOptions = {};
  for (const letter of ['a', 'b', 'c'] as const) {
    const url = values[`provider-${letter}-url`];
    const key = values[`provider-${letter}-key`];
    if (url !== undefined || key !== undefined) {
      providers[`provider-${letter}`] = { ...(url === undefined ? {} : { url }), ...(key === undefined ? {} : { key }) };
    }
  }
  const retention: RetentionOptions = {
    days: count(values['request-log-days'], 'request-log-days'),
    maxRowsPerProject: count(values['request-log-max-rows'], 'request-log-max-rows'),
  };
  const pool = {
    workers: count(values.workers, 'workers'),
    engineThreads: count(values['engine-threads'], 'engine-threads'),
    precision: precisionOf(values.precision),
    adapterCacheBytes: mib(count(values['adapter-cache-mb'], 'adapter-cache-mb')),
  };
  const database = values.database ?? databaseUrlFromEnv();
  const redis = values.redis ?? redisUrlFromEnv();
  if (redis !== undefined) checkRedisUrl(redis);
  // Pretty on a terminal, JSON elsewhere: a pipe or a file gets pino's lines and svc's own as JSON records alike.
  const logFormat = logFormatOf(values['log-format'], undefined, process.stdout.isTTY === true);
  const say = serveMessages(logFormat, process.stdout, process.stderr);
  const server = await startServer({
    dataDir: values.data,
    database,
    redis,
    artifactsDir: values.artifacts === undefined ? undefined : resolve(values.artifacts),
    modelCacheMb: count(values['model-cache-mb'], 'model-cache-mb'),
    port: positiveInteger(values.port, 'port'),
    host: values.host,
    pool: Object.values(pool).every((v) => v === undefined) ? undefined : pool,
    predictQueue: {
      maxWaitingTexts: count(values['predict-queue'], 'predict-queue'),
      maxTenantTexts: count(values['predict-queue-per-org'], 'predict-queue-per-org'),
      deadlineMs: count(values['predict-deadline-ms'], 'predict-deadline-ms'),
    },
    providers,
    retention,
    rateLimit: { failedAuthPerWindow: count(values['failed-auth-limit'], 'failed-auth-limit') },
    logLevel: values['log-level'] === undefined ? undefined : logLevel(values['log-level'], '--log-level'),
    logStream: logStreamOf(logFormat, values['log-level']),
    metricsToken: values['metrics-token'],
    trustProxy: values['trust-proxy'] === undefined ? undefined : parseTrustProxy(values['trust-proxy'], '--trust-proxy'),
    baseModels,
    proxyModels: values['proxy-models']
      ?.split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  });
  const where =
    (database === undefined ? '' : `, database: ${redactDatabaseUrl(database)}`) +
    (redis === undefined ? '' : `, request counts: ${redactDatabaseUrl(redis)}`);
  const artifacts = values.artifacts === undefined ? '' : `, artifacts: ${resolve(values.artifacts)}`;
  // Listening from here on: a SIGTERM must shut down gracefully even while the start-up lines below are pending.
  const stopped = new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
  say.info(`svc listening on ${server.url} (data: ${resolve(values.data)}${where}${artifacts})`);
  if (server.metrics === undefined) {
    say.info('svc: GET /metrics is off; set SVC_METRICS_TOKEN (or --metrics-token) to serve it to scrapers that send that token');
  }
  // A precision that depends on the CPU: say what it runs here, as a worker resolved it (measured or from the cache),
  // once a worker has started; requests are served meanwhile. The resolved setting: `auto` given on the command line
  // or in SVC_PRECISION, or the pool's default.
  if (poolOptions().precision === 'auto') {
    runTask<PingResult>({ kind: 'ping' }).then(
      (ping) => say.info(`svc: ${precisionInUse(ping)}`),
      (error: unknown) => say.error(`svc: could not read the precision auto runs: ${(error as Error).message}`),
    );
  }
  const signal = await stopped;
  say.info(`svc: ${signal}, shutting down`);
  await server.close();
  setTimeout(() => process.exit(0), kExitGraceMs).unref();
  return 0;
}
