import { environment } from '../environment.js';
import { closestName } from '../did-you-mean.js';
import { SvcError } from '../errors.js';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';

import { cpuInfo } from '../native/index.js';
import { kernelChoice } from '../native/kernel-choice.js';
import { assertServerPackages } from '../optional-deps.js';
import { packageVersion } from '../version.js';
import { baseModelInfo, baseModelRows, infoBaseModels } from './base-models.js';
import { closestCommand, closestOption, commandHelp, kCommandNames, overview } from './help.js';

type Command = (args: string[]) => Promise<number>;

// Loaded on demand: `svc keys create` should not pay for Fastify, nor `svc predict` for SQLite.
const kCommands: Readonly<Record<string, () => Promise<Command>>> = Object.freeze({
  serve: async () => {
    assertServerPackages(); // every missing package named at once, not the loader's first miss
    return (await import('./serve.js')).serveCommand;
  },
  orgs: async () => (await import('./operator.js')).orgsCommand,
  keys: async () => (await import('./operator.js')).keysCommand,
  projects: async () => (await import('./operator.js')).projectsCommand,
  proxy: async () => (await import('./operator.js')).proxyCommand,
  logs: async () => (await import('./operator.js')).logsCommand,
  train: async () => (await import('./client.js')).trainCommand,
  predict: async () => (await import('./client.js')).predictCommand,
  classify: async () => (await import('./client.js')).classifyCommand,
  models: async () => (await import('./client.js')).modelsCommand,
  pull: async () => (await import('./client.js')).pullCommand,
  shadow: async () => (await import('./shadow.js')).shadowCommand,
  info: async () => infoCommand,
});

async function infoCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'boolean' }, 'base-model': { type: 'string', multiple: true } },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const baseModels = infoBaseModels(values['base-model']).map(baseModelInfo);
  // The kernel choice on as many threads as the pool's predicting encoders use by default (every core): measured
  // once on this CPU, then read from the cache. `precision.auto` is what `--precision auto` runs here.
  const kernels = kernelChoice(availableParallelism());
  const cpu = cpuInfo();
  if (values.json) {
    const info = { version: packageVersion(), cpu, precision: { auto: kernels.precision }, kernels, base_models: baseModels };
    console.log(JSON.stringify(info, null, 2));
    return 0;
  }
  const features = Object.entries(cpu).filter(([name, on]) => name !== 'level' && on === true);
  const rates = kernels.rates.map((r) => `${r.kernel} ${r.gflops.toFixed(1)} GFLOP/s`).join(', ');
  console.log(
    [
      `svc ${packageVersion()}`,
      `cpu: ${cpu.level} (${features.map(([name]) => name).join(', ') || 'no vector extensions'})`,
      `precision auto: ${kernels.precision} (kernel ${kernels.kernel}, ${kernels.source}${rates ? `: ${rates}` : ''})`,
      `base models:\n${baseModelRows(baseModels)}`,
    ].join('\n'),
  );
  return 0;
}

/** `svc help [command]`; `svc --help`. */
function helpCommand(args: string[]): number {
  if (args.length === 0) {
    console.log(overview(packageVersion()));
    return 0;
  }
  if (args.length > 1) {
    console.error(`svc help: unexpected argument '${args[1]}'\nusage: svc help [command]`);
    return 2;
  }
  if (!kCommandNames.includes(args[0])) return unknownCommand(args[0]);
  console.log(commandHelp(args[0]));
  return 0;
}

/** A wrong command line, as opposed to a failed operation: exit code 2 and a pointer to --help. */
class UsageError extends Error {}

function unknownCommand(command: string): number {
  const suggestion = closestCommand(command);
  console.error(`svc: unknown command '${command}'${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}`);
  console.error("Run 'svc --help' for the list of commands.");
  return 2;
}

/** `--help` / `-h` anywhere before `--` (after it, `-h` is a text to classify). */
function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/**
 * The wrong-command-line part of an error, or undefined for a failure of the operation itself.
 * node:util parseArgs's own messages suggest `-- "--flag"` with an unbalanced quote; say it plainly.
 */
function usageProblem(error: unknown, command: string): string | undefined {
  if (error instanceof UsageError || (error instanceof RangeError && !(error instanceof SvcError))) return error.message;
  const code = (error as { code?: unknown } | null)?.code;
  if (!(error instanceof TypeError) || typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return undefined;
  const quoted = /'([^']*)'/.exec(error.message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && quoted !== undefined) {
    const suggestion = closestOption(command, quoted);
    return `unknown option '${quoted}'${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}`;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && quoted !== undefined) return `unexpected argument '${quoted}'`;
  // ERR_PARSE_ARGS_INVALID_OPTION_VALUE: "Option '--model <value>' argument missing" and the like.
  return error.message.charAt(0).toLowerCase() + error.message.slice(1);
}

/** The caps `SVC_ISA` takes (native/core/cpu_features.cc); the engine ignores any other value, so the CLI refuses it. */
const kIsaCaps = Object.freeze(['scalar', 'avx2', 'avx2-vnni', 'avx512', 'avx512-vnni', 'neon']);

/** A wrong `SVC_ISA`, said before a command runs on kernels other than the ones asked for; undefined when fine. */
function isaProblem(): string | undefined {
  const cap = environment().isa;
  if (cap === undefined || kIsaCaps.includes(cap)) return undefined;
  return `svc: SVC_ISA must be one of ${kIsaCaps.join(', ')} (or unset); got '${cap}'`;
}

/** Runs one `svc` command line; resolves to the process exit code (0 done, 1 failed, 2 wrong usage). */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined) {
    console.error(overview(packageVersion()));
    return 2;
  }
  if (command === '--help' || command === '-h') return helpCommand([]);
  if (command === '--version' || command === '-v') {
    console.log(packageVersion());
    return 0;
  }
  if (command.startsWith('-')) {
    const suggestion = command.startsWith('--') ? closestName(command.slice(2), ['help', 'version']) : undefined;
    console.error(`svc: unknown option '${command}'${suggestion === undefined ? '' : ` (did you mean '--${suggestion}'?)`}`);
    console.error("Run 'svc --help' for the commands and options.");
    return 2;
  }
  if (command === 'help' && !wantsHelp(args)) return helpCommand(args);
  if (!kCommandNames.includes(command)) return unknownCommand(command);
  const pointer = `Run 'svc ${command} --help' for its options and examples.`;
  if (wantsHelp(args)) {
    console.log(commandHelp(command));
    return 0;
  }
  const isa = isaProblem();
  if (isa !== undefined) {
    console.error(isa);
    return 2;
  }
  try {
    const code = await (await kCommands[command]())(args);
    // The command printed its usage lines; say where the whole story is.
    if (code === 2) console.error(pointer);
    return code;
  } catch (error) {
    const problem = usageProblem(error, command);
    if (problem !== undefined) {
      console.error(`svc ${command}: ${problem}\n${pointer}`);
      return 2;
    }
    // Service errors and failed calls: one line, no stack.
    console.error(`svc ${command}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
