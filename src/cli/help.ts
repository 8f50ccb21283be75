// What `svc --help`, `svc help <command>` and `svc <command> --help` print. One table, so the
// overview, each command's page and the usage lines printed after a wrong call never disagree.

import { kDefaultModelCacheBytes } from '../artifacts/model-cache.js';
import { kDefaultAdapterCacheBytes } from '../pool/pool.js';
import { kServicePredictQueue } from '../predict/batcher.js';
import { kDefaultRateLimits } from '../server/rate-limit-defaults.js';
import { kDefaultOrgLimits } from '../service/limits.js';
import { kDefaultRetention } from '../service/retention.js';
import { closestName } from '../did-you-mean.js';
import { kClientHelp } from './help-client.js';
import { type CommandHelp, kDataOption, kDatabaseOption, kHelpOption } from './help-options.js';

const kBaseModelOption: [string, string] = [
  '--base-model <name>=<dir>',
  'register a sentence-transformers folder as a base model named <name>, repeatable (or SVC_BASE_MODELS, NAME=DIR,...; see docs/base-models.md)',
];

const kGroups: readonly { title: string; commands: readonly string[] }[] = [
  { title: 'service', commands: ['serve'] },
  {
    title: 'operator (work on the data directory or the database, also while `svc serve` runs)',
    commands: ['orgs', 'keys', 'projects', 'proxy', 'logs'],
  },
  { title: 'client (talk to a running service)', commands: ['train', 'predict', 'classify', 'models', 'shadow', 'pull'] },
  { title: 'other', commands: ['info', 'help'] },
];

