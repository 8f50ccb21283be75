import { isIP } from 'node:net';

/**
 * Which proxies in front of the server may say who the client is (`X-Forwarded-For`), as Fastify's `trustProxy`
 * takes it: `true` (every one: only when nothing reaches the server but through the proxy), a hop count (the n
 * nearest addresses are proxies), or addresses and CIDR ranges of the proxies (`10.0.0.0/8`, `::1`, or `loopback`,
 * `linklocal`, `uniquelocal`). `false` (the default) trusts none: `request.ip` is the peer's address.
 */
export type TrustProxy = boolean | number | string | readonly string[];

/** What Fastify's constructor takes. */
export type FastifyTrustProxy = boolean | string[] | ((address: string, hop: number) => boolean);

/** The names proxy-addr (Fastify's) knows for address ranges. */
const kRangeNames = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * A `trustProxy` setting checked (`name` says where it came from in messages), ready for Fastify's constructor.
 * Addresses are checked here so that a typo fails the start with the flag's name, not deep in Fastify. A hop count
 * becomes a function: Fastify 5 ignores a number (it cannot tell a proxy from a client that writes the header
 * itself), so a count is only right where nothing reaches the server but through that many proxies.
 *
 * @example
 * ```ts
 * checkTrustProxy(['10.0.0.0/8', '127.0.0.1'], 'options.trustProxy'); // ['10.0.0.0/8', '127.0.0.1']
 * checkTrustProxy('10.0.0/8', '--trust-proxy'); // RangeError: --trust-proxy: '10.0.0/8' is not an address, a CIDR range or loopback, linklocal, uniquelocal
 * ```
 */
export function checkTrustProxy(value: TrustProxy, name: string): FastifyTrustProxy {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`${name} must be true, false, a hop count (an integer >= 0) or addresses; got ${value}`);
    // Hop 0 is the peer's own address, 1 the last one it forwarded for, and so on: the nearest `value` are proxies.
    return value === 0 ? false : (_address: string, hop: number) => hop < value;
  }
  const list = typeof value === 'string' ? value.split(',') : [...value];
  const addresses = list.map((entry) => entry.trim()).filter((entry) => entry.length > 0);
  if (addresses.length === 0) throw new RangeError(`${name} names no address`);
  for (const address of addresses) {
    if (!isRange(address)) {
      throw new RangeError(`${name}: '${address}' is not an address, a CIDR range or ${[...kRangeNames].join(', ')}`);
    }
  }
  return addresses;
}

/**
 * A `trustProxy` setting as typed on the command line or in `SVC_TRUST_PROXY`, checked: `true`, `false`, a hop count,
 * or a comma-separated list of addresses and ranges.
 *
 * @example
 * ```ts
 * parseTrustProxy('1', '--trust-proxy'); // 1
 * parseTrustProxy('10.0.0.0/8, loopback', '--trust-proxy'); // ['10.0.0.0/8', 'loopback']
 * ```
 */
export function parseTrustProxy(text: string, name: string): TrustProxy {
  const trimmed = text.trim();
  if (trimmed === 'true' || trimmed === 'false') return trimmed === 'true';
  const value = /^\d+$/.test(trimmed)
    ? Number(trimmed)
    : trimmed
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0);
  checkTrustProxy(value, name);
  return value;
}

function isRange(entry: string): boolean {
  if (kRangeNames.has(entry)) return true;
  const slash = entry.indexOf('/');
  if (slash === -1) return isIP(entry) !== 0;
  const address = entry.slice(0, slash);
  const bits = entry.slice(slash + 1);
  const family = isIP(address);
  if (family === 0) return false;
  // proxy-addr also takes an IPv4 netmask (`10.0.0.0/255.0.0.0`).
  if (family === 4 && isIP(bits) === 4) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}
