import { describe, expect, it } from 'vitest';
import { kLogBodyLimitBytes, logBody, redactSecrets } from '../../src/proxy/redact.js';

describe('redactSecrets', () => {
  it('removes credential fields, bearer values and key-shaped strings', () => {
    expect(redactSecrets('{"api_key":"abc","q":"Bearer sk-12345678"}')).toBe('{"api_key":"[redacted]","q":"Bearer [redacted]"}');
    expect(redactSecrets('{"Authorization": "Basic dXNlcjpwYXNz", "password":"hunter2"}')).toBe(
      '{"Authorization": "[redacted]", "password":"[redacted]"}',
    );
    expect(redactSecrets('my key is svc_0123456789abcdef and sk-ant-api03-abcdefghij')).toBe('my key is [redacted] and [redacted]');
    expect(redactSecrets('{"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}')).toBe(
      '{"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}',
    );
  });
});

describe('logBody', () => {
  it('keeps at most 64 KiB of UTF-8 without splitting a character', () => {
    expect(kLogBodyLimitBytes).toBe(65_536);
    const body = logBody('é'.repeat(40_000));
    expect(Buffer.byteLength(body)).toBe(65_536);
    expect(body).toBe('é'.repeat(32_768));
    const odd = logBody(`x${'é'.repeat(40_000)}`);
    expect(Buffer.byteLength(odd)).toBe(65_535);
    expect(logBody('short')).toBe('short');
  });
});
