// `svc models list`: the caller's models as a table a person reads at a glance. Two binary models differ only in
// their label_text, and a model just sent to training must be seen to exist, so both are columns.
import type { ModelList } from '../contract/schemas.js';

/** The table's columns, in order. */
const kColumns = ['ID', 'STATUS', 'TASK', 'LABELS'] as const;

const kTaskNames: Readonly<Record<string, string>> = Object.freeze({
  'binary-classification': 'binary',
  'multi-class-classification': 'multi-class',
  'multi-label-classification': 'multi-label',
});

type ListedModel = ModelList['data'][number];

/** One row: a classifier's id, status, task and label names, or a proxied chat model's id. */
function rowOf(model: ListedModel): string[] {
  if (!('status' in model)) return [model.id, '-', 'chat (proxy)', '-'];
  const labels = model.task_type === 'binary-classification' ? (model.label_text ?? '-') : (model.labels ?? []).join(', ');
  return [model.id, model.status, kTaskNames[model.task_type] ?? model.task_type, labels];
}

/**
 * `GET /v2/models`'s answer as a table: a header, then one line per model, columns padded to their widest cell.
 *
 * @example
 * ```ts
 * modelsTable({ object: 'list', data: [binaryModel, trainingModel] });
 * // ID                      STATUS    TASK    LABELS
 * // svc-small-9f8fda22125b  trained   binary  billing question
 * // svc-small-5b8257b3efa7  training  binary  refund request
 * ```
 */
export function modelsTable(list: ModelList): string {
  const rows = [[...kColumns], ...list.data.map(rowOf)];
  const widths = kColumns.map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const lines = rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column])))
      .join('  ')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}
