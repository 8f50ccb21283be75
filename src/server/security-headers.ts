import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { errorBody } from './errors.js';

// What a response may load when it is not the dashboard: nothing. JSON and model files never run in a page, and no
// page may frame ours (clickjacking) or re-point its relative URLs.
const kLockedDownPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The dashboard's policy: its one inline script and stylesheet run because they carry this response's nonce, and
 * nothing else does (an injected `<script>` has no nonce; `'unsafe-inline'` is never granted). It may fetch only
 * from this service.
 *
 * @example
 * ```ts
 * pagePolicy('q0Zl2S5h1Xw'); // "default-src 'none'; script-src 'nonce-q0Zl2S5h1Xw'; style-src 'nonce-q0Zl2S5h1Xw'; ..."
 * ```
 */
export function pagePolicy(nonce: string): string {
  return `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`;
}

/** A fresh nonce per response: 128 random bits, base64url (no characters that need escaping in HTML or CSP). */
export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Sets the headers every response carries, whatever route answers (hijacked proxy replies too: they are set on the
 * raw response, which `writeHead` merges). A route with a page of its own overrides the policy with
 * {@link pagePolicy}.
 */
export function setSecurityHeaders(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  reply.raw.setHeader('x-content-type-options', 'nosniff');
  reply.raw.setHeader('content-security-policy', kLockedDownPolicy);
  reply.raw.setHeader('x-frame-options', 'DENY');
  reply.raw.setHeader('referrer-policy', 'no-referrer');
  done();
}

const kFrameworkErrors: Readonly<Record<string, { status: number; message: string }>> = Object.freeze({
  FST_ERR_BAD_URL: { status: 400, message: 'The request path is not valid URL encoding' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, message: 'A path parameter is longer than the limit of 100 characters' },
});

/**
 * Fastify's `frameworkErrors` option: the answers it gives before any route or hook runs (a path that is not valid
 * percent-encoding, a parameter over the length limit) in the service's error shape and with the headers every
 * response carries. The path itself is not echoed: it can be kilobytes of anything.
 */
export function answerFrameworkError(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
  const known = kFrameworkErrors[error.code ?? ''] ?? { status: 400, message: 'The request could not be routed' };
  setSecurityHeaders(request, reply, () => {});
  void reply
    .code(known.status)
    .type('application/json; charset=utf-8')
    .send(errorBody(known.status, known.message, 'invalid_request'));
}
