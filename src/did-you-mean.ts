// "Did you mean": the known name closest to a mistyped one. The CLI's commands and options, the columns of an
// examples file and the fields of an HTTP body all suggest through this one rule, so a typo reads the same
// everywhere.

/**
 * Edits between `a` and `b`: inserting, deleting or replacing one character, or swapping two neighbours (so
 * `exmaples` is one edit from `examples`, as a typist sees it).
 *
 * @example
 * ```ts
 * editDistance('exmaples', 'examples'); // 1
 * editDistance('txt', 'text');          // 1
 * ```
 */
export function editDistance(a: string, b: string): number {
  // Three rows of the optimal-string-alignment table: the one two back is what a swap reads.
  let twoBack: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) current[j] = Math.min(current[j], twoBack[j - 2] + 1);
    }
    [twoBack, previous] = [previous, current];
  }
  return previous[b.length];
}

/** How far a typo may be from a name and still be taken for it: a third of its length, from 1 to 3 edits. */
function editsAllowed(typed: string): number {
  return Math.min(3, Math.max(1, Math.floor(typed.length / 3)));
}

/**
 * The name among `known` closest to `typed`, letter case aside, when it is within `maxEdits` edits (default: a
 * third of the typed length, from 1 to 3); undefined when none is that close. Ties go to the earlier name.
 *
 * @example
 * ```ts
 * closestName('lable', ['text', 'label', 'label_text']); // 'label'
 * closestName('temperature', ['model', 'inputs']);       // undefined
 * ```
 */
export function closestName(typed: string, known: Iterable<string>, maxEdits = editsAllowed(typed)): string | undefined {
  let best: string | undefined;
  let bestDistance = maxEdits + 1;
  for (const name of known) {
    if (name === typed) continue;
    const distance = editDistance(typed.toLowerCase(), name.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

/**
 * ` (did you mean 'examples'?)` for the name closest to `typed`, or '' when none is close: the tail of a message
 * that names something unknown.
 *
 * @example
 * ```ts
 * `unknown field 'exmaples'${didYouMean('exmaples', ['model', 'examples'])}`; // "unknown field 'exmaples' (did you mean 'examples'?)"
 * ```
 */
export function didYouMean(typed: string, known: Iterable<string>): string {
  const name = closestName(typed, known);
  return name === undefined ? '' : ` (did you mean '${name}'?)`;
}
