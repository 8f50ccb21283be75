// The environment variables: one module reads them (src/environment.ts), with one rule for empty values and the
// form checks; every other module gets the values from it, which the last test keeps true.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { environment, kEnvironmentVariables } from '../src/environment.js';

const kSrc = fileURLToPath(new URL('../src', import.meta.url));

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

describe('environment', () => {
  it('reads each variable by its name, an empty value as unset', () => {
    const env = environment({
      SVC_DATABASE_URL: 'postgres://svc@db.internal/svc',
      SVC_PRECISION: '',
      SVC_URL: 'http://10.0.0.7:8080',
      SVC_KEY: '',
      SVC_LOG_LEVEL: 'warn',
      SVC_TRUST_PROXY: 'loopback',
      LIBC: 'musl',
    });
    expect(env.databaseUrl).toBe('postgres://svc@db.internal/svc');
    expect(env.serviceUrl).toBe('http://10.0.0.7:8080');
    expect(env.apiKey).toBeUndefined();
    expect(env.logLevel).toBe('warn');
    expect(env.trustProxy).toBe('loopback');
    expect(env.libc).toBe('musl');
    expect(env.metricsToken).toBeUndefined();
    expect(env.precision).toBeUndefined(); // empty: unset
  });

  it('splits SVC_PROXY_MODELS at commas and drops blanks', () => {
    expect(environment({ SVC_PROXY_MODELS: ' provider-a:gpt-4o-mini, ,provider-b:mistral-small ' }).proxyModels).toEqual([
      'provider-a:gpt-4o-mini',
      'provider-b:mistral-small',
    ]);
    expect(environment({}).proxyModels).toEqual([]);
  });

  it("reads a provider's URL and key from SVC_PROVIDER_<A|B|C>_URL and _KEY", () => {
    const env = environment({ SVC_PROVIDER_B_URL: 'http://127.0.0.1:9000', SVC_PROVIDER_B_KEY: 'sk-op', SVC_PROVIDER_C_KEY: '' });
    expect(env.provider('provider-b')).toEqual({ url: 'http://127.0.0.1:9000', key: 'sk-op' });
    expect(env.provider('provider-c')).toEqual({ url: undefined, key: undefined });
  });

  it('checks the byte limits when they are read, naming the variable', () => {
    const env = environment({ SVC_LOG_BODY_BYTES: '65536', SVC_LOG_PROJECT_BODY_BYTES: '64k' });
    expect(env.logBodyBytes).toBe(65536);
    expect(() => env.logProjectBodyBytes).toThrow(new TypeError('SVC_LOG_PROJECT_BODY_BYTES must be a positive integer'));
    // Another value of the same environment still reads: a command pays only for the values it uses.
    expect(env.apiKey).toBeUndefined();
  });

  it('reads the environment when a value is asked for', () => {
    const source: Record<string, string | undefined> = {};
    const env = environment(source);
    expect(env.metricsToken).toBeUndefined();
    source.SVC_METRICS_TOKEN = 'scrape-me';
    expect(env.metricsToken).toBe('scrape-me');
  });

  it('names every variable docs/configuration.md lists, and the docs name every one it reads', () => {
    const docs = readFileSync(fileURLToPath(new URL('../docs/configuration.md', import.meta.url)), 'utf8');
    const table = docs.slice(docs.indexOf('Environment variables'));
    for (const name of Object.values(kEnvironmentVariables).filter((name) => name.startsWith('SVC_'))) {
      expect(table, name).toContain(`\`${name}\``);
    }
    expect(table).toContain('`SVC_PROVIDER_A_URL`');
    expect(table).toContain('`SVC_PROVIDER_A_KEY`');
  });

  it('is the only module of src/ that reads process.env', () => {
    const readers = [...sourceFiles(kSrc)]
      .map((path) => relative(kSrc, path).split('\\').join('/'))
      .filter((file) => file !== 'environment.ts')
      // Code in a comment (an @example of a user's own setup) reads nothing.
      .filter((file) => /^(?!\s*(\/\/|\/\*|\*)).*\bprocess\.env\b/m.test(readFileSync(join(kSrc, file), 'utf8')));
    expect(readers).toEqual([]);
  });
});
