// `npm run bench -- tokenizer [--json] [--rounds N]`: svc-classify's native
// tokenizer against Hugging Face `tokenizers` (Rust via napi: encodeBatch and
// encode) and `@huggingface/tokenizers` (the JS tokenizer of transformers.js),
// on the same texts, single-threaded, side by side in one process.
import { readFileSync } from 'node:fs';

import { Tokenizer } from '../src/index.js';
import { resolveBaseModel } from '../src/model/base-models.js';
import { allUciTexts, emailBodies } from '../fixtures/corpora.js';

// The reference parallelizes encodeBatch with rayon; pin it to one thread
// before it loads, so every implementation runs on one core.
process.env.RAYON_NUM_THREADS = '1';
process.env.TOKENIZERS_PARALLELISM = 'false';

interface Impl {
  name: string;
  /** Tokenizes every text once; returns the number of ids produced. */
  run(texts: string[], maxLength: number): Promise<number> | number;
}

interface Corpus {
  name: string;
  texts: string[];
  maxLength: number;
}

export interface Rate {
  textsPerSec: number;
  tokensPerSec: number;
}

async function implementations(): Promise<Impl[]> {
  const model = resolveBaseModel('svc-small');
  const ours = Tokenizer.fromFile(model.tokenizerFile);
  const { Tokenizer: HfTokenizer } = await import('tokenizers');
  const hf = HfTokenizer.fromFile(model.tokenizerFile);
  hf.disablePadding();
  let hfMaxLength = 0;
  const setHfTruncation = (maxLength: number) => {
    if (maxLength === hfMaxLength) return;
    hf.setTruncation(maxLength);
    hfMaxLength = maxLength;
  };
  const { Tokenizer: JsTokenizer } = await import('@huggingface/tokenizers');
  const js = new JsTokenizer(JSON.parse(readFileSync(model.tokenizerFile, 'utf8')), {});
  return [
    { name: 'svc-classify encodeBatch', run: (texts, maxLength) => ours.encodeBatch(texts, { maxLength }).ids.length },
    {
      name: 'svc-classify encode',
      run: (texts, maxLength) => texts.reduce((n, text) => n + ours.encode(text, { maxLength }).length, 0),
    },
    {
      name: 'tokenizers encodeBatch',
      run: async (texts, maxLength) => {
        setHfTruncation(maxLength);
        const encodings = await hf.encodeBatch(texts);
        return encodings.reduce((n, e) => n + e.getIds().length, 0);
      },
    },
    {
      name: 'tokenizers encode',
      run: async (texts, maxLength) => {
        setHfTruncation(maxLength);
        let n = 0;
        for (const text of texts) n += (await hf.encode(text)).getIds().length;
        return n;
      },
    },
    {
      // It has no truncation option: it tokenizes the whole text and we keep maxLength ids, as transformers.js does.
      name: '@huggingface/tokenizers encode',
      run: (texts, maxLength) => texts.reduce((n, text) => n + Math.min(js.encode(text).ids.length, maxLength), 0),
    },
  ];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

// Runs the implementations in turn, round after round (so machine noise hits
// all of them alike), and keeps each one's median pass time.
async function measure(impls: Impl[], corpus: Corpus, rounds: number): Promise<Record<string, Rate>> {
  const tokens = new Map<string, number>();
  for (const impl of impls) tokens.set(impl.name, await impl.run(corpus.texts, corpus.maxLength)); // warm-up
  // Same texts, same work: every implementation must produce as many ids as ours.
  const expected = tokens.get(impls[0]!.name);
  for (const [name, count] of tokens) {
    if (count !== expected) process.stderr.write(`warning: ${name} produced ${count} ids on ${corpus.name}, ours ${expected}\n`);
  }
  const times = new Map<string, number[]>(impls.map((impl) => [impl.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const impl of impls) {
      const start = process.hrtime.bigint();
      await impl.run(corpus.texts, corpus.maxLength);
      times.get(impl.name)!.push(Number(process.hrtime.bigint() - start) / 1e9);
    }
  }
  const out: Record<string, Rate> = {};
  for (const impl of impls) {
    const seconds = median(times.get(impl.name)!);
    out[impl.name] = {
      textsPerSec: corpus.texts.length / seconds,
      tokensPerSec: tokens.get(impl.name)! / seconds,
    };
  }
  return out;
}

function table(results: Record<string, Record<string, Rate>>): string {
  const lines: string[] = [];
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  for (const [corpus, rates] of Object.entries(results)) {
    const ours = rates['svc-classify encodeBatch']!;
    lines.push(`\n${corpus}`);
    lines.push(`| implementation | texts/s | tokens/s | svc-classify encodeBatch ÷ this |`);
    lines.push(`|---|---:|---:|---:|`);
    for (const [name, rate] of Object.entries(rates)) {
      const ratio = `${(ours.textsPerSec / rate.textsPerSec).toFixed(1)}x`;
      lines.push(`| ${name} | ${fmt(rate.textsPerSec)} | ${fmt(rate.tokensPerSec)} | ${ratio} |`);
    }
  }
  return lines.join('\n');
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const roundsAt = args.indexOf('--rounds');
  const rounds = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 5;
  const impls = await implementations();
  const emails = emailBodies(1000);
  const corpora: Corpus[] = [
    { name: 'uci-sentences', texts: allUciTexts(), maxLength: 256 },
    { name: 'email-bodies', texts: emails, maxLength: 256 },
    // Whole texts, no truncation: how fast the full pipeline runs when nothing can be skipped.
    { name: 'email-bodies-untruncated', texts: emails, maxLength: 100_000 },
  ];
  const results: Record<string, Record<string, Rate>> = {};
  for (const corpus of corpora) {
    if (!json) process.stderr.write(`measuring ${corpus.name} (${corpus.texts.length} texts, maxLength ${corpus.maxLength})...\n`);
    results[corpus.name] = await measure(impls, corpus, rounds);
  }
  if (json) {
    console.log(JSON.stringify({ corpora: results }, null, 2));
  } else {
    console.log(`single thread, ${rounds} rounds, median pass${table(results)}`);
  }
}
