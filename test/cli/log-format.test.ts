// `svc serve --log-format`: short human lines without a line per request (the terminal's default), or pino's JSON,
// which is all a pipe gets: svc's own start-up and shutdown lines are JSON records there too.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { logFormatOf, prettyLine, serveMessages } from '../../src/cli/log-format.js';
import { exited, serve } from '../_support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-log-format-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const time = Date.UTC(2026, 10, 26, 12, 26, 40);
const clock = new Date(time).toTimeString().slice(0, 8); // the machine's time zone, as the line shows it

describe('prettyLine', () => {
  it('writes time, level, message and the other fields', () => {
    const line = JSON.stringify({
      level: 40,
      time,
      pid: 7,
      hostname: 'h',
      msg: 'slow upstream',
      ms: 812,
      route: '/v2/predict',
      note: 'two words',
    });
    expect(prettyLine(line, { requests: false })).toBe(`${clock} WARN  slow upstream ms=812 route=/v2/predict note="two words"`);
  });

  it("leaves out request lines unless asked, and Fastify's listening lines always", () => {
    const request = JSON.stringify({ level: 30, time, msg: 'request', method: 'GET', route: '/health', status: 200, ms: 1.5, org: null });
    expect(prettyLine(request, { requests: false })).toBeUndefined();
    expect(prettyLine(request, { requests: true })).toBe(`${clock} INFO  request method=GET route=/health status=200 ms=1.5`);
    expect(
      prettyLine(JSON.stringify({ level: 30, time, msg: 'Server listening at http://127.0.0.1:8080' }), { requests: true }),
    ).toBeUndefined();
    expect(prettyLine('not json', { requests: false })).toBe('not json');
  });

  it('picks the format from the flag, else SVC_LOG_FORMAT, else the terminal', () => {
    expect([logFormatOf(undefined, {}, true), logFormatOf(undefined, {}, false)]).toEqual(['pretty', 'json']);
    expect(logFormatOf(undefined, { SVC_LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormatOf('pretty', { SVC_LOG_FORMAT: 'json' }, false)).toBe('pretty');
    expect(() => logFormatOf('yaml', {}, true)).toThrow("--log-format must be pretty or json; got 'yaml'");
  });
});

describe('svc serve --log-format pretty', () => {
  it('says it listens once and writes no line per request', async () => {
    const server = await serve(['--data', join(dir, 'data'), '--log-format', 'pretty']);
    for (let i = 0; i < 3; i++) expect((await fetch(`${server.url}/health`)).status).toBe(200);
    server.child.kill('SIGTERM');
    await exited(server.child);
    const lines = server.output().trim().split('\n');
    expect(lines.filter((line) => line.includes('listening'))).toEqual([
      expect.stringMatching(/^svc listening on http:\/\/127\.0\.0\.1:\d+ /),
    ]);
    expect(lines.filter((line) => line.startsWith('{') || / request /.test(line))).toEqual([]);
  });
});

describe('svc serve with stdout piped', () => {
  it("writes one stream of JSON lines: pino's, and its own start-up and shutdown lines as records", async () => {
    const server = await serve(['--data', join(dir, 'piped')], { SVC_LOG_FORMAT: '', SVC_LOG_LEVEL: 'info', SVC_METRICS_TOKEN: '' });
    expect((await fetch(`${server.url}/v2/models`)).status).toBe(401);
    server.child.kill('SIGTERM');
    await exited(server.child);
    const lines = server.output().trim().split('\n');
    const records = lines.map((line) => JSON.parse(line) as { level: number; time: number; pid: number; msg: string });
    expect(records.map((r) => [typeof r.level, typeof r.time, r.pid])).toEqual(lines.map(() => ['number', 'number', server.child.pid]));
    const messages = records.map((r) => r.msg);
    expect(messages).toContainEqual(expect.stringMatching(/^svc listening on http:\/\/127\.0\.0\.1:\d+ \(data: /));
    expect(messages).toContain(
      'svc: GET /metrics is off; set SVC_METRICS_TOKEN (or --metrics-token) to serve it to scrapers that send that token',
    );
    expect(messages).toContain('request');
    expect(messages).toContain('svc: SIGTERM, shutting down');
  });

  it('keeps the human lines for a terminal, errors on stderr', () => {
    const written: Record<'out' | 'err', string[]> = { out: [], err: [] };
    const sink = (name: 'out' | 'err') => ({ write: (text: string) => written[name].push(text) }) as unknown as NodeJS.WritableStream;
    const pretty = serveMessages('pretty', sink('out'), sink('err'));
    pretty.info('svc: SIGTERM, shutting down');
    pretty.error('svc: could not read the precision auto runs: worker died');
    expect(written).toEqual({
      out: ['svc: SIGTERM, shutting down\n'],
      err: ['svc: could not read the precision auto runs: worker died\n'],
    });

    written.out.length = 0;
    written.err.length = 0;
    const json = serveMessages('json', sink('out'), sink('err'));
    json.error('svc: could not read the precision auto runs: worker died');
    expect(written.err).toEqual([]);
    expect(JSON.parse(written.out[0])).toMatchObject({
      level: 50,
      pid: process.pid,
      msg: 'svc: could not read the precision auto runs: worker died',
    });
  });
});
