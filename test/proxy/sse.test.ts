import { describe, expect, it } from 'vitest';
import { eventsMentioning, lastBoundaryEnd, SseEventCutter, withoutEvents } from '../../src/proxy/sse.js';
import { isUsageOnlyChunk } from '../../src/proxy/stream-usage.js';

const b = (text: string) => Buffer.from(text);

describe('SseEventCutter', () => {
  it('passes whole events through at once and holds back only an incomplete tail', () => {
    const cutter = new SseEventCutter();
    expect(cutter.push(b('data: 1\n\ndata: 2\n\n')).toString()).toBe('data: 1\n\ndata: 2\n\n');
    expect(cutter.push(b('data: 3\n\ndata: {"x"')).toString()).toBe('data: 3\n\n');
    expect(cutter.pending.toString()).toBe('data: {"x"');
    expect(cutter.push(b(':1}\n')).toString()).toBe('');
    expect(cutter.push(b('\nevent: end\n')).toString()).toBe('data: {"x":1}\n\n');
    expect(cutter.pending.toString()).toBe('event: end\n');
  });

  it('knows CRLF boundaries and does not cut a CR that may start CRLF in the next chunk', () => {
    expect(lastBoundaryEnd(b('data: 1\r\n\r\ndata: 2'))).toBe(11);
    expect(lastBoundaryEnd(b('data: 1\r\r'))).toBe(0);
    expect(lastBoundaryEnd(b('data: 1\r\rx'))).toBe(9);
    expect(lastBoundaryEnd(b('data: 1\n'))).toBe(0);
  });
});

describe('eventsMentioning', () => {
  it('parses the JSON data of the events containing the needle and skips the rest', () => {
    const events = 'data: {"a":1}\n\ndata: {"usage":{"prompt_tokens":3}}\n\ndata: [DONE]\n\n';
    expect(eventsMentioning(events, '"usage"')).toEqual([{ usage: { prompt_tokens: 3 } }]);
    expect(eventsMentioning('event: message_delta\ndata: {"usage":{"output_tokens":9}}\n\n', '"usage"')).toEqual([
      { usage: { output_tokens: 9 } },
    ]);
    expect(eventsMentioning(events, '"nothing"')).toEqual([]);
  });
});

describe('withoutEvents', () => {
  it('drops the usage-only chunk and keeps every other event byte for byte, CRLF included', () => {
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3}}';
    const events = `data: {"choices":[{"index":0}],"usage":null}\r\n\r\n${usage}\n\ndata: [DONE]\n\n`;
    expect(withoutEvents(events, '"usage"', isUsageOnlyChunk)).toBe('data: {"choices":[{"index":0}],"usage":null}\r\n\r\ndata: [DONE]\n\n');
    expect(withoutEvents(`${usage}\n\n`, '"usage"', isUsageOnlyChunk)).toBe('');
    expect(withoutEvents('data: {"a":1}\n\n', '"usage"', isUsageOnlyChunk)).toBe('data: {"a":1}\n\n');
  });
});
