// What `svc --help`, `svc help <command>` and `svc <command> --help` print. One table, so the
// overview, each command's page and the usage lines printed after a wrong call never disagree.

import { kDefaultModelCacheBytes } from '../artifacts/model-cache.js';
import { kDefaultAdapterCacheBytes } from '../pool/pool.js';
import { kServicePredictQueue } from '../predict/batcher.js';
import { kDefaultRateLimits } from '../server/rate-limit-defaults.js';
import { kDefaultOrgLimits } from '../service/limits.js';
import { kDefaultRetention } from '../service/retention.js';
import { kDefaultAdapterRank, kDefaultFinetuneMethod, kMaxRequestAdapterRank } from '../contract/train-request.js';

interface CommandHelp {
  /** One line for the overview. */
  summary: string;
  /** The command's forms, each without the leading `svc `. */
  usage: string[];
  /** [flag, what it does] pairs. */
  options: [string, string][];
  examples: string[];
  /** Anything else worth a paragraph (formats, defaults). */
  notes?: string;
}

const kDataOption: [string, string] = ['--data <dir>', 'the data directory (default ./svc-data)'];
const kDatabaseOption: [string, string] = [
  '--database <url>',
  'a PostgreSQL database shared by replicas, postgres://... (default $SVC_DATABASE_URL); --data is then a local cache',
];
const kConnectionOptions: [string, string][] = [
  ['--url <url>', 'the service (default $SVC_URL, else http://127.0.0.1:8080)'],
  ['--key <key>', 'an API key from `svc keys create` (default $SVC_KEY)'],
];
const kHelpOption: [string, string] = ['-h, --help', 'show this help'];

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
      kHelpOption,
    ],
    examples: [
      'svc serve',
      'svc serve --port 9000 --data /var/lib/svc',
      'svc serve --database postgres://svc@db.internal/svc --artifacts /mnt/svc-models --data /var/cache/svc',
      'svc serve --database postgres://svc@db.internal/svc --redis redis://cache.internal:6379',
      'svc serve --host 0.0.0.0 --trust-proxy 10.0.0.0/8',
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
  train: {
    summary: 'train a classifier from an examples file',
    usage: [
      'train --examples <file> [--label-text "..."] [--task-type <type>] [--balanced] [--model svc-small] [--frozen | --finetune adapter|full [--rank <r>]] [--num-iterations <n>] [--truncate <mode>] [--version-of <id>] [--wait]',
      'train --teacher provider-a:<name> --project <id> --texts <file> (--label-text "..." | --labels <a,b,...>) [--task-type <type>] [--instructions "..."] [--texts-per-call <n>] [--budget <n>] [--frozen] [--wait]',
      'train --from-log --project <id> (--label-text "..." | --labels <a,b,...>) (--label-pointer P | --label-regex R [--label-flags i] | --label-words \'label=w1,w2;label2=w3\') [--since T] [--until T] [--log-model <proxied model>] [--text-pointer P] [--holdout 0.2] [--frozen] [--wait]',
    ],
    options: [
      ['--examples <file>', 'the labelled examples (formats below)'],
      ['--label-text "..."', 'binary: what label true means, e.g. "positive review" (else each row\'s label_text)'],
      ['--task-type <type>', 'binary-classification (default), multi-class-classification or multi-label-classification'],
      ['--balanced', "multi-class and multi-label: class_weight 'balanced', for skewed examples"],
      ['--model <name>', 'the base model (default svc-small)'],
      ['--frozen', 'fit the head on the frozen encoder only; no fine-tuning'],
      [
        '--finetune adapter|full',
        `adapter: a LoRA adapter on the frozen base (~0.7 MB a model); full: the whole encoder (~90 MB); default ${kDefaultFinetuneMethod}`,
      ],
      ['--rank <r>', `with --finetune adapter: the adapter's rank (default ${kDefaultAdapterRank}, at most ${kMaxRequestAdapterRank})`],
      ['--num-iterations <n>', 'fine-tuning pair rounds per example (default 20)'],
      ['--truncate <mode>', 'examples past 256 tokens: end (default), start, none (refused) or chunks (the head reads them whole)'],
      [
        '--version-of <id>',
        'train the next version of that classifier (not live until svc models promote); sends it as model_id and prints the model object <id>@<n>',
      ],
      ['--teacher <model>', 'a chat model, as the proxy names it, labels the texts of --texts instead (docs/teacher.md)'],
      ['--project <id>', "with --teacher: the project whose proxy the teacher's calls go through, logged and budgeted"],
      ['--texts <file>', 'with --teacher: the texts to label, one a line (.txt), JSON Lines of {"text": ...}, or a JSON array'],
      ['--labels <a,b,...>', 'with --teacher: the class or label names (multi-class, multi-label)'],
      ['--instructions "..."', 'with --teacher: what the labels mean, in words'],
      ['--texts-per-call <n>', 'with --teacher: texts labelled in one call (default 10)'],
      ['--budget <n>', 'with --teacher: label at most n of the texts'],
      ['--from-log', "the examples are the project's logged chat calls (--project): each call's text and its reply's label"],
      ['--label-pointer <P>', 'with --from-log: the label is at this JSON pointer of the reply parsed as JSON (e.g. /label)'],
      ['--label-regex <R>', "with --from-log: the label is this regex's first capture group or whole match (--label-flags i: any case)"],
      ['--label-words <W>', 'with --from-log: label=word,word;label=word (binary: true=yes;false=no), matched whole, any case'],
      ['--since <T>', 'with --from-log: calls from T on (ISO-8601 such as 2026-11-01 or 2026-11-01T09:00:00Z, or unix ms)'],
      ['--until <T>', 'with --from-log: calls before T (default now)'],
      ['--log-model <name>', 'with --from-log: only calls to this proxied model as clients send it (provider-a:gpt-4o-mini)'],
      ['--text-pointer <P>', "with --from-log: the call's text at this JSON pointer of the request (default: the last user message)"],
      ['--holdout <share>', 'with --from-log: share of the labelled calls kept back to measure agreement (default 0.2, at most 0.5)'],
      ['--wait', 'poll until trained, showing the stage and the loss (the tokens spent while a teacher labels) on stderr'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: [
      'svc train --examples examples/train.jsonl --wait',
      'svc train --teacher provider-a:gpt-4o-mini --project proj_0123456789ab --texts tickets.txt --label-text "billing question" --wait',
      'svc train --examples reviews.csv --label-text spam --frozen',
      'svc train --examples reviews.csv --label-text spam --finetune adapter --rank 8 --wait',
      'svc train --examples train.json --wait        # the JSON body POST /v2/train takes',
      'svc train --examples tickets.csv --task-type multi-class-classification --frozen --wait',
      'svc train --examples tags.jsonl --task-type multi-label-classification --wait',
      "svc train --from-log --project proj_0123456789ab --label-text 'billing question' --label-regex '^(yes|no)' --label-flags i --frozen --wait",
    ],
    notes:
      'Examples files: JSONL, one {"text": "...", "label": true} per line; CSV or TSV with a header\n' +
      'naming the text and label columns (and optionally label_text), delimited by comma, semicolon\n' +
      'or tab (detected from the header); a JSON array of examples; or a /v2/train body\n' +
      '{"examples": [...]}. Labels are true/false, 1/0 or yes/no. Multi-class: label names the class\n' +
      '(at least 8 examples each). Multi-label: a labels column, a JSON array per example, or in CSV\n' +
      'names separated by | (an empty cell: no label). Prints the model object.\n' +
      "--from-log: calls whose label cannot be read are skipped and sampled in the model's training_data;\n" +
      'its evaluation report is the agreement with the chat model on the held-out calls (docs/cli.md).',
  },
  models: {
    summary:
      "list the trained models, show one with its labels and metrics, list its versions, promote one, show a version's evaluation report, or delete",
    usage: [
      'models list',
      'models show <id>[@<n>]',
      'models versions <id>',
      'models promote <id> <n>',
      'models evaluation <id>[@<n>]',
      'models delete <id>[@<n>]',
    ],
    options: [...kConnectionOptions, kHelpOption],
    examples: [
      'svc models list',
      'svc models show svc-small-5b8257b3efa7',
      'svc models versions svc-small-5b8257b3efa7',
      'svc models promote svc-small-5b8257b3efa7 2',
      'svc models evaluation svc-small-5b8257b3efa7@2',
      'svc models delete svc-small-5b8257b3efa7@2',
    ],
    notes:
      'Prints the model objects. A trained model has metrics: train_accuracy, cv_accuracy and cv_macro_f1\n' +
      '(stratified k-fold cross-validation of the head on the training examples, cv_folds folds),\n' +
      "cv_encoder ('trained': measured on the model's own encoder, frozen models; 'base': on the base\n" +
      'encoder, fine-tuned models, a conservative estimate since their encoder saw every example), and\n' +
      'validation_accuracy and validation_macro_f1 when the train request sent a validation set.\n' +
      'delete removes the model and its hub copy and prints {id, object, deleted: true}.\n' +
      'Versions: `svc train --version-of <id>` trains the next version of a classifier (same task\n' +
      'type and labels); it is not live until `svc models promote <id> <n>`, and promoting an older\n' +
      'one rolls back. <id>@<n> names version n (predict --model takes it too); delete <id>@<n>\n' +
      "removes only that version (not the live one, not version 1). evaluation prints a version's report\n" +
      '(confusion matrix, per-label scores, binary thresholds and calibration): on its validation set,\n' +
      'else from the cross-validation of its examples (source says which).',
  },
  predict: {
    summary: 'classify texts with a trained model',
    usage: ['predict --model <id> [--truncate <mode>] [--explain <k>] "text" ...'],
    options: [
      ['--model <id>', 'the model id `svc train` printed'],
      ['--truncate <mode>', 'texts past 256 tokens: end (default), start, none (refused) or chunks (read whole in windows)'],
      ['--explain <k>', 'add the k training examples nearest each text, with their labels and similarity'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: ['svc predict --model svc-small-5b8257b3efa7 "A moving story." "Two hours I will never get back."'],
    notes:
      'Prints {model, label_text, predictions: [{label, probability}]} (multi-class: label, probability and\n' +
      'scores by class; multi-label: labels and scores). Texts starting with - go after --.',
  },
  classify: {
    summary: 'classify texts by examples sent with them, or by label names, with no model trained',
    usage: [
      'classify (--examples <file> | --labels <a,b,...> | --label-text <text>) [--task-type <type>] [--truncate <mode>] [--explain <k>] "text" ...',
    ],
    options: [
      ['--examples <file>', 'labelled examples, in any format svc train reads (at least 2 per label, at most 2,500)'],
      ['--labels <a,b,...>', 'no examples: zero-shot from these class names (multi-class, or multi-label with --task-type)'],
      ['--label-text <text>', 'no examples: zero-shot binary, what label true means; with --examples, as for svc train'],
      ['--task-type <type>', 'binary-classification, multi-class-classification or multi-label-classification'],
      ['--model <name>', 'base encoder (default svc-small)'],
      ['--truncate <mode>', 'texts past 256 tokens: end (default), start, none (refused) or chunks (read whole in windows)'],
      ['--explain <k>', 'add the k examples nearest each text, with their labels and similarity'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: [
      'svc classify --examples reviews.jsonl "A moving story."',
      'svc classify --labels sports,economy "The striker scored twice."',
    ],
    notes: "Prints the /v2/classify answer: predict's shape, with zero_shot (docs/classify.md). At most 96 texts.",
  },
  shadow: {
    summary: "run a classifier beside a project's proxied model and see how often it agrees with the chat model",
    usage: [
      'shadow set --project <id> --model <proxied model> --classifier <id> (--label-pointer P | --label-regex R | --label-words W) [--text-pointer P]',
      'shadow list --project <id>',
      'shadow remove --project <id> --model <proxied model>',
      'shadow stats --project <id> [--window 1h|24h|7d|30d] [--model <proxied model>]',
    ],
    options: [
      ['--project <id>', 'the project whose proxied calls are shadowed'],
      ['--model <name>', 'the proxied model as clients send it, e.g. provider-a:gpt-4o-mini'],
      ['--classifier <id>', 'a classifier of your organization; its live version answers'],
      ['--label-pointer <P>', 'the label is at this JSON pointer of the reply (e.g. /label)'],
      ['--label-regex <R>', "the label is this regex's first group (--label-flags i for case)"],
      ['--label-words <W>', 'label=word,word;label=word (binary: true=yes;false=no)'],
      ['--text-pointer <P>', "the call's text: a JSON pointer into the request (default: the last user message)"],
      ['--window <w>', 'stats over the last 1h or 24h (by hour), 7d (default) or 30d (by day)'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: [
      "svc shadow set --project proj_0123456789ab --model provider-a:gpt-4o-mini --classifier svc-small-5b8257b3efa7 --label-words 'true=yes;false=no'",
      'svc shadow stats --project proj_0123456789ab --window 24h',
    ],
    notes:
      "Each proxied call of the model is classified off the request path and compared with the chat model's\n" +
      'label read by the rule (docs/proxy.md, "Shadow classifier"). stats prints agreement by hour or day,\n' +
      "the classifier's p50 latency, and the tokens and chat time it would have saved. Setting one needs\n" +
      'proxy access.',
  },
  pull: {
    summary: "download a model directory from the service's hub",
    usage: ['pull <org>/<model_id> [--dir <dir>]'],
    options: [['--dir <dir>', 'where to write it (default ./<model_id>)'], ...kConnectionOptions, kHelpOption],
    examples: ['svc pull acme/svc-small-5b8257b3efa7 --dir ./model'],
    notes: 'Prints the directory. It loads in transformers.js and with Classifier.load.',
  },
  info: {
    summary: 'show the native build and the CPU kernels in use',
    usage: ['info'],
    options: [kHelpOption],
    examples: ['svc info', 'SVC_ISA=avx2 svc info'],
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
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of kCommandNames) {
    const distance = editDistance(typed.toLowerCase(), name);
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
