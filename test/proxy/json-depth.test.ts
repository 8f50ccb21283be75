import { describe, expect, it } from 'vitest';
import { kMaxJsonDepth, nestsDeeperThan } from '../../src/proxy/json-depth.js';

describe('nestsDeeperThan', () => {
  it('counts objects and arrays, not brackets inside strings or after escaped quotes', () => {
    expect(kMaxJsonDepth).toBe(128);
    expect(nestsDeeperThan(Buffer.from('{"a":[[1]]}'), 3)).toBe(false);
    expect(nestsDeeperThan(Buffer.from('{"a":[[1]]}'), 2)).toBe(true);
    expect(nestsDeeperThan(Buffer.from('{"a":"[[[[{{{{"}'), 1)).toBe(false);
    expect(nestsDeeperThan(Buffer.from('{"a":"\\"[[[[","b":1}'), 1)).toBe(false);
    expect(nestsDeeperThan(Buffer.from('[{},{},{}]'), 2)).toBe(false);
  });

  it('finds an 8,000-deep body, and passes one at the bound', () => {
    expect(nestsDeeperThan(Buffer.from(`${'['.repeat(8000)}${']'.repeat(8000)}`), kMaxJsonDepth)).toBe(true);
    expect(nestsDeeperThan(Buffer.from(`${'['.repeat(128)}${']'.repeat(128)}`), kMaxJsonDepth)).toBe(false);
    expect(nestsDeeperThan(Buffer.from(`${'['.repeat(129)}${']'.repeat(129)}`), kMaxJsonDepth)).toBe(true);
  });
});