const kHelp: Readonly<Record<string, CommandHelp>> = Object.freeze({
  serve: {
    summary: 'run the HTTP service: /v2 routes, the hub and the provider proxy',
    usage: ['serve [--port 8080] [--host 127.0.0.1] [--data <dir>] [options]'],
    options: [
      ['--port <n>', 'the port to listen on (default 8080; 0 picks a free one)'],
      ['--host <host>', 'the address to bind (default 127.0.0.1)'],
      kDataOption,
      kDatabaseOption,
      [
        '--redis <url>',
        'a Redis server for the request counts (rpm per key and per organization, failed logins), shared by replicas, redis://host:port (default $SVC_REDIS_URL; else in the database, or in memory on SQLite)',
      ],
      [
        '--artifacts <dir>',
        'the folder of model files, shared by replicas on one database (default <data>/hub; with --database: in the database)',
      ],
      [
        '--model-cache-mb <n>',
        `with --database and no --artifacts: MiB of model files cached in <data>/model-cache (default ${kDefaultModelCacheBytes / 2 ** 20})`,
      ],
      ['--workers <n>', 'prediction and training worker threads (default min(2, cores))'],
      ['--engine-threads <n>', 'native engine threads per worker (default cores / workers)'],
      [
        '--precision <p>',
        'auto (default: bf16 where it measured faster on this CPU, probabilities within ~0.001 of fp32; else fp32; see svc info), fp32 (equals the exported ONNX model on every CPU), int8 (faster, probabilities within ~0.01) or bf16 (bf16 products on CPUs with them; fp32 elsewhere) for predictions (or SVC_PRECISION)',
      ],
      [
        '--adapter-cache-mb <n>',
        `MiB of LoRA adapters each pool worker keeps in memory, least recently used evicted first (default ${kDefaultAdapterCacheBytes / 2 ** 20}: about 190 rank-8 adapter models)`,
      ],
      [
        '--predict-queue <texts>',
        `predict texts that may wait for a worker; beyond, 503 overloaded (default ${kServicePredictQueue.maxWaitingTexts})`,
      ],
      [
        '--predict-queue-per-org <texts>',
        `predict texts one organization may have waiting; beyond, 429 rate_limited (default ${kServicePredictQueue.maxTenantTexts})`,
      ],
      [
        '--predict-deadline-ms <ms>',
        `how long a predict may take: refused at once (503 overloaded) when the measured speed says it would not end in time, and dropped when its texts have not started by then (default ${kServicePredictQueue.deadlineMs})`,
      ],
      ['--proxy-models <list>', 'provider models GET /v2/models lists (or SVC_PROXY_MODELS), e.g. provider-a:gpt-4o-mini'],
      ['--provider-a-url <url>', 'provider A base URL (or SVC_PROVIDER_A_URL); b and c likewise'],
      ['--provider-a-key <key>', 'provider A key (better: SVC_PROVIDER_A_KEY, which `ps` does not show)'],
      ['--log-level <level>', 'fatal, error, warn, info (default: one JSON line per request), debug, trace or silent (or SVC_LOG_LEVEL)'],
      [
        '--log-format <f>',
        'pretty (short human lines; a line per request only at debug) or json (or SVC_LOG_FORMAT); default pretty on a terminal, json elsewhere',
      ],
      ['--metrics-token <t>', 'serve GET /metrics to scrapers sending this bearer token (better: SVC_METRICS_TOKEN); off without one'],
      ['--request-log-days <n>', `days the proxy request log keeps a row (default ${kDefaultRetention.days})`],
      ['--request-log-max-rows <n>', `request-log rows kept per project, newest first (default ${kDefaultRetention.maxRowsPerProject})`],
      [
        '--failed-auth-limit <n>',
        `failed authentications (wrong keys or metrics tokens) one client address may make per minute; then 429 for its wrong keys, never for a valid one (default ${kDefaultRateLimits.failedAuthPerWindow})`,
      ],
      [
        '--trust-proxy <p>',
        "behind a proxy or load balancer: whose X-Forwarded-For names the client address, true (any), a hop count, or the proxies' addresses and CIDR ranges, comma-separated (or SVC_TRUST_PROXY; default: none)",
      ],
      kBaseModelOption,
      kHelpOption,
    ],
    examples: [
      'svc serve',
      'svc serve --port 9000 --data /var/lib/svc',
      'svc serve --database postgres://svc@db.internal/svc --artifacts /mnt/svc-models --data /var/cache/svc',
      'svc serve --database postgres://svc@db.internal/svc --redis redis://cache.internal:6379',
      'svc serve --host 0.0.0.0 --trust-proxy 10.0.0.0/8',
      'svc serve --base-model e5-small=/models/e5-small-v2 --base-model bge-small=/models/bge-small-en-v1.5',
      'SVC_PROVIDER_A_KEY=sk-... svc serve --proxy-models provider-a:gpt-4o-mini',
    ],
    notes:
      'SIGINT or SIGTERM stops taking requests, lets in-flight ones finish and leaves unfinished\ntraining jobs queued for the next start.',
  },
  orgs: {
    summary: 'create and list organizations, show and set their limits',
    usage: [
      'orgs create <name> [--data <dir>]',
      'orgs list [--data <dir>]',
      'orgs limits <name> [--running <n>] [--queued <n>] [--rpm <n>] [--org-rpm <n>] [--models <n>] [--versions <n>] [--storage-mb <n>] [--data <dir>]',
    ],
    options: [
      ['--running <n>', `training jobs that may run at once (default ${kDefaultOrgLimits.maxRunningJobs})`],
      ['--queued <n>', `training jobs that may wait in the queue (default ${kDefaultOrgLimits.maxQueuedJobs})`],
      ['--rpm <n>', `requests per minute per API key, /v2 and proxy (default ${kDefaultOrgLimits.requestsPerMinute})`],
      ['--org-rpm <n>', "requests per minute of all the organization's keys together (default: --rpm, one key's allowance)"],
      ['--models <n>', `models the organization may keep (default ${kDefaultOrgLimits.maxModels})`],
      ['--versions <n>', `versions one model may keep, its first included (default ${kDefaultOrgLimits.maxVersionsPerModel})`],
      ['--storage-mb <n>', `MiB its models' examples and files may take in all (default ${kDefaultOrgLimits.maxStorageMb})`],
      kDataOption,
      kDatabaseOption,
      kHelpOption,
    ],
    examples: [
      'svc orgs create acme',
      'svc orgs list',
      'svc orgs limits acme',
      'svc orgs limits acme --running 2 --rpm 1200',
      'svc orgs limits acme --rpm 600 --org-rpm 1800',
      'svc orgs limits acme --rpm default',
    ],
    notes: '`orgs limits` prints every limit; `default` in place of a number gives a limit back to the service default.',
  },
  keys: {
    summary: 'create, list and revoke API keys',
    usage: ['keys create --org <org> [--data <dir>]', 'keys list --org <org> [--data <dir>]', 'keys revoke <key-id> [--data <dir>]'],
    options: [['--org <org>', 'the organization the key belongs to'], kDataOption, kDatabaseOption, kHelpOption],
    examples: ['export SVC_KEY=$(svc keys create --org acme)', 'svc keys list --org acme', 'svc keys revoke key_ef6093b1793c'],
    notes: '`keys create` prints the key on stdout (shown only this once) and its id on stderr.',
  },
  projects: {
    summary: 'create projects (the {project_id} of the proxy routes) and set their token budgets',
    usage: ['projects create --org <org> --name <name> [--data <dir>]', 'projects budget <project-id> --tokens <n|none> [--data <dir>]'],
    options: [
      ['--org <org>', 'the organization'],
      ['--name <name>', 'a name for people'],
      ['--tokens <n|none>', 'proxy tokens (input + output) the project may use per calendar month, UTC'],
      kDataOption,
      kDatabaseOption,
      kHelpOption,
    ],
    examples: ['svc projects create --org acme --name "support bot"', 'svc projects budget proj_0123456789ab --tokens 2000000'],
    notes: '`projects create` prints the new project id.',
  },
  proxy: {
    summary: "grant or revoke an organization's use of the provider proxy",
    usage: ['proxy grant --org <org> [--data <dir>]', 'proxy revoke --org <org> [--data <dir>]'],
    options: [['--org <org>', 'the organization'], kDataOption, kDatabaseOption, kHelpOption],
    examples: ['svc proxy grant --org acme', 'svc proxy revoke --org acme'],
  },
  logs: {
    summary: 'prune the proxy request log now (svc serve also prunes it hourly)',
    usage: ['logs prune [--days <n>] [--max-rows <n>] [--data <dir>]'],
    options: [
      ['--days <n>', `delete rows older than n days (default ${kDefaultRetention.days})`],
      ['--max-rows <n>', `keep at most the newest n rows per project (default ${kDefaultRetention.maxRowsPerProject})`],
      kDataOption,
      kDatabaseOption,
      kHelpOption,
    ],
    examples: ['svc logs prune', 'svc logs prune --days 7 --max-rows 10000'],
    notes: 'Prints how many rows went.',
  },
  ...kClientHelp,
  info: {
    summary: 'show the native build, the CPU kernels in use and the base models',
    usage: ['info [--json] [--base-model <name>=<dir> ...]'],
    options: [['--json', 'print it all as one JSON object'], kBaseModelOption, kHelpOption],
    examples: ['svc info', 'SVC_ISA=avx2 svc info --json', 'svc info --base-model e5-small=/models/e5-small-v2'],
  },
  help: {
    summary: "list the commands, or show one command's help",
    usage: ['help [command]'],
    options: [],
    examples: ['svc help', 'svc help train'],
  },
});

