/** A text in the request log keeps at most this many bytes of UTF-8 unless its caller says fewer. */
export const kLogBodyLimitBytes = 64 * 1024;

const kRedacted = '[redacted]';

// JSON string values under keys that name a credential.
const kSecretFields =
  /("(?:api[_-]?key|x-api-key|authorization|proxy-authorization|password|secret|client[_-]?secret|access[_-]?token|refresh[_-]?token|cookie)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;
// Credentials wherever they appear: bearer values, our keys, common provider key formats.
const kBearer = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+/g;
const kKeyLike = /\b(?:svc_|sk-ant-|sk-|key-)[A-Za-z0-9_-]{8,}/g;

/**
 * Removes credentials from a body before it is logged: values of credential-named JSON fields, bearer tokens,
 * and strings shaped like API keys.
 *
 * @example
 * ```ts
 * redactSecrets('{"api_key":"abc","q":"Bearer sk-12345678"}');
 * // '{"api_key":"[redacted]","q":"Bearer [redacted]"}'
 * ```
 */
export function redactSecrets(text: string): string {
  return text.replace(kSecretFields, `$1"${kRedacted}"`).replace(kBearer, `$1${kRedacted}`).replace(kKeyLike, kRedacted);
}

/**
 * Redacts, then keeps at most `limit` bytes of UTF-8 (64 KiB unless given), never splitting a character.
 *
 * @example
 * ```ts
 * Buffer.byteLength(logBody('é'.repeat(40_000))); // 65536
 * logBody('Bearer sk-12345678 and more', 16); // 'Bearer [redacted'
 * ```
 */
export function logBody(text: string, limit: number = kLogBodyLimitBytes): string {
  const redacted = redactSecrets(text);
  if (redacted.length <= limit / 3) return redacted; // 3 bytes per UTF-16 unit at most: fits
  const bytes = Buffer.from(redacted, 'utf8');
  if (bytes.length <= limit) return redacted;
  let end = limit;
  // Step back over continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
