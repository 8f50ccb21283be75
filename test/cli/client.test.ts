// The client commands (`svc train --wait`, `svc predict`, `svc pull`) as real processes
// against a real `svc serve` child over a temporary data directory.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { uciSentences, uciTasks } from '../../fixtures/corpora.js';
import { kAdapterFolderFiles } from '../_support/adapter-files.js';
import { kRepoRoot, svc, useServedOrg } from '../_support/cli.js';

const yelp = uciSentences('yelp');
const rows = [...yelp.filter((r) => r.label).slice(0, 10), ...yelp.filter((r) => !r.label).slice(0, 10)];
const { dir, env } = useServedOrg('svc-client-');

describe('svc train, predict and pull', () => {
  it('train --wait shows progress and ends trained; predict and pull use the model', async () => {
    const file = join(dir, 'examples.csv');
    const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
    writeFileSync(file, `text,label\n${rows.map((r) => `${quote(r.text)},${r.label ? 1 : 0}`).join('\n')}\n`);

    const trained = await svc(['train', '--examples', file, '--label-text', 'positive', '--num-iterations', '4', '--wait'], env);
    expect(trained.code).toBe(0);
    const model = JSON.parse(trained.stdout) as { id: string; status: string; owned_by: string };
    expect([model.status, model.owned_by]).toEqual(['trained', 'acme']);
    // Not a terminal: a line for each step the polls saw (fine-tuning ones with the loss; then the base
    // encoder embedding the examples for the accuracy estimate), then the outcome.
    expect(trained.stderr).toMatch(
      /^(\[[#-]{20}\] (finetune 0\/\d+|finetune [1-9]\d*\/\d+ loss \d+\.\d{4}|(embed|fit|save) \d+\/\d+)\n)*\[#{20}\] trained\n$/,
    );
    const steps = [...trained.stderr.matchAll(/\] (\w+) (\d+)\//g)].map((m) => `${m[1]} ${m[2]}`);
    // A line per new step, never the same twice in a row. The default adapter model embeds its examples twice (the
    // base encoder for the estimate, then base + adapter for the head), so only an embed step may come back later.
    expect(steps.filter((step, i) => i > 0 && step === steps[i - 1])).toEqual([]);
    const others = steps.filter((step) => !step.startsWith('embed '));
    expect(new Set(others).size).toBe(others.length);
    // Ten fine-tuning steps of a few hundred milliseconds each, polled every 500 ms: several are seen.
    expect(steps.filter((step) => /^finetune [1-9]/.test(step)).length).toBeGreaterThanOrEqual(2);

    const predicted = await svc(['predict', '--model', model.id, 'The food was superb.', 'Cold and bland.'], env);
    expect(predicted.code).toBe(0);
    const body = JSON.parse(predicted.stdout) as {
      model: string;
      label_text: string;
      predictions: { label: boolean; probability: number }[];
    };
    expect([body.model, body.label_text, body.predictions.length]).toEqual([model.id, 'positive', 2]);

    const pulled = await svc(['pull', `acme/${model.id}`, '--dir', join(dir, 'pulled')], env);
    expect(pulled).toEqual({ code: 0, stdout: `${join(dir, 'pulled')}\n`, stderr: '' });
    // The default fine-tune is an adapter: its own files, and the merged transformers.js files the hub builds.
    expect(readdirSync(join(dir, 'pulled'), { recursive: true }).map(String).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
      'config.json',
      'example_embeddings.safetensors',
      'examples.json',
      'head.json',
      'manifest.json',
      'onnx',
      join('onnx', 'model.onnx'),
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    for (const name of ['adapter_model.safetensors', 'head.json']) {
      expect(readFileSync(join(dir, 'pulled', name))).toEqual(readFileSync(join(dir, 'data', 'hub', 'acme', model.id, name)));
    }

    expect(await svc(['predict', '--model', 'svc-small-0123456789ab', 'x'], env)).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc predict: 404: The model 'svc-small-0123456789ab' does not exist or is not visible to this API key\n",
    });
    expect(await svc(['predict', '--model', model.id, 'x'], { ...env, SVC_KEY: '' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'svc predict: no API key: pass --key or set SVC_KEY\n',
    });
    // The pull builds the merged ONNX export (about 8 s on two quiet cores), as in the adapter test below.
  }, 240_000);

  it('train --finetune adapter trains a LoRA adapter model; pull gets its adapter and the merged transformers.js files', async () => {
    const file = join(dir, 'adapter-examples.csv');
    const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
    writeFileSync(file, `text,label\n${rows.map((r) => `${quote(r.text)},${r.label ? 1 : 0}`).join('\n')}\n`);
    for (const bad of [
      ['--frozen', '--finetune', 'adapter'],
      ['--finetune', 'lora'],
      ['--rank', '4'],
      ['--finetune', 'full', '--rank', '4'],
      ['--finetune', 'adapter', '--rank', 'x'],
    ]) {
      expect(await svc(['train', '--examples', file, ...bad], env)).toMatchObject({
        code: 2,
        stderr: expect.stringContaining('--finetune adapter|full [--rank N]'),
      });
    }
    const trained = await svc(
      ['train', '--examples', file, '--label-text', 'positive', '--finetune', 'adapter', '--rank', '4', '--num-iterations', '2', '--wait'],
      env,
    );
    expect(trained.code).toBe(0);
    const model = JSON.parse(trained.stdout) as { id: string; status: string };
    expect(model.status).toBe('trained');
    expect(readdirSync(join(dir, 'data', 'hub', 'acme', model.id)).sort()).toEqual([...kAdapterFolderFiles]);
    const manifest = JSON.parse(readFileSync(join(dir, 'data', 'hub', 'acme', model.id, 'manifest.json'), 'utf8'));
    expect(manifest.training.finetune).toMatchObject({ method: 'adapter', rank: 4 });

    const pulled = await svc(['pull', `acme/${model.id}`, '--dir', join(dir, 'pulled-adapter')], env);
    expect(pulled.code).toBe(0);
    expect(readdirSync(join(dir, 'pulled-adapter'), { recursive: true }).map(String).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
      'config.json',
      'example_embeddings.safetensors',
      'examples.json',
      'head.json',
      'manifest.json',
      'onnx',
      join('onnx', 'model.onnx'),
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  }, 240_000);

  it('trains on the shipped examples/train.json, the body the README sends with curl', async () => {
    const trained = await svc(['train', '--examples', join(kRepoRoot, 'examples', 'train.json'), '--frozen', '--wait'], env);
    expect(trained.code).toBe(0);
    const model = JSON.parse(trained.stdout) as { id: string; status: string };
    expect(model.status).toBe('trained');
    const predicted = await svc(
      ['predict', '--model', model.id, 'Why was I charged twice this month?', 'The app will not let me log in.'],
      env,
    );
    const body = JSON.parse(predicted.stdout) as { label_text: string; predictions: { label: boolean }[] };
    expect([body.label_text, body.predictions.map((p) => p.label)]).toEqual(['billing question', [true, false]]);
  });

  it("train --examples body.json sends the body's task_type, finetune and validation (no flags needed)", async () => {
    const file = join(dir, 'sites-body.json');
    const byTask = uciTasks.map((task) => uciSentences(task));
    writeFileSync(
      file,
      JSON.stringify({
        model: 'svc-small',
        task_type: 'multi-class-classification',
        finetune: false,
        examples: byTask.flatMap((sentences, t) => sentences.slice(0, 8).map((r) => ({ text: r.text, label: uciTasks[t] }))),
        validation: byTask.flatMap((sentences, t) => sentences.slice(8, 10).map((r) => ({ text: r.text, label: uciTasks[t] }))),
      }),
    );
    const trained = await svc(['train', '--examples', file, '--wait'], env);
    expect(trained.code).toBe(0);
    const model = JSON.parse(trained.stdout) as { id: string; status: string; task_type: string; metrics: Record<string, unknown> };
    expect([model.status, model.task_type]).toEqual(['trained', 'multi-class-classification']);
    expect(Object.keys(model.metrics)).toEqual(expect.arrayContaining(['validation_accuracy', 'validation_macro_f1']));
    // finetune: false kept: the model directory holds the head and no encoder of its own.
    expect(readdirSync(join(dir, 'data', 'hub', 'acme', model.id))).not.toContain('model.fp16.safetensors');
    // Nothing was fine-tuned: no finetune step in the progress lines.
    expect(trained.stderr).not.toMatch(/finetune/);

    // svc models delete removes it; it is gone from the service and its hub.
    expect(await svc(['models', 'delete', model.id], env)).toEqual({
      code: 0,
      stdout: `${JSON.stringify({ id: model.id, object: 'model', deleted: true }, null, 2)}\n`,
      stderr: '',
    });
    expect(await svc(['models', 'show', model.id], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('404') });
    expect(existsSync(join(dir, 'data', 'hub', 'acme', model.id))).toBe(false);
  });

  it('trains a multi-class model from a CSV label column; models show prints its labels and metrics; predict prints every score', async () => {
    const file = join(dir, 'sites.csv');
    const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
    const sites = uciTasks.flatMap((task) =>
      uciSentences(task)
        .slice(0, 8)
        .map((r) => `${quote(r.text)},${task}`),
    );
    writeFileSync(file, `text,label\n${sites.join('\n')}\n`);
    const trained = await svc(['train', '--examples', file, '--task-type', 'multi-class-classification', '--frozen', '--wait'], env);
    expect(trained.code).toBe(0);
    const model = JSON.parse(trained.stdout) as {
      id: string;
      status: string;
      task_type: string;
      labels: string[];
      metrics: Record<string, number | string>;
    };
    expect([model.status, model.task_type, model.labels]).toEqual(['trained', 'multi-class-classification', ['amazon', 'imdb', 'yelp']]);

    const shown = await svc(['models', 'show', model.id], env);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual(model);
    // Cross-validated on the frozen (base) encoder the model uses: 19 of the 24 held-out classes right.
    expect(model.metrics).toEqual({
      train_accuracy: 1,
      train_seconds: model.metrics.train_seconds,
      cv_accuracy: 0.7916666666666666,
      cv_macro_f1: 0.7936274509803921,
      cv_folds: 5,
      cv_encoder: 'trained',
    });
    const listed = JSON.parse((await svc(['models', 'list', '--json'], env)).stdout) as { data: { id: string }[] };
    expect(listed.data.map((m) => m.id)).toContain(model.id);
    expect(await svc(['models', 'show'], env)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('usage: svc models list | svc models show <id>'),
    });

    const predicted = await svc(['predict', '--model', model.id, 'The pasta was cold.'], env);
    const body = JSON.parse(predicted.stdout) as { task_type: string; predictions: { label: string; scores: Record<string, number> }[] };
    expect(body.task_type).toBe('multi-class-classification');
    expect(Object.keys(body.predictions[0].scores)).toEqual(['amazon', 'imdb', 'yelp']);
    expect(Object.values(body.predictions[0].scores).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
  });
});
