import { cpuInfo } from '../native/index.js';

const kUsage = `usage: svc <command>

commands:
  info      show the native build and the CPU kernels in use
`;

/** Runs one `svc` command line; resolves to the process exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case 'info':
      console.log(JSON.stringify({ cpu: cpuInfo() }, null, 2));
      return 0;
    case undefined:
    case '--help':
    case '-h':
      console.log(kUsage);
      return command === undefined ? 2 : 0;
    default:
      console.error(`svc: unknown command '${command}'\n\n${kUsage}`);
      return 2;
  }
}
