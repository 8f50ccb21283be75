import { describe, expect, it } from 'vitest';
import { downstreamHeaders, upstreamHeaders } from '../../src/proxy/headers.js';

describe('upstreamHeaders', () => {
  const incoming = {
    host: '127.0.0.1:8080',
    authorization: 'Bearer svc_client',
    'x-api-key': 'svc_client',
    cookie: 'session=1',
    connection: 'keep-alive, x-hop',
    'x-hop': 'dropped because Connection names it',
    'keep-alive': 'timeout=5',
    'transfer-encoding': 'chunked',
    'content-length': '999',
    'accept-encoding': 'gzip, br',
    'openai-organization': 'org-client',
    'user-agent': 'OpenAI/JS 6.49.0',
    'anthropic-version': '2023-06-01',
    'content-type': 'application/json; charset=utf-8',
  };

  it("keeps only the headers the provider's API reads, and adds the operator key", () => {
    expect(upstreamHeaders(incoming, 'provider-a', 'sk-op', 42)).toEqual({
      'user-agent': 'OpenAI/JS 6.49.0',
      'content-type': 'application/json',
      'content-length': 42,
      'accept-encoding': 'identity',
      authorization: 'Bearer sk-op',
    });
  });

  it('sends the Anthropic key as x-api-key with a default API version', () => {
    expect(upstreamHeaders({ 'x-api-key': 'svc_client' }, 'provider-c', 'sk-ant-op', 7)).toEqual({
      'content-type': 'application/json',
      'content-length': 7,
      'accept-encoding': 'identity',
      'x-api-key': 'sk-ant-op',
      'anthropic-version': '2023-06-01',
    });
  });
});

describe('downstreamHeaders', () => {
  it("drops the operator's account headers, cookies and hop-by-hop ones; a stream loses its length and gets the no-buffering headers", () => {
    const upstream = {
      'content-type': 'text/event-stream',
      'content-length': '10',
      'set-cookie': ['a=1'],
      connection: 'close',
      'retry-after': '7',
      'openai-organization': 'org-operator',
      'x-ratelimit-limit-tokens': '1000000',
      server: 'cloudflare',
    };
    expect(downstreamHeaders(upstream, false)).toEqual({ 'content-type': 'text/event-stream', 'content-length': '10', 'retry-after': '7' });
    expect(downstreamHeaders(upstream, true)).toEqual({
      'content-type': 'text/event-stream',
      'retry-after': '7',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
  });
});
