import { createHash, randomBytes } from 'node:crypto';

const kBase62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Every API key starts with this, so leaked keys are easy to scan for. */
export const kKeyPrefix = 'svc_';
/** Random base62 characters after the prefix (~190 bits). */
export const kKeySecretLength = 32;
/** Characters of a key kept in the store for listings (`svc_1a2b`). */
export const kKeyShownPrefix = 8;

const kKeyPattern = new RegExp(`^${kKeyPrefix}[0-9A-Za-z]{${kKeySecretLength}}$`);

/** `n` characters drawn uniformly from base62 (rejection sampling: no modulo bias). */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const byte of randomBytes(n * 2)) {
      if (byte < 248 && out.length < n) out += kBase62[byte % 62];
    }
  }
  return out;
}

/** A new secret API key: `svc_` + 32 base62 characters. */
export function newApiKey(): string {
  return kKeyPrefix + randomBase62(kKeySecretLength);
}

/** True when the string has the shape of an API key (it may still be unknown or revoked). */
export function looksLikeApiKey(value: string): boolean {
  return kKeyPattern.test(value);
}

/** A key's public id (`newId('key_')`), as `svc keys list` and `svc keys create` show it. */
const kKeyIdPattern = /^key_[0-9a-f]{12}$/i;

/** The 401 for a key id sent as the key: what the key looks like and where it was shown. */
export const kKeyIdMessage =
  `This looks like a key id (key_…), not the API key: send the key itself (${kKeyPrefix}…), which was shown once, ` +
  'when it was created (svc keys create); if it is lost, create a new key and revoke the old one';

/** True when the string has the shape of a key id, the public half people paste instead of the key. */
export function looksLikeKeyId(value: string): boolean {
  return kKeyIdPattern.test(value);
}

/** The form the store keeps: SHA-256, hex. Keys are long and random, so no salt or slow hash is needed. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** `<prefix><12 hex>`, for ids users see (`key_`, `proj_`, `svc-small-`). */
export function newId(prefix: string): string {
  return prefix + randomBytes(6).toString('hex');
}
