// The layers of src/, bottom to top, and the test that keeps imports running down them. A folder
// may import its own files and any folder (or root file) of a lower layer; an import that runs up
// or sideways fails here, naming both files. Type-only imports count too: a type
// that runs up still ties the lower layer's meaning to the upper one. Why this order is in
// CONTRIBUTING.md ("Layers").
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const kSrc = fileURLToPath(new URL('../../src', import.meta.url));
const kNativeCore = fileURLToPath(new URL('../../native/core', import.meta.url));

/**
 * Each unit of src/ (a folder, or a root file by name) and its layer. Distinct folders share a layer
 * only when neither imports the other.
 */
const kLayers: Readonly<Record<string, number>> = Object.freeze({
  // The leaves every layer may use: one error class, "did you mean", the zod-issue wording, argument checks, seeds,
  // trace channels, the environment variables.
  'errors.ts': 0,
  'did-you-mean.ts': 0,
  'parse.ts': 1,
  'is.ts': 1,
  'random.ts': 1,
  'telemetry.ts': 1,
  'environment.ts': 1,
  // Zod schemas, limits, the model object, the manifest: what users and other tools read.
  contract: 2,
  // The model directory format, base models, the hub.
  model: 3,
  // Talking to a chat model as a labeller and reading what logged calls classified: prompts, replies, labels.
  teacher: 3,
  // The addon's contract and loader; the two root files that find the package's folder through it.
  native: 4,
  'version.ts': 5,
  'optional-deps.ts': 5,
  // Which thread runs native work (main-thread side), and the stores (which know nothing of models).
  pool: 6,
  store: 6,
  predict: 7,
  // Training ends by loading the classifier it wrote, so it sits above predict.
  train: 8,
  artifacts: 9,
  // The pool's worker threads: they run the kernels predict/ and train/ define (the head, the head fit, fine-tuning's
  // pairs) on the tasks pool/ schedules, so they sit above all three. pool/ names the entry by file, never imports it.
  worker: 9,
  // The library's entry: train, Classifier, pool settings; never the service.
  'index.ts': 10,
  service: 11,
  proxy: 12,
  server: 13,
  cli: 14,
});

/**
 * Imports that run up today, each with why it stays for now. None is left; the test fails when one is fixed and
 * still listed, so a new entry here is a debt with a reason, and the list only shrinks.
 */
const kKnownExceptions: ReadonlyArray<{ from: string; to: string; why: string }> = [];

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

/** `model/hub.ts` -> `model`; a root file is its own unit. */
function unitOf(file: string): string {
  return file.split('/')[0];
}

/** Every relative import of src/ as `from -> to` (paths relative to src/, `.ts`), type-only and dynamic ones included. */
function importEdges(): { from: string; to: string }[] {
  const edges: { from: string; to: string }[] = [];
  for (const path of sourceFiles(kSrc)) {
    const from = relative(kSrc, path).split('\\').join('/');
    const info = ts.preProcessFile(readFileSync(path, 'utf8'), true, true);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = normalize(join(dirname(from), fileName))
        .split('\\')
        .join('/')
        .replace(/\.js$/, '.ts');
      edges.push({ from, to });
    }
  }
  return edges;
}

function layerOf(unit: string): number {
  const layer = kLayers[unit];
  if (layer === undefined) throw new Error(`src/${unit} has no layer: add it to kLayers in test/package/layers.test.ts`);
  return layer;
}

/** The listed exceptions that match no import any more, as `from -> to`. */
function staleExceptions(listed: typeof kKnownExceptions, edges: readonly { from: string; to: string }[]): string[] {
  return listed
    .filter((known) => !edges.some((edge) => edge.from === known.from && edge.to === known.to))
    .map((known) => `${known.from} -> ${known.to}`);
}

const isKnown = (edge: { from: string; to: string }) => kKnownExceptions.some((known) => known.from === edge.from && known.to === edge.to);

describe('layers of src/', () => {
  const edges = importEdges();

  it('has a layer for every folder and root file', () => {
    const units = new Set(edges.flatMap((edge) => [unitOf(edge.from), unitOf(edge.to)]));
    for (const entry of readdirSync(kSrc)) units.add(entry);
    expect([...units].filter((unit) => kLayers[unit] === undefined)).toEqual([]);
  });

  it('imports only down the layers (contract <- model <- native <- pool <- predict <- train <- worker <- service <- proxy <- server <- cli)', () => {
    const upward = edges
      .filter((edge) => unitOf(edge.from) !== unitOf(edge.to))
      .filter((edge) => layerOf(unitOf(edge.to)) >= layerOf(unitOf(edge.from)))
      .filter((edge) => !isKnown(edge))
      .map((edge) => `src/${edge.from} imports src/${edge.to}`);
    expect(upward).toEqual([]);
  });

  it('lists no exception that no longer exists', () => {
    expect(staleExceptions(kKnownExceptions, edges)).toEqual([]);
  });

  it('names a listed exception whose import is gone (the worker reached up from pool/ until it moved to worker/)', () => {
    const gone = [{ from: 'pool/worker.ts', to: 'predict/head.ts', why: 'the worker entry ran the head kernel' }];
    expect(staleExceptions(gone, edges)).toEqual(['pool/worker.ts -> predict/head.ts']);
  });

  it('keeps the contract layer free of everything above it, Fastify and the drivers included', () => {
    const contract = edges.filter((edge) => unitOf(edge.from) === 'contract' && unitOf(edge.to) !== 'contract');
    expect([...new Set(contract.map((edge) => edge.to))].sort()).toEqual(['errors.ts', 'parse.ts']);
  });

  it('has no folder cycle besides the listed exceptions', () => {
    const graph = new Map<string, Set<string>>();
    for (const edge of edges.filter((candidate) => !isKnown(candidate))) {
      const [from, to] = [unitOf(edge.from), unitOf(edge.to)];
      if (from === to) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from)!.add(to);
    }
    // Depth-first search; a node met again while on the stack closes a cycle.
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (unit: string): void => {
      state.set(unit, 'open');
      stack.push(unit);
      for (const next of graph.get(unit) ?? []) {
        if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next].join(' -> '));
        else if (state.get(next) === undefined) visit(next);
      }
      stack.pop();
      state.set(unit, 'done');
    };
    for (const unit of graph.keys()) if (!state.has(unit)) visit(unit);
    expect(cycles).toEqual([]);
  });
});

describe('layers of native/core', () => {
  it('runs inference without the training folder: kernels both use live in native/core/kernels', () => {
    const inference = ['encoder', 'kernels', 'tokenizer', 'io', 'tensor'].flatMap((folder) =>
      readdirSync(join(kNativeCore, folder))
        .filter((file) => /\.(cc|h)$/.test(file) && !file.endsWith('_test.cc'))
        .map((file) => `${folder}/${file}`),
    );
    const reachingTrain = inference.filter((file) => /#include "train\//.test(readFileSync(join(kNativeCore, file), 'utf8')));
    expect(inference.length).toBeGreaterThan(20);
    expect(reachingTrain).toEqual([]);
  });
});
