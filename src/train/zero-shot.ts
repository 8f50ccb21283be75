// Zero-shot examples from label names, SetFit's recipe: each name is put into a few template
// sentences, and those sentences are the examples the head is fitted on. The templates are few and
// plain on purpose: the encoder places "This sentence is about sports" near texts about sports, and
// the head learns which side of the space each name's sentences fall on.
import type { ClassExample, LabelSetExample, TrainExample } from '../contract/train-request.js';

/** The sentences each label name is put into (`{}` is the name). SetFit's default template is the first. */
export const kZeroShotTemplates: readonly string[] = Object.freeze([
  'This sentence is about {}.',
  'This text is about {}.',
  'This is {}.',
  'It is about {}.',
  'The topic is {}.',
  '{}',
]);

/** For a binary label_text, the other side's sentences: the same templates, the name negated. */
export const kZeroShotNegatedTemplates: readonly string[] = Object.freeze([
  'This sentence is not about {}.',
  'This text is not about {}.',
  'This is not {}.',
  'It is not about {}.',
  'The topic is not {}.',
  'not {}',
]);

const fill = (templates: readonly string[], name: string) => templates.map((template) => template.replace('{}', name));

/**
 * Binary zero-shot examples: `label_text` in every template (true), and negated (false).
 *
 * @example
 * ```ts
 * binaryZeroShot('positive review')[0]; // { text: 'This sentence is about positive review.', label: true, label_text: 'positive review' }
 * ```
 */
export function binaryZeroShot(labelText: string): TrainExample[] {
  return [
    ...fill(kZeroShotTemplates, labelText).map((text) => ({ text, label: true, label_text: labelText })),
    ...fill(kZeroShotNegatedTemplates, labelText).map((text) => ({ text, label: false, label_text: labelText })),
  ];
}

/** Multi-class zero-shot examples: every class name in every template. */
export function classZeroShot(labels: readonly string[]): ClassExample[] {
  return labels.flatMap((label) => fill(kZeroShotTemplates, label).map((text) => ({ text, label })));
}

/** Multi-label zero-shot examples: each label's sentences carry that label only. */
export function labelSetZeroShot(labels: readonly string[]): LabelSetExample[] {
  return labels.flatMap((label) => fill(kZeroShotTemplates, label).map((text) => ({ text, labels: [label] })));
}
