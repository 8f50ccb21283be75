// Argument checks for the library's options, one wording everywhere: a value of the wrong type is
// a TypeError, a number out of range a RangeError, both saying what the value must be
// (`options.threads must be a positive integer`). `undefined` is the caller's business: pass the
// default first (`positiveInteger(options.threads ?? 1, 'options.threads')`).

/** A non-null object (arrays included). */
export function object<T>(value: T, name: string): T & object {
  if (value === null || typeof value !== 'object') throw new TypeError(`${name} must be an object`);
  return value as T & object;
}

function integer(value: unknown, name: string, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new TypeError(`${name} must be ${what}`);
  return value;
}

/** An integer from 1 to `max` (default Number.MAX_SAFE_INTEGER). */
export function positiveInteger(value: unknown, name: string, max = Number.MAX_SAFE_INTEGER): number {
  const what = max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer from 1 to ${max}`;
  const n = integer(value, name, what);
  if (n < 1 || n > max) throw new RangeError(`${name} must be ${what}`);
  return n;
}

/** An integer >= 0 (seeds, token ids). */
export function nonNegativeInteger(value: unknown, name: string): number {
  const n = integer(value, name, 'a non-negative integer');
  if (n < 0) throw new RangeError(`${name} must be a non-negative integer`);
  return n;
}

/** A finite number in [min, max). */
export function numberInRange(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`${name} must be a number`);
  if (value < min || value >= max) throw new RangeError(`${name} must be in [${min}, ${max})`);
  return value;
}

export function boolean(value: unknown, name: string): boolean {
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean`);
  return value;
}

export function string(value: unknown, name: string): string {
  if (typeof value !== 'string') throw new TypeError(`${name} must be a string`);
  return value;
}

export function func<T extends (...args: never[]) => unknown>(value: unknown, name: string): T {
  if (typeof value !== 'function') throw new TypeError(`${name} must be a function`);
  return value as T;
}
