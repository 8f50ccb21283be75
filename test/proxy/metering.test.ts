import { describe, expect, it } from 'vitest';
import { usageInTail, UsageBody } from '../../src/proxy/body-usage.js';
import { kDefaultOutputReservation, outputAllowance } from '../../src/proxy/budget.js';
import { kDialects } from '../../src/proxy/dialects.js';
import { estimateTokens, Meter } from '../../src/proxy/metering.js';
import { durationMs } from '../../src/proxy/rate-limit-headers.js';

describe('estimateTokens', () => {
  it('is a quarter of the bytes, rounded up, and at least one token per delta', () => {
    expect(estimateTokens(0)).toBe(0);
    expect(estimateTokens(26, 5)).toBe(7);
    expect(estimateTokens(26, 9)).toBe(9);
  });
});

describe('Meter', () => {
  it('charges the reported usage of a complete call, estimates where a count is missing', () => {
    const meter = new Meter(400);
    expect(meter.inputEstimate).toBe(100);
    meter.addStreamed('Echo: hi');
    expect(meter.final('complete')).toEqual({ tokensIn: 100, tokensOut: 2 });
    meter.report({ tokensIn: 7, tokensOut: 9 });
    expect(meter.final('complete')).toEqual({ tokensIn: 7, tokensOut: 9 });
    expect(meter.final('nothing')).toEqual({ tokensIn: 7, tokensOut: 9 });
  });

  it('charges a partial call the larger of the reported output and what was streamed', () => {
    const meter = new Meter(40);
    meter.report({ tokensIn: 3, tokensOut: 1 }); // Anthropic's message_start
    for (const piece of ['Echo:', ' one', ' two']) meter.addStreamed(piece);
    expect(meter.final('partial')).toEqual({ tokensIn: 3, tokensOut: 4 });
    // While streaming, the budget counts only what is certain: the reported input and one token per delta.
    expect(meter.running()).toBe(6);
    expect(new Meter(40).final('nothing')).toEqual({ tokensIn: null, tokensOut: null });
  });
});

describe('streamedText', () => {
  it('reads content, tool arguments and reasoning from OpenAI and Mistral chunks, text and JSON from Anthropic deltas', () => {
    expect(
      kDialects.openai.streamedText({ choices: [{ delta: { content: 'a', tool_calls: [{ function: { arguments: '{"x"' } }] } }] }),
    ).toBe('a{"x"');
    expect(kDialects.mistral.streamedText({ choices: [{ delta: { content: [{ type: 'text', text: 'b' }] } }] })).toBe('b');
    expect(kDialects.openai.streamedText({ choices: [], usage: { prompt_tokens: 1 } })).toBe('');
    expect(kDialects.anthropic.streamedText({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'c' } })).toBe('c');
    expect(kDialects.anthropic.streamedText({ type: 'content_block_delta', delta: { type: 'input_json_delta', partial_json: '{' } })).toBe(
      '{',
    );
    expect(kDialects.anthropic.streamedText({ type: 'message_delta', usage: { output_tokens: 3 } })).toBe('');
  });
});

describe('UsageBody', () => {
  it('parses a small body whole, and finds the usage at the end of a larger one', () => {
    const small = new UsageBody();
    small.push(Buffer.from('{"usage":{"prompt_tokens":1,'));
    small.push(Buffer.from('"completion_tokens":2}}'));
    expect(small.body()).toEqual({ usage: { prompt_tokens: 1, completion_tokens: 2 } });

    const large = new UsageBody();
    large.push(Buffer.from('{"choices":[{"message":{"content":"the \\"usage\\": {} of '));
    const mib = Buffer.alloc(1 << 20, 'x');
    for (let i = 0; i < 17; i++) large.push(mib);
    large.push(Buffer.from('"}}],"usage":{"prompt_tokens":5,"completion_tokens":1234,"details":{"cached":[0]}}}'));
    expect(large.bytes).toBeGreaterThan(17 * 1024 * 1024);
    expect(large.body()).toEqual({ usage: { prompt_tokens: 5, completion_tokens: 1234, details: { cached: [0] } } });
  });

  it('reads no usage from a tail without one, or with an escaped key only', () => {
    expect(usageInTail('"content":"no usage here"}')).toBeNull();
    expect(usageInTail('"content":"say \\"usage\\":{\\"a\\":1}"}')).toBeNull();
    expect(usageInTail('"usage":{"input_tokens":3,"output_tokens":4}}')).toEqual({ input_tokens: 3, output_tokens: 4 });
  });
});

describe('outputAllowance', () => {
  it("is the body's max_tokens or max_completion_tokens, else the default", () => {
    expect(outputAllowance({ max_tokens: 64 })).toBe(64);
    expect(outputAllowance({ max_completion_tokens: 32 })).toBe(32);
    expect(outputAllowance({ max_tokens: 'many' })).toBe(kDefaultOutputReservation);
    expect(outputAllowance({})).toBe(4096);
  });
});

describe('durationMs', () => {
  it('reads the durations the request limiter writes', () => {
    expect(durationMs('850ms')).toBe(850);
    expect(durationMs('59.998s')).toBe(59_998);
    expect(durationMs('6m0s')).toBe(360_000);
    expect(durationMs('soon')).toBeNull();
    expect(durationMs('')).toBeNull();
  });
});
