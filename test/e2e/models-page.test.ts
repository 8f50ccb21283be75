// The models page in headless Chromium over a real server with the library runtime: the key prompt, a classifier
// with three versions (finetune: false; two with validation sets, one reported from cross-validation), a version's confusion matrix heat map, the precision/recall
// chart and its movable threshold, and classifying a text; the page runs under its strict policy.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { uciSites } from '../../fixtures/corpora.js';
import { splitClasses } from '../../fixtures/draw.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { kLevelSlowdown } from '../_support/level.js';
import { launchChromium } from '../_support/browser.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-models-page-'));
let server: RunningServer;
let browser: Browser;
let key: string;

beforeAll(async () => {
  // The proxy routes too: the page links to a project's proxy dashboard.
  server = await startServer({ dataDir: dir, port: 0, logLevel: 'silent', pool: { workers: 1, engineThreads: 1 } });
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
    const rows = await page.$$eval('#rows tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 6).map((td) => td.textContent)));
    expect(rows).toEqual([
      [model.id, 'binary', 'positive', '1', 'trained', 'live'],
      [model.id, 'binary', 'positive', '2', 'trained', ''],
      [model.id, 'binary', 'positive', '3', 'trained', ''],
    ]);
    expect(await page.textContent('#status')).toBe('3 versions');

    await page.click('#rows tr:nth-child(2)');
    await page.waitForSelector('#confusion rect.cell');
    const report = await server.service.evaluations.report(principal, model.id, 2);
    // The heat map: one cell per (actual, predicted) pair, its count written in it, the axes named (a binary model's
    // classes are 'true' and 'false': the row axis is not 'true' too).
    expect(await page.$$eval('#confusion text.cell-text', (texts) => texts.map((t) => t.textContent))).toEqual(
      report.confusion_matrix.flat().map(String),
    );
    expect(await page.$$eval('#confusion text.axis-title', (texts) => texts.map((t) => t.textContent))).toEqual(['predicted', 'actual']);
    expect(await page.$$eval('#confusion text.row-label', (texts) => texts.map((t) => t.textContent))).toEqual(['true', 'false']);
    expect(await page.textContent('#report-note')).toContain(
      `on the live version 1's texts: F1 ${report.compared_with_live!.this.macro_f1.toFixed(3)}`,
    );
    // The threshold chart: where its probabilities come from, two series, axes with titles, the readout following the slider.
    expect(await page.textContent('#threshold-source')).toBe('This version scored on its 12 validation texts.');
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
    expect(third.encoder).toBe('trained');
    expect(await page.textContent('#threshold-source')).toBe(
      `From a ${third.folds}-fold cross-validation of the 20 training examples on this version's encoder.`,
    );

    // Kept in tmp/ (git-ignored) to look at.
    mkdirSync(join(process.cwd(), 'tmp'), { recursive: true });
    await page.screenshot({ path: join(process.cwd(), 'tmp', 'models.png'), fullPage: true });
    const detail = await page.locator('#detail').screenshot();
    expect(detail.length).toBeGreaterThan(5000);
    expect(violations).toEqual([]);
  },
);

/** WCAG contrast ratio of two computed colours written `rgb(r, g, b)`. */
function contrast(a: string, b: string): number {
  const luminance = (color: string) => {
    const [r, g, bl] = /rgb\((\d+), (\d+), (\d+)\)/
      .exec(color)!
      .slice(1)
      .map((v) => {
        const c = Number(v) / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

type Point = { x: number; y: number };
/** Whether two convex polygons (corners in order) overlap: no edge's normal separates them (separating axis theorem). */
function polygonsOverlap(a: Point[], b: Point[]): boolean {
  for (const polygon of [a, b]) {
    for (let i = 0; i < polygon.length; i += 1) {
      const [p, q] = [polygon[i], polygon[(i + 1) % polygon.length]];
      const normal = { x: q.y - p.y, y: p.x - q.x };
      const project = (corners: Point[]) => corners.map((c) => c.x * normal.x + c.y * normal.y);
      const [pa, pb] = [project(a), project(b)];
      if (Math.max(...pa) <= Math.min(...pb) || Math.max(...pb) <= Math.min(...pa)) return false;
    }
  }
  return true;
}
const inside = (inner: DOMRectLike, outer: DOMRectLike) =>
  inner.x >= outer.x - 0.5 &&
  inner.y >= outer.y - 0.5 &&
  inner.x + inner.width <= outer.x + outer.width + 0.5 &&
  inner.y + inner.height <= outer.y + outer.height + 0.5;
type DOMRectLike = { x: number; y: number; width: number; height: number };

it(
  "says plainly that a fine-tuned version's threshold chart comes from cross-validation on the base encoder",
  { timeout: 240_000 * kLevelSlowdown },
  async () => {
    const principal = await server.service.authenticate(key);
    // Fine-tuned, without a validation set: its report is the cross-validation training kept, measured on the base encoder.
    const model = await server.service.train(principal, {
      model: 'svc-small',
      task_type: 'binary-classification',
      finetune: true,
      num_iterations: 1,
      examples: imdbExamples(60, 10),
    });
    await server.service.idle();
    const report = await server.service.evaluations.report(principal, model.id, 1);
    expect([report.source, report.encoder]).toEqual(['cross-validation', 'base']);

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.url}/v2/dashboard/models`);
    await page.fill('#api-key', key);
    await page.click('#key-form button[type=submit]');
    await page.click(`#rows tr[data-name="${model.id}@1"]`);
    await page.waitForSelector('#report-note:has-text("cross-validation")');
    expect(await page.textContent('#report-note')).toContain(
      `20 training examples, ${report.folds}-fold cross-validation on the base encoder, accuracy ${report.accuracy.toFixed(3)}`,
    );
    expect(await page.isVisible('#threshold-card')).toBe(true);
    expect(await page.textContent('#threshold-source')).toBe(
      `From a ${report.folds}-fold cross-validation of the 20 training examples on the base encoder, not on this fine-tuned version: ` +
        'its own probabilities differ. Train it with a validation set for a chart of this version.',
    );
    await page.close();
  },
);

it(
  'a multi-class model: its task and classes in the list, no threshold card, column labels apart and every count readable',
  { timeout: 180_000 * kLevelSlowdown },
  async () => {
    const principal = await server.service.authenticate(key);
    const names: Record<string, string> = { amazon: 'shipping', imdb: 'technical', yelp: 'billing and refunds' };
    const sites = uciSites().map((row) => ({ text: row.text, label: names[row.label as string] }));
    const { trainSet, testSet } = splitClasses(sites, 1, 8);
    // Six validation texts over nine cells: at least three cells hold 0.
    const validation = Object.values(names).flatMap((name) => testSet.filter((e) => e.label === name).slice(0, 2));
    const model = await server.service.train(principal, {
      model: 'svc-small',
      task_type: 'multi-class-classification',
      finetune: false,
      examples: trainSet,
      validation,
    });
    await server.service.idle();

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.url}/v2/dashboard/models`);
    await page.fill('#api-key', key);
    await page.click('#key-form button[type=submit]');
    const row = page.locator(`#rows tr[data-name="${model.id}@1"]`);
    await row.waitFor();
    expect(await row.locator('td').evaluateAll((tds) => tds.slice(0, 3).map((td) => td.textContent))).toEqual([
      model.id,
      'multi-class',
      'billing and refunds, shipping, technical',
    ]);
    await row.click();
    await page.waitForSelector('#confusion rect.cell');
    expect(await page.isHidden('#threshold-card')).toBe(true);
    expect(await page.$$eval('#confusion text.axis-title', (texts) => texts.map((t) => t.textContent))).toEqual(['predicted', 'actual']);

    const box = (await page.locator('#confusion').boundingBox())!;
    // Each column label's box as drawn on screen (rotated with it): its four corners.
    const columns = await page.$$eval('#confusion text.column-label', (texts) =>
      texts.map((text) => {
        // Its own box (before the rotation) through the matrix that draws it on screen.
        const b = text.getBBox(),
          m = text.getScreenCTM();
        const corners = [
          [b.x, b.y],
          [b.x + b.width, b.y],
          [b.x + b.width, b.y + b.height],
          [b.x, b.y + b.height],
        ].map(([x, y]) => ({ x: m.a * x + m.c * y + m.e, y: m.b * x + m.d * y + m.f }));
        return { text: text.textContent, corners, ...JSON.parse(JSON.stringify(text.getBoundingClientRect())) };
      }),
    );
    expect(columns.map((c) => c.text)).toEqual(['billing and refunds', 'shipping', 'technical']);
    // Apart from one another, and inside the chart.
    for (let i = 0; i < columns.length; i += 1) {
      for (let j = i + 1; j < columns.length; j += 1) expect(polygonsOverlap(columns[i].corners, columns[j].corners)).toBe(false);
    }
    const rowLabels = await page.$$eval('#confusion text.row-label', (texts) =>
      texts.map((t) => JSON.parse(JSON.stringify(t.getBoundingClientRect()))),
    );
    for (const label of [...columns, ...rowLabels]) expect(inside(label, box)).toBe(true);

    // Every count, zeros included, reads at 4.5:1 or better on its cell.
    const cells = await page.$$eval('#confusion rect.cell', (rects) =>
      rects.map((rect) => {
        const text = rect.nextElementSibling,
          view = rect.ownerDocument.defaultView;
        return { n: text.textContent, cell: view.getComputedStyle(rect).fill, text: view.getComputedStyle(text).fill };
      }),
    );
    expect(cells.filter((c) => c.n === '0').length).toBeGreaterThanOrEqual(3);
    for (const c of cells) expect(contrast(c.cell, c.text)).toBeGreaterThanOrEqual(4.5);

    // Kept in tmp/ (git-ignored) to look at.
    mkdirSync(join(process.cwd(), 'tmp'), { recursive: true });
    await page.screenshot({ path: join(process.cwd(), 'tmp', 'models-multi-class.png'), fullPage: true });
    await page.close();
  },
);

it('links to the proxy dashboard and back, and keeps the key form the same way on both pages', { timeout: 60_000 }, async () => {
  await server.service.setProxyAccess('acme', true);
  const project = await server.service.createProject('acme', 'support');
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${server.url}/v2/dashboard/models`);
  expect(await page.isHidden('#change-key')).toBe(true);
  await page.fill('#api-key', key);
  await page.click('#key-form button[type=submit]');
  // Loaded: the status counts the versions once every row is in.
  await page.waitForSelector('#status:has-text("versions")');
  // Once a key works the form goes, on this page as on the dashboard, and "Change key" takes its place.
  expect([await page.isHidden('#key-form'), await page.isVisible('#change-key')]).toEqual([true, true]);

  // No project known yet: the header asks for one and opens its dashboard, which needs no key again.
  await page.fill('#project-id', project.id);
  await page.click('#project-form button');
  await page.waitForURL(`${server.url}/v2/${project.id}/dashboard`);
  await page.waitForSelector('#table-card:not([hidden])');
  expect([await page.isHidden('#login'), await page.isVisible('#change-key')]).toEqual([true, true]);
  expect(await page.getAttribute('#models-link', 'href')).toBe(`../dashboard/models?project=${project.id}`);

  await page.click('#models-link');
  await page.waitForURL(`${server.url}/v2/dashboard/models?project=${project.id}`);
  // Loaded: the status counts the versions once every row is in.
  await page.waitForSelector('#status:has-text("versions")');
  expect(await page.isHidden('#key-form')).toBe(true);
  expect(await page.textContent('#dashboard-link')).toBe(`Proxy dashboard · ${project.id}`);
  expect(await page.$eval('#dashboard-link', (a) => a.href)).toBe(`${server.url}/v2/${project.id}/dashboard`);

  // "Change key" forgets the key: the form is back, and the dashboard asks for a key too.
  await page.click('#change-key');
  expect([await page.isVisible('#key-form'), await page.isHidden('#change-key'), await page.textContent('#rows')]).toEqual([
    true,
    true,
    '',
  ]);
  await page.click('#dashboard-link');
  await page.waitForURL(`${server.url}/v2/${project.id}/dashboard`);
  expect([await page.isVisible('#login'), await page.isHidden('#change-key')]).toEqual([true, true]);
  await page.close();
});
