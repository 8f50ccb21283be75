// The shape of one command's help page and the options several commands share (help.ts, help-client.ts).

export interface CommandHelp {
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

export const kDataOption: [string, string] = ['--data <dir>', 'the data directory (default ./svc-data)'];
export const kDatabaseOption: [string, string] = [
  '--database <url>',
  'a PostgreSQL database shared by replicas, postgres://... (default $SVC_DATABASE_URL); --data is then a local cache',
];
export const kConnectionOptions: [string, string][] = [
  ['--url <url>', 'the service (default $SVC_URL, else http://127.0.0.1:8080)'],
  ['--key <key>', 'an API key from `svc keys create` (default $SVC_KEY)'],
];
export const kHelpOption: [string, string] = ['-h, --help', 'show this help'];
