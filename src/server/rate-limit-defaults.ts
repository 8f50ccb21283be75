// The request limits' defaults, apart from the plugin so that `svc --help` can show them without loading
// @fastify/rate-limit (an optional dependency: the library-only install has no server).
export const kDefaultRateLimits = Object.freeze({ windowMs: 60_000, failedAuthPerWindow: 20 });
