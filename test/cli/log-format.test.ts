// `svc serve --log-format`: short human lines without a line per request (the terminal's default), or pino's JSON.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { logFormatOf, prettyLine } from '../../src/cli/log-format.js';
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
