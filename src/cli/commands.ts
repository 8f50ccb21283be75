import { SvcError } from '../errors.js';
import { cpuInfo } from '../native/index.js';

const kUsage = `usage: svc <command> [options]

service:
  serve [--port 8080] [--host 127.0.0.1] [--data ./svc-data] [--workers N] [--engine-threads N]
        [--proxy-models provider-a:name,...] [--provider-a-url URL] [--provider-a-key KEY] (b, c likewise;
        or SVC_PROVIDER_A_URL / SVC_PROVIDER_A_KEY ...)

operator (on the data directory; --data ./svc-data):
  orgs create <name>                      create an organization
  orgs list
  keys create --org <org>                 print a new API key (shown only once)
  keys revoke <key-id>
  keys list --org <org>
  projects create --org <org> --name <n>  print the new project id
  proxy grant --org <org>                 allow the organization to use the provider proxy
  proxy revoke --org <org>

client (against a running service; --url or SVC_URL, --key or SVC_KEY):
  train --examples file.jsonl|csv --label-text "..." [--model svc-small] [--wait]
        [--frozen] [--num-iterations N]      --frozen: head only, no fine-tuning of the encoder
  predict --model <id> "text" ...
  pull <org>/<model_id> [--dir <dir>]

other:
  info      show the native build and the CPU kernels in use
`;

type Command = (args: string[]) => Promise<number>;

// Loaded on demand: `svc keys create` should not pay for Fastify, nor `svc predict` for SQLite.
const kCommands: Readonly<Record<string, () => Promise<Command>>> = Object.freeze({
  serve: async () => (await import('./serve.js')).serveCommand,
  orgs: async () => (await import('./operator.js')).orgsCommand,
  keys: async () => (await import('./operator.js')).keysCommand,
  projects: async () => (await import('./operator.js')).projectsCommand,
  proxy: async () => (await import('./operator.js')).proxyCommand,
  train: async () => (await import('./client.js')).trainCommand,
  predict: async () => (await import('./client.js')).predictCommand,
  pull: async () => (await import('./client.js')).pullCommand,
});

/** Runs one `svc` command line; resolves to the process exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === 'info') {
    console.log(JSON.stringify({ cpu: cpuInfo() }, null, 2));
    return 0;
  }
  if (command === undefined || command === '--help' || command === '-h') {
    console.log(kUsage);
    return command === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(kCommands, command) ? kCommands[command] : undefined;
  if (load === undefined) {
    console.error(`svc: unknown command '${command}'\n\n${kUsage}`);
    return 2;
  }
  try {
    return await (await load())(args);
  } catch (error) {
    // Bad flags (parseArgs), service errors and failed calls: one line, no stack.
    const message = error instanceof Error ? error.message : String(error);
    console.error(`svc ${command}: ${message}`);
    return error instanceof TypeError && !(error instanceof SvcError) ? 2 : 1;
  }
}
