// The models page in headless Chromium over a real server with the library runtime: the key prompt, a classifier
// with three versions (finetune: false; two with validation sets, one reported from cross-validation), a version's confusion matrix heat map, the precision/recall
// chart and its movable threshold, and classifying a text; the page runs under its strict policy.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { type RunningServer, startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { kLevelSlowdown } from '../_support/level.js';
import { launchChromium } from '../_support/browser.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-models-page-'));
let server: RunningServer;
let browser: Browser;
let key: string;

beforeAll(async () => {
  server = await startServer({ dataDir: dir, port: 0, logLevel: 'silent', proxy: false, pool: { workers: 1, engineThreads: 1 } });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

it(
  "lists versions, draws a version's heat map and threshold chart, moves the threshold and classifies a text",
  { timeout: 180_000 * kLevelSlowdown },
  async () => {
    const principal = await server.service.authenticate(key);
    const body = (from: number) => ({
      model: 'svc-small',
      task_type: 'binary-classification',
      finetune: false,
      examples: imdbExamples(from, 10),
      validation: imdbExamples(40, 6),
    });
    const model = await server.service.train(principal, body(0));
    await server.service.idle();
    await server.service.versions.add(principal, model.id, body(10));
    // Version 3 through train's model_id, without a validation set: reported from its cross-validation.
    const { validation: _none, ...unvalidated } = body(20);
    await server.service.train(principal, { ...unvalidated, model_id: model.id });
    await server.service.idle();

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    const response = await page.goto(`${server.url}/v2/dashboard/models`);
    const policy = response!.headers()['content-security-policy'];
    const nonce = /script-src 'nonce-([A-Za-z0-9_-]{22})'/.exec(policy)![1];
    expect(policy).toContain(`style-src 'nonce-${nonce}'; connect-src 'self'`);
    expect(await page.title()).toBe('svc-classify · models');
    await page.fill('#api-key', key);
    await page.click('#key-form button[type=submit]');
    await page.waitForSelector('#rows tr:nth-child(2)');
    const rows = await page.$$eval('#rows tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 4).map((td) => td.textContent)));
    expect(rows).toEqual([
      [model.id, '1', 'trained', 'live'],
      [model.id, '2', 'trained', ''],
      [model.id, '3', 'trained', ''],
    ]);
    expect(await page.textContent('#status')).toBe('3 versions');

    await page.click('#rows tr:nth-child(2)');
    await page.waitForSelector('#confusion rect.cell');
    const report = await server.service.evaluations.report(principal, model.id, 2);
    // The heat map: one cell per (true, predicted) pair, its count written in it, the axes named.
    expect(await page.$$eval('#confusion text.cell-text', (texts) => texts.map((t) => t.textContent))).toEqual(
      report.confusion_matrix.flat().map(String),
    );
    expect(await page.$$eval('#confusion text.axis-title', (texts) => texts.map((t) => t.textContent))).toEqual(['predicted', 'true']);
    expect(await page.$$eval('#confusion text.row-label', (texts) => texts.map((t) => t.textContent))).toEqual(['true', 'false']);
    expect(await page.textContent('#report-note')).toContain(
      `on the live version 1's texts: F1 ${report.compared_with_live!.this.macro_f1.toFixed(3)}`,
    );
    // The threshold chart: two series, axes with titles, and the readout following the slider.
    expect(await page.$$eval('#thresholds polyline', (lines) => lines.map((l) => l.getAttribute('class')))).toEqual([
      'series-precision',
      'series-recall',
    ]);
    expect(await page.$$eval('#thresholds text.axis-title', (texts) => texts.map((t) => t.textContent))).toEqual(['threshold', 'share']);
    const at = (t: number) => report.thresholds!.find((row) => Math.abs(row.threshold - t) < 1e-9)!;
    expect(await page.textContent('#threshold-readout')).toBe(
      `at 0.50: precision ${at(0.5).precision.toFixed(3)}, recall ${at(0.5).recall.toFixed(3)}, F1 ${at(0.5).f1.toFixed(3)}`,
    );
    const lineAt = () => page.getAttribute('#threshold-line', 'x1');
    const before = await lineAt();
    await page.locator('#threshold').fill('0.8');
    expect(await page.textContent('#threshold-readout')).toBe(
      `at 0.80: precision ${at(0.8).precision.toFixed(3)}, recall ${at(0.8).recall.toFixed(3)}, F1 ${at(0.8).f1.toFixed(3)}`,
    );
    expect(Number(await lineAt())).toBeGreaterThan(Number(before));

    await page.fill('#classify-text', 'A wonderful, moving film.');
    await page.click('#classify-form button');
    await page.waitForSelector('#classify-result:not(:empty)');
    const expected = await server.service.predict(principal, { model: `${model.id}@2`, inputs: ['A wonderful, moving film.'] });
    expect(JSON.parse((await page.textContent('#classify-result'))!)).toEqual(expected.predictions[0]);

    // Version 3's report comes from the cross-validation of its 20 examples, and says so.
    await page.click('#rows tr:nth-child(3)');
    // A selector, not waitForFunction: the page's CSP (no 'unsafe-eval') refuses a string evaluated in it.
    await page.waitForSelector('#report-note:has-text("cross-validation")');
    const third = await server.service.evaluations.report(principal, model.id, 3);
    expect(third.source).toBe('cross-validation');
    expect(await page.textContent('#report-note')).toContain(
      `20 training examples, ${third.folds}-fold cross-validation, accuracy ${third.accuracy.toFixed(3)}`,
    );
    expect(await page.$$eval('#confusion text.cell-text', (texts) => texts.map((t) => t.textContent))).toEqual(
      third.confusion_matrix.flat().map(String),
    );

    mkdirSync(join(dir, 'shots'), { recursive: true });
    await page.screenshot({ path: join(dir, 'shots', 'models.png'), fullPage: true });
    const detail = await page.locator('#detail').screenshot();
    expect(detail.length).toBeGreaterThan(5000);
    expect(violations).toEqual([]);
  },
);
