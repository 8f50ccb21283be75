// `npm run bench -- tokenizer-unigram [--json] [--rounds N]`: the native
// SentencePiece Unigram tokenizer against Hugging Face `tokenizers` (Rust via
// napi) on the XLM-R-layout fixtures, single-threaded, side by side in one
// process, on multilingual text (the messages of zod's locales, some forty
// languages) and on English sentences.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Tokenizer } from '../src/index.js';
import { allUciTexts } from '../fixtures/corpora.js';

// The reference parallelizes encodeBatch with rayon; pin it to one thread before it loads.
process.env.RAYON_NUM_THREADS = '1';
process.env.TOKENIZERS_PARALLELISM = 'false';

const kFixtures = ['unigram-xlmr.json', 'unigram-byte-fallback.json'];
const kMaxLength = 512;

/** The string literals of zod's locale files: short messages in many scripts. */
function localeMessages(): string[] {
  const dir = join(process.cwd(), 'node_modules/zod/v4/locales');
  const literal = /(["'`])((?:\\.|(?!\1).)*)\1/g;
  const out = new Set<string>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .sort()) {
    for (const match of readFileSync(join(dir, file), 'utf8').matchAll(literal)) {
      const text = match[2]!;
      if (text.length >= 12 && !text.startsWith('.')) out.add(text);
    }
  }
  return [...out];
}

interface Impl {
  name: string;
  run(texts: string[]): Promise<number> | number;
}

async function implementations(path: string): Promise<Impl[]> {
  const ours = Tokenizer.fromFile(path);
  const { Tokenizer: HfTokenizer } = await import('tokenizers');
  const hf = HfTokenizer.fromFile(path);
  hf.disablePadding();
  hf.setTruncation(kMaxLength);
  return [
    { name: 'svc-classify encodeBatch', run: (texts) => ours.encodeBatch(texts, { maxLength: kMaxLength }).ids.length },
    {
      name: 'svc-classify encode',
      run: (texts) => texts.reduce((n, text) => n + ours.encode(text, { maxLength: kMaxLength }).length, 0),
    },
    {
      name: 'tokenizers encodeBatch',
      run: async (texts) => (await hf.encodeBatch(texts)).reduce((n, e) => n + e.getIds().length, 0),
    },
    {
      name: 'tokenizers encode',
      run: async (texts) => {
        let n = 0;
        for (const text of texts) n += (await hf.encode(text)).getIds().length;
        return n;
      },
    },
  ];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

// Round after round over every implementation, so machine noise hits them alike; the median pass.
async function measure(impls: Impl[], texts: string[], rounds: number) {
  const tokens = new Map<string, number>();
  for (const impl of impls) tokens.set(impl.name, await impl.run(texts));
  const expected = tokens.get(impls[0]!.name);
  for (const [name, count] of tokens) {
    if (count !== expected) process.stderr.write(`warning: ${name} produced ${count} ids, ours ${expected}\n`);
  }
  const times = new Map<string, number[]>(impls.map((impl) => [impl.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const impl of impls) {
      const start = process.hrtime.bigint();
      await impl.run(texts);
      times.get(impl.name)!.push(Number(process.hrtime.bigint() - start) / 1e9);
    }
  }
  return impls.map((impl) => {
    const seconds = median(times.get(impl.name)!);
    return { name: impl.name, textsPerSec: texts.length / seconds, tokensPerSec: tokens.get(impl.name)! / seconds };
  });
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const roundsAt = args.indexOf('--rounds');
  const rounds = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 5;
  const corpora = [
    { name: 'zod-locale-messages', texts: localeMessages() },
    { name: 'uci-sentences', texts: allUciTexts() },
  ];
  const results: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  for (const fixture of kFixtures) {
    const impls = await implementations(join(process.cwd(), 'test/fixtures/tokenizers', fixture));
    for (const corpus of corpora) {
      const key = `${fixture} / ${corpus.name} (${corpus.texts.length} texts)`;
      if (!json) process.stderr.write(`measuring ${key}...\n`);
      results[key] = await measure(impls, corpus.texts, rounds);
    }
  }
  if (json) {
    console.log(JSON.stringify({ corpora: results }, null, 2));
    return;
  }
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const lines = [`single thread, ${rounds} rounds, median pass, maxLength ${kMaxLength}`];
  for (const [key, rates] of Object.entries(results)) {
    const ours = rates[0]!;
    lines.push('', key, '| implementation | texts/s | tokens/s | svc-classify encodeBatch ÷ this |', '|---|---:|---:|---:|');
    for (const rate of rates) {
      lines.push(
        `| ${rate.name} | ${fmt(rate.textsPerSec)} | ${fmt(rate.tokensPerSec)} | ${(ours.textsPerSec / rate.textsPerSec).toFixed(1)}x |`,
      );
    }
  }
  console.log(lines.join('\n'));
}
