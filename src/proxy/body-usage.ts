/** Non-streaming bodies up to this size are parsed whole for their usage; larger ones are read from their tail. */
export const kWholeBodyLimitBytes = 16 * 1024 * 1024;
/** The tail kept of a larger body: the providers write `usage` last, and it is a few hundred bytes. */
const kTailBytes = 64 * 1024;

/**
 * Keeps what a non-streaming answer's usage is read from, with bounded memory: the whole body while it is at most
 * 16 MiB, and always its last 64 KiB. `body()` is the parsed JSON when the whole body was kept, else an object
 * holding only the `usage` object found in the tail (`{ usage }`), else null.
 */
export class UsageBody {
  #whole: Buffer[] | null = [];
  #tail: Buffer = Buffer.alloc(0);
  #bytes = 0;

  push(chunk: Buffer): void {
    this.#bytes += chunk.length;
    if (this.#whole !== null) {
      if (this.#bytes <= kWholeBodyLimitBytes) this.#whole.push(chunk);
      else this.#whole = null;
    }
    const joined = Buffer.concat([this.#tail, chunk]);
    this.#tail = joined.length > kTailBytes ? joined.subarray(joined.length - kTailBytes) : joined;
  }

  get bytes(): number {
    return this.#bytes;
  }

  body(): unknown {
    if (this.#whole !== null) {
      try {
        return JSON.parse(Buffer.concat(this.#whole).toString('utf8'));
      } catch {
        return null;
      }
    }
    const usage = usageInTail(this.#tail.toString('utf8'));
    return usage === null ? null : { usage };
  }
}

/**
 * The object after the last `"usage":` key in a piece of JSON text, or null. A quote inside a string value is
 * escaped (`\"usage\"`), so a bare `"usage"` followed by a colon is a key.
 */
export function usageInTail(text: string): unknown {
  const key = /"usage"\s*:\s*\{/g;
  let start = -1;
  for (let match = key.exec(text); match !== null; match = key.exec(text)) {
    if (match.index === 0 || text[match.index - 1] !== '\\') start = match.index + match[0].length - 1;
  }
  if (start < 0) return null;
  const end = objectEnd(text, start);
  if (end < 0) return null;
  try {
    return JSON.parse(text.slice(start, end)) as unknown;
  } catch {
    return null;
  }
}

/** Index just past the JSON object that opens at `start`, or -1 when the text ends first. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
