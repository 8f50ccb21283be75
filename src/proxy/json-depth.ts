/**
 * Deepest nesting of objects and arrays a proxied request body may have. Chat bodies nest a few levels (messages,
 * content parts, tool schemas a dozen or so); past this bound a body is refused before it is parsed or written
 * again, because writing an 8,000-deep value overflows the stack.
 */
export const kMaxJsonDepth = 128;

const kOpenBrace = 0x7b;
const kOpenBracket = 0x5b;
const kCloseBrace = 0x7d;
const kCloseBracket = 0x5d;
const kQuote = 0x22;
const kBackslash = 0x5c;

/**
 * Whether a JSON text nests objects and arrays deeper than `limit`, found in one pass over its bytes (brackets
 * inside strings do not count). Malformed JSON is the parser's to report: this only counts.
 *
 * @example
 * ```ts
 * nestsDeeperThan(Buffer.from('{"a":[[1]]}'), 2); // true
 * nestsDeeperThan(Buffer.from('{"a":"[[[["}'), 2); // false
 * ```
 */
export function nestsDeeperThan(json: Buffer, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const byte = json[i];
    if (inString) {
      if (byte === kBackslash) i++;
      else if (byte === kQuote) inString = false;
    } else if (byte === kQuote) {
      inString = true;
    } else if (byte === kOpenBrace || byte === kOpenBracket) {
      if (++depth > limit) return true;
    } else if (byte === kCloseBrace || byte === kCloseBracket) {
      depth--;
    }
  }
  return false;
}
