// The project dashboard in headless Chromium: key prompt, the requests made in this test, filters, bodies, chart.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import { launchChromium } from '../_support/browser.js';

let h: ProxyHarness;
let browser: Browser;

beforeAll(async () => {
  h = await startProxyHarness();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await h.close();
});

it('asks for the key, lists the requests, filters them, shows bodies and charts latency and tokens', async () => {
  const openai = new OpenAI({ baseURL: h.sdkBase, apiKey: h.acmeKey, maxRetries: 0 });
  const anthropic = new Anthropic({ baseURL: h.sdkBase, apiKey: h.acmeKey, maxRetries: 0 });
  await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages: [{ role: 'user', content: 'first question' }] });
  await openai.chat.completions.create({ model: 'provider-a:fail-429', messages: [{ role: 'user', content: 'too many' }] }).catch(() => {});
  const stream = await anthropic.messages.create({
    model: 'provider-c:claude-fake',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'streamed question' }],
    stream: true,
  });
  for await (const _ of stream);
  await h.logRows(3);

  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const foreign: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(h.base)) foreign.push(request.url());
  });
  // The page runs under its strict policy: a blocked script, style or fetch would show up here.
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  const response = await page.goto(`${h.base}/v2/${h.projectId}/dashboard`);
  const policy = response!.headers()['content-security-policy'];
  const nonce = /script-src 'nonce-([A-Za-z0-9_-]{22})'/.exec(policy)![1];
  expect(policy).toBe(
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
  );
  expect(response!.headers()['x-content-type-options']).toBe('nosniff');
  expect(await page.title()).toBe(`svc-classify · ${h.projectId} · requests`);
  expect(await page.textContent('header code')).toBe(`project ${h.projectId}`);
  await page.fill('#api-key', h.acmeKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('#rows tr');

  const models = () => page.$$eval('#rows tr', (rows) => rows.map((row) => row.children[2].textContent));
  expect(await models()).toEqual(['provider-c:claude-fake', 'provider-a:fail-429', 'provider-a:gpt-fake']);
  expect(await page.textContent('#count')).toBe('3 of 3 requests');

  await page.selectOption('#f-provider', 'provider-a');
  expect(await models()).toEqual(['provider-a:fail-429', 'provider-a:gpt-fake']);
  await page.selectOption('#f-status', '429');
  expect(await models()).toEqual(['provider-a:fail-429']);
  await page.selectOption('#f-provider', '');
  await page.selectOption('#f-status', '');

  await page.click('#rows tr:nth-child(3)');
  const requestBody = JSON.parse((await page.textContent('#request-body'))!);
  expect(requestBody).toEqual({ model: 'provider-a:gpt-fake', messages: [{ role: 'user', content: 'first question' }] });
  const responseBody = JSON.parse((await page.textContent('#response-body'))!);
  expect(responseBody.choices[0].message.content).toBe('Echo: first question');

  // Two panels, each on its own scale with labelled axes: a point per request in latency, none for the 429 in tokens.
  for (const [panel, title, dots] of [
    ['#chart-latency', 'latency (ms)', 3],
    ['#chart-tokens', 'tokens (in + out)', 2],
  ] as const) {
    expect(await page.$$eval(`${panel} polyline`, (lines) => lines.length)).toBe(1);
    expect(await page.$$eval(`${panel} circle`, (circles) => circles.length)).toBe(dots);
    expect(await page.textContent(`${panel} .y-title`)).toBe(title);
    expect(await page.textContent(`${panel} .x-title`)).toBe('time');
    // The calls came within seconds: the time ticks are clock times to the second, 24-hour, in order.
    const times = await page.$$eval(`${panel} .x-tick`, (ticks) => ticks.map((tick) => tick.textContent!));
    expect(times.length).toBeGreaterThanOrEqual(2);
    for (const time of times) expect(time).toMatch(/^\d{2}:\d{2}:\d{2}$/);
    expect([...times].sort()).toEqual(times);
    // Value ticks start at 0, rise in one round step, and the top one is at least the largest value.
    const values = await page.$$eval(`${panel} .y-tick`, (ticks) => ticks.map((tick) => Number(tick.textContent)));
    expect(values[0]).toBe(0);
    const step = values[1] - values[0];
    expect(String(step / 10 ** Math.floor(Math.log10(step)))).toMatch(/^(1|2|5)$/);
    values.forEach((v, i) => expect(v).toBeCloseTo(i * step, 6));
    const highest = await page.$$eval(`${panel} circle`, (circles) => Math.min(...circles.map((c) => Number(c.getAttribute('cy')))));
    const topTick = await page.$$eval(`${panel} .y-tick`, (ticks) => Number(ticks.at(-1)!.getAttribute('y')) - 4);
    expect(highest).toBeGreaterThanOrEqual(topTick);
  }
  expect(foreign).toEqual([]);
  expect(violations).toEqual([]);

  // Refresh picks up a call made after the page loaded.
  await openai.chat.completions.create({ model: 'provider-b:mistral-fake', messages: [{ role: 'user', content: 'later' }] });
  await h.logRows(4);
  await page.click('#refresh');
  await page.waitForSelector('#rows tr:nth-child(4)');
  expect((await models())[0]).toBe('provider-b:mistral-fake');
  await page.click('#rows tr:nth-child(4)');
  expect(await page.$$eval('#chart-latency circle', (circles) => circles.length)).toBe(4);

  const dir = join(process.cwd(), 'tmp');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, 'dashboard.png'), fullPage: true });
  await page.locator('#chart-card').screenshot({ path: join(dir, 'dashboard-charts.png') });
  await page.close();
});

