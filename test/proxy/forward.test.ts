import { describe, expect, it } from 'vitest';
import { upstreamTarget } from '../../src/proxy/forward.js';

describe('upstreamTarget', () => {
  it('parses a provider URL once into what the HTTP client needs', () => {
    expect(upstreamTarget('https://api.openai.com/v1/chat/completions')).toEqual({
      secure: true,
      hostname: 'api.openai.com',
      port: 443,
      path: '/v1/chat/completions',
    });
    expect(upstreamTarget('http://[::1]:9000/mistral/v1/chat/completions?beta=1')).toEqual({
      secure: false,
      hostname: '::1',
      port: 9000,
      path: '/mistral/v1/chat/completions?beta=1',
    });
  });
});