/** Every command `svc` knows, in the overview's order. */
export const kCommandNames: readonly string[] = kGroups.flatMap((group) => group.commands);

function table(rows: readonly [string, string][], indent: string): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `${indent}${left.padEnd(width)}  ${right}`).join('\n');
}

/** `usage: svc <form>`, one form a line, for a command's page and after a wrong call. */
export function usageLines(command: string): string {
  return kHelp[command].usage.map((form, i) => `${i === 0 ? 'usage: ' : '       '}svc ${form}`).join('\n');
}

/** `svc --help` / `svc help`. */
export function overview(version: string): string {
  const groups = kGroups.map(
    ({ title, commands }) =>
      `${title}:\n${table(
        commands.map((name) => [name, kHelp[name].summary]),
        '  ',
      )}`,
  );
  return [
    `svc ${version}: train few-shot text classifiers, serve them, proxy chat models`,
    'usage: svc <command> [options]',
    ...groups,
    `options:\n${table(
      [
        ['-h, --help', 'show this help'],
        ['-v, --version', 'print the version'],
      ],
      '  ',
    )}`,
    "Run 'svc <command> --help' (or 'svc help <command>') for a command's options and examples.",
  ].join('\n\n');
}

/** `svc <command> --help` / `svc help <command>`. */
export function commandHelp(command: string): string {
  const help = kHelp[command];
  return [
    `svc ${command}: ${help.summary}`,
    usageLines(command),
    ...(help.options.length > 0 ? [`options:\n${table(help.options, '  ')}`] : []),
    ...(help.notes === undefined ? [] : [help.notes]),
    `examples:\n${help.examples.map((line) => `  ${line}`).join('\n')}`,
  ].join('\n\n');
}

/** The known command closest to a mistyped one (at most two edits away), for "did you mean". */
export function closestCommand(typed: string): string | undefined {
  return closestName(typed.toLowerCase(), kCommandNames, 2);
}

/** Every long option a command's page names, in its usage lines or its options, without its `--`. */
function commandFlags(command: string): Set<string> {
  const help = kHelp[command];
  const text = [...help.usage, ...help.options.map(([flag]) => flag)].join(' ');
  return new Set([...text.matchAll(/--([a-z][a-z0-9-]*)/g)].map((match) => match[1]));
}

/** The option of `command` closest to a mistyped one (`--example` -> `--examples`), for "did you mean". */
export function closestOption(command: string, typed: string): string | undefined {
  if (kHelp[command] === undefined || !typed.startsWith('--')) return undefined;
  const name = closestName(typed.slice(2).split('=')[0], commandFlags(command));
  return name === undefined ? undefined : `--${name}`;
}
