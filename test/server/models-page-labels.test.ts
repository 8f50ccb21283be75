// The models page isolates label names it renders (the caller's text): each class or label name in the heat map and
// the classify readout sits in an element with `unicode-bidi: isolate`, and the readout writes bidi controls as
// escapes, so a U+202E in a label cannot reverse what follows it. (The page in Chromium: test/e2e/models-page.test.ts.)
import { expect, it } from 'vitest';

import { modelsPage } from '../../src/server/models-page.js';

const html = modelsPage('n0nce');
const script = html.slice(html.indexOf('<script nonce="n0nce">') + '<script nonce="n0nce">'.length, html.indexOf('</script>'));

it('isolates every rendered label and escapes bidi controls in the classify readout', () => {
  expect(html).toContain('  .label-name { unicode-bidi:isolate; }\n');
  expect(html).toContain('<pre id="classify-result" dir="ltr" class="label-name"></pre>');
  expect(script).toContain("class: 'row-label label-name' }, report.labels[r]");
  expect(script).toContain("class: 'column-label label-name' }, name");
  expect(script).toContain("$('classify-result').textContent = readout(answer.predictions[0]);");

  // The page's own readout, run: a label with U+202E comes out as the text \u202e and parses back to the same value.
  const definition = /const bidiControls = (.+);\n\s*const readout = (.+);\n/.exec(script)!;
  const readout = new Function(`const bidiControls = ${definition[1]}; return ${definition[2]};`)() as (value: unknown) => string;
  const prediction = { label: 'billing\u202e gnippihs', probability: 0.75 };
  expect(readout(prediction)).toBe('{\n  "label": "billing\\u202e gnippihs",\n  "probability": 0.75\n}');
  expect(JSON.parse(readout(prediction))).toEqual(prediction);
  expect(readout({ label: 'חשבון' })).toBe('{\n  "label": "חשבון"\n}');
});
