import { describe, expect, it } from 'vitest';
import { resolveProviderConfig, resolveProxyOptions } from '../../src/proxy/config.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';

describe('resolveProviderConfig', () => {
  it('takes options first, then SVC_PROVIDER_* variables, then the public API addresses', () => {
    const env = { SVC_PROVIDER_A_URL: 'http://10.0.0.1:9000/v1/', SVC_PROVIDER_A_KEY: 'env-a', SVC_PROVIDER_C_KEY: 'env-c' };
    expect(resolveProviderConfig({ 'provider-a': { key: 'opt-a' }, 'provider-b': { url: 'https://eu.example/' } }, env)).toEqual({
      'provider-a': { url: 'http://10.0.0.1:9000/v1', key: 'opt-a' },
      'provider-b': { url: 'https://eu.example', key: '' },
      'provider-c': { url: 'https://api.anthropic.com', key: 'env-c' },
    });
    expect(resolveProviderConfig({}, {})).toEqual({
      'provider-a': { url: 'https://api.openai.com/v1', key: '' },
      'provider-b': { url: 'https://api.mistral.ai', key: '' },
      'provider-c': { url: 'https://api.anthropic.com', key: '' },
    });
  });

  it('rejects a URL that is not http(s)', () => {
    expect(() => resolveProviderConfig({ 'provider-b': { url: 'ftp://x' } }, {})).toThrow(
      new TypeError("options.providers['provider-b'].url must be an http(s) URL"),
    );
  });
});

describe('resolveProxyOptions', () => {
  it('fills in defaults and names a bad option', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-proxy-config-'));
    const service = new SvcService({ store: SqliteStore.open(dir), runtime: new WordCountRuntime(dir) });
    try {
      const resolved = resolveProxyOptions({ service, env: {} });
      expect([resolved.upstreamTimeoutMs, resolved.pingIntervalMs, resolved.bodyLimit]).toEqual([600_000, 5_000, 16_777_216]);
      expect(resolved.service).toBe(service);
      expect(resolved.requestLog).toEqual({ maxBodyBytes: 32_768, maxProjectBodyBytes: 268_435_456 });
      const env = { SVC_LOG_BODY_BYTES: '4096', SVC_LOG_PROJECT_BODY_BYTES: '1048576' };
      expect(resolveProxyOptions({ service, env }).requestLog).toEqual({ maxBodyBytes: 4096, maxProjectBodyBytes: 1_048_576 });
      expect(resolveProxyOptions({ service, env, requestLog: { maxBodyBytes: 100 } }).requestLog.maxBodyBytes).toBe(100);
      expect(() => resolveProxyOptions({ service, env: { SVC_LOG_BODY_BYTES: 'lots' } })).toThrow(
        new TypeError('SVC_LOG_BODY_BYTES must be a positive integer'),
      );
      expect(() => resolveProxyOptions({ service, env: {}, requestLog: { maxProjectBodyBytes: 0 } })).toThrow(
        new RangeError('options.requestLog.maxProjectBodyBytes must be a positive integer'),
      );
      expect(() => resolveProxyOptions({ service, pingIntervalMs: 0 })).toThrow(
        new RangeError('options.pingIntervalMs must be a positive integer'),
      );
      expect(() => resolveProxyOptions({ store: {} } as never)).toThrow(new TypeError('options.service must be an SvcService'));
    } finally {
      service.store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
