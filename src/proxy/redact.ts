/** Bodies in the request log keep at most this many bytes of UTF-8. */
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
  return text
    .replace(kSecretFields, `$1"${kRedacted}"`)
    .replace(kBearer, `$1${kRedacted}`)
    .replace(kKeyLike, kRedacted);
}

/**
 * Redacts, then keeps at most 64 KiB of UTF-8, never splitting a character.
 *
 * @example
 * ```ts
 * Buffer.byteLength(logBody('é'.repeat(40_000))); // 65536
 * ```
 */
export function logBody(text: string): string {
  const redacted = redactSecrets(text);
  if (redacted.length <= kLogBodyLimitBytes / 3) return redacted; // 3 bytes per UTF-16 unit at most: fits
  const bytes = Buffer.from(redacted, 'utf8');
  if (bytes.length <= kLogBodyLimitBytes) return redacted;
  let end = kLogBodyLimitBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
