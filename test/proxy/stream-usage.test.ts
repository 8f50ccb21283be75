import { describe, expect, it } from 'vitest';
import { askForStreamUsage, isUsageOnlyChunk } from '../../src/proxy/stream-usage.js';

describe('askForStreamUsage', () => {
  it('asks an OpenAI stream for its usage unless the client did, keeping the client options', () => {
    const bare: Record<string, unknown> = { stream: true };
    expect([askForStreamUsage(bare, 'provider-a'), bare.stream_options]).toEqual([true, { include_usage: true }]);
    const declined: Record<string, unknown> = { stream: true, stream_options: { include_usage: false, include_obfuscation: false } };
    expect([askForStreamUsage(declined, 'provider-a'), declined.stream_options]).toEqual([
      true,
      { include_usage: true, include_obfuscation: false },
    ]);
    const asked: Record<string, unknown> = { stream: true, stream_options: { include_usage: true } };
    expect([askForStreamUsage(asked, 'provider-a'), asked.stream_options]).toEqual([false, { include_usage: true }]);
  });

  it('asks even when the client sent stream_options that are not an object, which would otherwise stream uncounted', () => {
    for (const given of ['yes', [true], 1, true, null, { include_usage: 'yes' }]) {
      const body: Record<string, unknown> = { stream: true, stream_options: given };
      expect([askForStreamUsage(body, 'provider-a'), body.stream_options]).toEqual([true, { include_usage: true }]);
    }
  });

  it('leaves alone what is not an OpenAI stream', () => {
    for (const [body, provider] of [
      [{ stream: false }, 'provider-a'],
      [{}, 'provider-a'],
      [{ stream: true }, 'provider-b'],
      [{ stream: true }, 'provider-c'],
      [{ stream: 'true', stream_options: 'yes' }, 'provider-a'],
    ] as const) {
      const copy = structuredClone(body) as Record<string, unknown>;
      expect(askForStreamUsage(copy, provider)).toBe(false);
      expect(copy).toEqual(body);
    }
  });
});

describe('isUsageOnlyChunk', () => {
  it('is the chunk with no choices and a usage object, nothing else', () => {
    expect(isUsageOnlyChunk({ choices: [], usage: { prompt_tokens: 1 } })).toBe(true);
    expect(isUsageOnlyChunk({ choices: [{ index: 0 }], usage: { prompt_tokens: 1 } })).toBe(false);
    expect(isUsageOnlyChunk({ choices: [], usage: null })).toBe(false);
    expect(isUsageOnlyChunk({ usage: { prompt_tokens: 1 } })).toBe(false);
    expect(isUsageOnlyChunk(undefined)).toBe(false);
    expect(isUsageOnlyChunk(null)).toBe(false);
  });
});