it('answers 404 to an id that is not a project id, and no script of the attacker runs', async () => {
  const page = await browser.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  // $' and $` are replacement patterns: spliced into the page by String.replace they re-insert the page around them.
  const answers: string[] = [];
  for (const id of ["$'$`(alert(1))//", '$&<script>alert(2)</script>', 'proj_x"><script>alert(3)</script>']) {
    const response = await page.goto(`${h.base}/v2/${encodeURIComponent(id)}/dashboard`);
    await page.waitForTimeout(100);
    answers.push(`${response!.status()} ${response!.headers()['content-type']}`);
  }
  expect(dialogs).toEqual([]);
  expect(answers).toEqual(Array(3).fill('404 application/json; charset=utf-8'));
  // Two responses, two nonces.
  const a = await fetch(`${h.base}/v2/${h.projectId}/dashboard`);
  const b = await fetch(`${h.base}/v2/${h.projectId}/dashboard`);
  expect(a.headers.get('content-security-policy')).not.toBe(b.headers.get('content-security-policy'));
  expect(await a.text()).toContain(`<script nonce="${/'nonce-([^']+)'/.exec(a.headers.get('content-security-policy')!)![1]}">`);
  await page.close();
});

it("shows a picked call's whole bodies when the list held only their start", async () => {
  const long = (side: string) => JSON.stringify({ side, text: `${side} `.repeat(3_000) });
  const id = await h.store.insertRequestLog({
    projectId: h.projectId,
    keyId: h.acmeKeyId,
    provider: 'provider-a',
    model: 'provider-a:long-bodies',
    stream: false,
    status: 200,
    ttfbMs: 3,
    totalMs: 7,
    tokensIn: 3_000,
    tokensOut: 3_000,
    error: null,
    requestBody: long('question'),
    responseBody: long('answer'),
    createdAt: Date.now(),
  });
  const page = await browser.newPage();
  const wholeReads: string[] = [];
  page.on('request', (request) => {
    if (/\/requests\/\d+$/.test(request.url())) wholeReads.push(new URL(request.url()).pathname);
  });
  await page.goto(`${h.base}/v2/${h.projectId}/dashboard`);
  await page.fill('#api-key', h.acmeKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('#rows tr');
  // The newest call is first; the list cut its 27,000-character bodies, the detail reads them whole.
  await page.click('#rows tr:nth-child(1)');
  await expect.poll(async () => ((await page.textContent('#response-body')) ?? '').length, { timeout: 10_000 }).toBeGreaterThan(20_000);
  expect(JSON.parse((await page.textContent('#request-body'))!)).toEqual(JSON.parse(long('question')));
  expect(JSON.parse((await page.textContent('#response-body'))!)).toEqual(JSON.parse(long('answer')));
  expect(wholeReads).toEqual([`/v2/${h.projectId}/requests/${id}`]);
  await page.close();
});

it('fits the Error column at 1280px, writes every time in 24-hour form and charts both panels over one range', async () => {
  // Two calls one afternoon (UTC), 40 s apart: the second failed upstream with a long error and counted no tokens.
  const at = Date.UTC(2026, 0, 15, 15, 4, 5);
  const longError = 'upstream answered 502 Bad Gateway: ' + 'the provider closed the connection before sending a response; '.repeat(6);
  for (const [offset, tokens, error] of [
    [0, 12, null],
    [40_000, null, longError],
  ] as const) {
    await h.store.insertRequestLog({
      projectId: h.projectId,
      keyId: h.acmeKeyId,
      provider: 'provider-a',
      model: 'provider-a:afternoon',
      stream: false,
      status: error === null ? 200 : 502,
      ttfbMs: 5,
      totalMs: 9,
      tokensIn: tokens,
      tokensOut: tokens,
      error,
      requestBody: '{}',
      responseBody: '{}',
      createdAt: at + offset,
    });
  }
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
  await page.goto(`${h.base}/v2/${h.projectId}/dashboard`);
  await page.fill('#api-key', h.acmeKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('#rows tr');
  await page.selectOption('#f-model', 'provider-a:afternoon');

  // The table's times as the charts write theirs: 24-hour, in en-US too.
  expect(await page.$$eval('#rows tr', (rows) => rows.map((row) => row.children[0].textContent))).toEqual([
    '2026-01-15 15:04:45',
    '2026-01-15 15:04:05',
  ]);
  // One range for both panels, said above them, though the tokens panel has a point for the first call only.
  expect(await page.textContent('#chart-range')).toBe('Both charts: 2 calls from 2026-01-15 15:04:05 to 2026-01-15 15:04:45');
  const ticks = (panel: string) => page.$$eval(`${panel} .x-tick`, (texts) => texts.map((t) => [t.textContent, t.getAttribute('x')]));
  const latencyTicks = await ticks('#chart-latency');
  expect(latencyTicks.length).toBeGreaterThanOrEqual(2);
  for (const [text] of latencyTicks) expect(text).toMatch(/^15:04:\d{2}$/);
  expect(await ticks('#chart-tokens')).toEqual(latencyTicks);
  expect(await page.$$eval('#chart-tokens circle', (circles) => circles.length)).toBe(1);

  // The Error column fits: the table does not scroll sideways and the error cell ends inside its card.
  const scroll = await page.$eval('#table-card .scroll', (el) => [el.scrollWidth, el.clientWidth]);
  expect(scroll[0]).toBeLessThanOrEqual(scroll[1]);
  const card = (await page.locator('#table-card').boundingBox())!;
  const cell = page.locator('#rows tr:nth-child(1) td:nth-child(10)');
  expect(await cell.textContent()).toBe(longError);
  const cellBox = (await cell.boundingBox())!;
  expect(cellBox.x + cellBox.width).toBeLessThanOrEqual(card.x + card.width);
  expect(await cell.evaluate((td) => td.scrollWidth <= td.clientWidth)).toBe(true);
  await page.screenshot({ path: join(process.cwd(), 'tmp', 'dashboard-error-column.png'), fullPage: true });
  await page.close();
});
