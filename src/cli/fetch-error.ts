// fetch() reports an unreachable service as "fetch failed" and keeps the reason in `cause`;
// a user needs both the address it tried and that reason (ECONNREFUSED: nothing listens there).

/** The innermost message (or code) of an error's cause chain. */
function rootCause(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause !== undefined) current = current.cause;
  if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
  if (current instanceof Error) return current.message || String((current as { code?: unknown }).code ?? current.name);
  return String(current);
}

/** `fetch`, with a failure to connect explained: the address, the cause, and where the address comes from. */
export async function fetchService(url: string, init: RequestInit): Promise<Response> {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol)) {
    throw new RangeError(`cannot call '${url}': the service URL (--url or SVC_URL) must look like http://host:port`);
  }
  const { origin } = parsed;
  try {
    return await fetch(url, init);
  } catch (error) {
    throw new Error(`cannot reach the service at ${origin} (${rootCause(error)}); is 'svc serve' running there? (--url or SVC_URL)`, {
      cause: error,
    });
  }
}
