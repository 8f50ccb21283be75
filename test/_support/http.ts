// One HTTP call to a real server with fetch: an optional bearer token and JSON body, the answer as text.

export interface HttpAnswer {
  status: number;
  /** The content-type header. */
  type: string | null;
  text: string;
}

export async function httpCall(base: string, method: string, path: string, bearer: string | null, body?: unknown): Promise<HttpAnswer> {
  const response = await fetch(base + path, {
    method,
    headers: {
      ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}
