/**
 * Cuts an upstream SSE byte stream at event boundaries. Complete events go out at once; only an incomplete
 * tail waits for the next chunk. Providers write whole events per chunk, so in practice nothing waits; the point
 * is that if the upstream fails mid-event, what the client has received ends on a boundary and the error event
 * we append parses cleanly instead of corrupting the last one.
 */
export class SseEventCutter {
  #pending: Buffer | null = null;

  /** Returns the complete events in `pending + chunk` (possibly empty) and keeps the rest. */
  push(chunk: Buffer): Buffer {
    const data = this.#pending ? Buffer.concat([this.#pending, chunk]) : chunk;
    const end = lastBoundaryEnd(data);
    if (end === data.length) {
      this.#pending = null;
      return data;
    }
    this.#pending = data.subarray(end);
    return data.subarray(0, end);
  }

  /** Bytes after the last complete event: non-empty means the stream stopped mid-event. */
  get pending(): Buffer {
    return this.#pending ?? Buffer.alloc(0);
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** Index just past the last blank line (`\n\n`, `\r\n\r\n` or `\r\r`) in `data`, 0 when none. */
export function lastBoundaryEnd(data: Buffer): number {
  for (let i = data.length - 1; i >= 1; i--) {
    const byte = data[i];
    if (byte === LF) {
      if (data[i - 1] === LF) return i + 1;
      if (data[i - 1] === CR && i >= 3 && data[i - 2] === LF && data[i - 3] === CR) return i + 1;
    } else if (byte === CR && data[i - 1] === CR) {
      // `\r\r` is a boundary unless it is the start of `\r\r\n` split across chunks; wait for the next byte then.
      if (i + 1 < data.length) return i + 1;
    }
  }
  return 0;
}

/**
 * The JSON `data` of each event in a block of complete events that mentions `needle`, parsed; events whose data is
 * not JSON (e.g. `[DONE]`) are skipped. Scanning for the needle first keeps the per-chunk cost to a substring search.
 */
export function eventsMentioning(events: string, needle: string): unknown[] {
  if (!events.includes(needle)) return [];
  const out: unknown[] = [];
  for (const event of events.split(kEventBoundary)) {
    if (!event.includes(needle)) continue;
    const data = eventJson(event);
    if (data !== undefined) out.push(data);
  }
  return out;
}

/**
 * A block of complete events without those that mention `needle` and whose JSON `data` `drop` accepts; every
 * other event keeps its exact bytes. Used to hide an event the upstream sent only because the proxy asked for it.
 */
export function withoutEvents(events: string, needle: string, drop: (data: unknown) => boolean): string {
  if (!events.includes(needle)) return events;
  // With the boundary captured, the parts alternate: event, its boundary, event, ...
  const parts = events.split(new RegExp(`(${kEventBoundary.source})`));
  let out = '';
  for (let i = 0; i < parts.length; i += 2) {
    const event = parts[i];
    if (event.includes(needle) && drop(eventJson(event))) continue;
    out += event + (parts[i + 1] ?? '');
  }
  return out;
}

const kEventBoundary = /\r?\n\r?\n|\r\r/;

/** An event's `data` lines joined and parsed; undefined when they are not JSON (e.g. `[DONE]`). */
function eventJson(event: string): unknown {
  const data = event
    .split(/\r?\n|\r/)
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line[5] === ' ' ? 6 : 5))
    .join('\n');
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined; // not JSON: nothing to read
  }
}
