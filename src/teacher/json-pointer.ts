// RFC 6901 JSON pointers, as a train request names where a logged call's text or label is ('/messages/1/content').
// A pointer is checked when the request arrives (a malformed one is the request's mistake, said once), and resolved
// against each logged body (a place that does not exist is that row's reason to be skipped, not an error).
import { SvcError } from '../errors.js';

/**
 * The reference tokens of an RFC 6901 pointer (`~1` is '/', `~0` is '~'); '' is the whole document. Throws
 * `SvcError('invalid_request')` naming `param` when `pointer` is not one.
 *
 * @example
 * ```ts
 * pointerTokens('/messages/1/content', 'from_log.text_pointer'); // ['messages', '1', 'content']
 * pointerTokens('/a~1b/c~0d', 'p');                               // ['a/b', 'c~d']
 * pointerTokens('messages', 'p'); // throws SvcError: p must be a JSON pointer starting with '/' (got 'messages')
 * ```
 */
export function pointerTokens(pointer: string, param: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) {
    throw new SvcError('invalid_request', `${param} must be a JSON pointer starting with '/' (got ${JSON.stringify(pointer)})`, { param });
  }
  // '~' must be followed by 0 or 1 (RFC 6901, section 3).
  if (/~(?![01])/.test(pointer)) {
    throw new SvcError(
      'invalid_request',
      `${param} has a '~' not followed by 0 or 1 (got ${JSON.stringify(pointer)}); write '~0' for '~'`,
      {
        param,
      },
    );
  }
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** An array index token: '0', or digits without a leading zero (RFC 6901, section 4). */
const kIndexToken = /^(?:0|[1-9][0-9]*)$/;

/**
 * The value at `tokens` (from {@link pointerTokens}) in `document`; undefined when there is no such place.
 *
 * @example
 * ```ts
 * resolvePointer({ messages: [{ content: 'a' }, { content: 'b' }] }, ['messages', '1', 'content']); // 'b'
 * resolvePointer({ messages: [] }, ['messages', '0']);                                              // undefined
 * ```
 */
export function resolvePointer(document: unknown, tokens: readonly string[]): unknown {
  let at: unknown = document;
  for (const token of tokens) {
    if (Array.isArray(at)) {
      if (!kIndexToken.test(token)) return undefined;
      at = at[Number(token)];
    } else if (at !== null && typeof at === 'object') {
      if (!Object.hasOwn(at, token)) return undefined;
      at = (at as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return at;
}
