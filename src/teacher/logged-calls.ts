// Reading the proxy's logged calls as labelled examples: the text a call classified (from its request body), the
// chat model's reply text (from its response body, JSON or the SSE stream as the log keeps it) and the label that
// reply gives under the user's rule. Pure: no store, no I/O. A rule is checked once, when the request arrives
// (`labelReader`), so a bad regex or a label word outside the task is a 400 and never a failure halfway through a log;
// a row whose text or label cannot be read gives null, and the caller counts and samples it.
import { SvcError } from '../errors.js';
import { labelNameKey } from '../contract/labelled-examples.js';
import { pointerTokens, resolvePointer } from './json-pointer.js';
import type { TeacherLabel, TeacherTask } from './protocol.js';

/** The proxied providers, as the request log names them. */
export type LoggedProvider = 'provider-a' | 'provider-b' | 'provider-c';

/** Where a reply's label is: a JSON pointer into the reply parsed as JSON, a regular expression, or label words. */
export type LabelRule = { pointer: string } | { regex: string; flags?: string } | { words: Record<string, string[]> };

/** Regex flags a rule may set: `g` and `y` would make one compiled expression remember where it stopped. */
const kRegexFlags = /^[imsu]*$/;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A message's content: the string, or its text parts joined with '\n' (OpenAI parts and Anthropic blocks alike). */
function contentText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts = content.filter((part) => isRecord(part) && part.type === 'text' && typeof part.text === 'string');
  return texts.length === 0 ? null : texts.map((part) => (part as { text: string }).text).join('\n');
}

/**
 * The text a logged call classified: by default the last user message (string content, or its text parts joined
 * with '\n'; Anthropic's content blocks too); with `pointer` (RFC 6901) the string at that place of the request
 * JSON. null when absent or not a string; a malformed pointer throws `SvcError('invalid_request')`.
 *
 * @example
 * ```ts
 * const body = JSON.stringify({ model: 'provider-a:m', messages: [{ role: 'system', content: 'Answer yes or no' },
 *   { role: 'user', content: [{ type: 'text', text: 'Is this billing?' }, { type: 'text', text: 'Refund me' }] }] });
 * callText(body);                          // 'Is this billing?\nRefund me'
 * callText(body, '/messages/0/content');   // 'Answer yes or no'
 * callText(body, '/messages/5/content');   // null
 * ```
 */
export function callText(requestBody: string, pointer?: string): string | null {
  const tokens = pointer === undefined ? null : pointerTokens(pointer, 'from_log.text_pointer');
  const body = parseJson(requestBody);
  if (body === undefined) return null;
  if (tokens !== null) {
    const value = resolvePointer(body, tokens);
    return typeof value === 'string' ? value : null;
  }
  const messages = isRecord(body) && Array.isArray(body.messages) ? body.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message: unknown = messages[i];
    if (isRecord(message) && message.role === 'user') return contentText(message.content);
  }
  return null;
}

/** The `data:` payloads of an SSE stream, one per event (multi-line data joined with '\n'); null when one is not JSON. */
function sseEvents(stream: string): unknown[] | null {
  const events: unknown[] = [];
  let data: string[] = [];
  const flush = (): boolean => {
    if (data.length === 0) return true;
    const payload = data.join('\n');
    data = [];
    if (payload.trim() === '[DONE]') return true;
    const event = parseJson(payload);
    if (event === undefined) return false;
    events.push(event);
    return true;
  };
  for (const line of stream.split(/\r?\n/)) {
    if (line === '') {
      if (!flush()) return null;
    } else if (line.startsWith('data:')) {
      data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
  }
  // The log may end mid-event (a stream cut, or the 64 KiB cap): a partial event makes the reply unreadable.
  return flush() && events.length > 0 ? events : null;
}

/** A tool call's arguments when the reply is one (and carries no text), else the text. */
const preferTool = (text: string, tool: string): string => (tool !== '' && text.trim() === '' ? tool : text);

/** OpenAI-compatible and Mistral: `choices[0].message.content` (or its tool call's arguments). */
function chatCompletionText(body: unknown): string | null {
  const message: unknown = isRecord(body) && Array.isArray(body.choices) && isRecord(body.choices[0]) ? body.choices[0].message : undefined;
  if (!isRecord(message)) return null;
  const text = message.content === null || message.content === undefined ? '' : contentText(message.content);
  if (text === null) return null;
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const args: unknown = isRecord(calls[0]) && isRecord(calls[0].function) ? calls[0].function.arguments : undefined;
  const tool = typeof args === 'string' ? args : '';
  if (text === '' && tool === '') return null;
  return preferTool(text, tool);
}

function chatStreamText(events: readonly unknown[]): string | null {
  let text = '';
  let tool = '';
  let deltas = 0;
  for (const event of events) {
    const choice: unknown = isRecord(event) && Array.isArray(event.choices) ? event.choices[0] : undefined;
    if (!isRecord(choice) || !isRecord(choice.delta)) continue;
    deltas++;
    const { content, tool_calls: calls } = choice.delta;
    if (typeof content === 'string') text += content;
    if (Array.isArray(calls)) {
      for (const call of calls)
        if (isRecord(call) && isRecord(call.function) && typeof call.function.arguments === 'string') tool += call.function.arguments;
    }
  }
  return deltas === 0 ? null : preferTool(text, tool);
}

/** Anthropic Messages: the text blocks joined, or the tool_use block's input as JSON. */
function anthropicMessageText(body: unknown): string | null {
  if (!isRecord(body) || !Array.isArray(body.content)) return null;
  const toolUse: unknown = body.content.find((block) => isRecord(block) && block.type === 'tool_use');
  if (isRecord(toolUse)) return JSON.stringify(toolUse.input ?? null);
  return contentText(body.content);
}

function anthropicStreamText(events: readonly unknown[]): string | null {
  let text = '';
  let tool = '';
  let blocks = 0;
  for (const event of events) {
    if (!isRecord(event)) continue;
    if (event.type === 'error') return null;
    if (event.type === 'content_block_start') blocks++;
    if (event.type !== 'content_block_delta' || !isRecord(event.delta)) continue;
    const delta = event.delta;
    if (delta.type === 'text_delta' && typeof delta.text === 'string') text += delta.text;
    if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') tool += delta.partial_json;
  }
  return blocks === 0 ? null : preferTool(text, tool);
}

/**
 * The reply text of a logged call's response body: a JSON body (provider-a/b `choices[0].message.content`,
 * provider-c the `content[]` text or the tool_use input as JSON) or an SSE stream as the log keeps it (events
 * joined: `delta.content` pieces, Anthropic `text_delta` / `input_json_delta`). null when unreadable (not JSON nor
 * a stream of JSON events, no message, or a stream cut mid-event).
 *
 * @example
 * ```ts
 * replyText('provider-a', '{"choices":[{"index":0,"message":{"role":"assistant","content":"yes"}}]}'); // 'yes'
 * replyText('provider-c', 'event: content_block_start\ndata: {"type":"content_block_start","index":0}\n\n' +
 *   'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"no"}}\n\n'); // 'no'
 * replyText('provider-b', '<html>bad gateway</html>'); // null
 * ```
 */
export function replyText(provider: LoggedProvider, responseBody: string): string | null {
  const body = parseJson(responseBody);
  if (body !== undefined) return provider === 'provider-c' ? anthropicMessageText(body) : chatCompletionText(body);
  const events = sseEvents(responseBody);
  if (events === null) return null;
  return provider === 'provider-c' ? anthropicStreamText(events) : chatStreamText(events);
}

/** Punctuation, quotes and markdown emphasis around a label word ("**Yes.**" is 'Yes'). */
const kAroundWord = /^[\s"'`*_.,;:!?()[\]{}<>]+|[\s"'`*_.,;:!?()[\]{}<>]+$/gu;
const kBinaryTrue = new Set(['yes', 'true', '1']);
const kBinaryFalse = new Set(['no', 'false', '0']);

/** The task's label a word or JSON value names (case-insensitively), or null when it names none of them. */
function labelOf(value: unknown, task: TeacherTask): TeacherLabel | null {
  const key = (name: string) => labelNameKey(name.replace(kAroundWord, ''));
  if (task.taskType === 'binary-classification') {
    if (typeof value === 'boolean') return value;
    if (value === 1 || value === 0) return value === 1;
    if (typeof value !== 'string') return null;
    const word = key(value);
    if (kBinaryTrue.has(word) || word === labelNameKey(task.labels[0])) return true;
    return kBinaryFalse.has(word) ? false : null;
  }
  const byKey = new Map(task.labels.map((label) => [labelNameKey(label), label]));
  if (task.taskType === 'multi-class-classification') return typeof value === 'string' ? (byKey.get(key(value)) ?? null) : null;
  // Multi-label: an array of label names, or one string of them separated by commas (an empty one names none).
  const names = typeof value === 'string' ? value.split(/[,;\n]/).filter((name) => name.trim() !== '') : value;
  if (!Array.isArray(names)) return null;
  const labels: string[] = [];
  for (const name of names) {
    const label = typeof name === 'string' ? byKey.get(key(name)) : undefined;
    if (label === undefined) return null;
    if (!labels.includes(label)) labels.push(label);
  }
  return labels;
}

/** A reply as JSON: the whole reply, or the first fenced block (```json ... ```) in it; undefined when neither is. */
function replyJson(reply: string): unknown {
  const whole = parseJson(reply.trim());
  if (whole !== undefined) return whole;
  const fenced = /```[a-zA-Z]*[ \t]*\r?\n?([\s\S]*?)```/.exec(reply);
  return fenced === null ? undefined : parseJson(fenced[1].trim());
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A word matched whole: no letter, digit or underscore right before or after it. */
const wholeWord = (word: string) => new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegex(word.trim())}(?![\\p{L}\\p{N}_])`, 'iu');

function wordsReader(words: Record<string, string[]>, task: TeacherTask, param: string): (reply: string) => TeacherLabel | null {
  const binary = task.taskType === 'binary-classification';
  const allowed = binary ? ['true', 'false'] : task.labels;
  const byKey = new Map(allowed.map((label) => [labelNameKey(label), label]));
  const matchers: { label: string; pattern: RegExp }[] = [];
  for (const [name, list] of Object.entries(words)) {
    const label = byKey.get(labelNameKey(name));
    if (label === undefined) {
      const keys = allowed.map((l) => `'${l}'`).join(', ');
      throw new SvcError('invalid_request', `${param}.words names '${name}', which is not a label of the task (use ${keys})`, {
        param: `${param}.words`,
      });
    }
    if (list.length === 0 || list.some((word) => word.trim() === '')) {
      throw new SvcError('invalid_request', `${param}.words.${name} must list at least one non-empty word`, {
        param: `${param}.words.${name}`,
      });
    }
    for (const word of list) matchers.push({ label, pattern: wholeWord(word) });
  }
  if (matchers.length === 0) {
    throw new SvcError('invalid_request', `${param}.words must name at least one label`, { param: `${param}.words` });
  }
  return (reply) => {
    const found = matchers.map(({ label, pattern }) => ({ label, at: pattern.exec(reply)?.index ?? -1 })).filter((m) => m.at >= 0);
    if (task.taskType === 'multi-label-classification') return task.labels.filter((label) => found.some((m) => m.label === label));
    // Binary and multi-class: the label whose word comes first (a chat reply gives its answer, then its reasons).
    if (found.length === 0) return null;
    const first = found.reduce((a, b) => (b.at < a.at ? b : a));
    return binary ? first.label === 'true' : first.label;
  };
}

/**
 * Checks `rule` for `task` and returns the function that reads a reply's label under it (see {@link callLabel}).
 * Throws `SvcError('invalid_request')` naming `param` (e.g. 'from_log.label') for a malformed pointer, a regular
 * expression that does not compile or has flags other than `imsu`, or label words that name no label of the task.
 *
 * @example
 * ```ts
 * const read = labelReader({ regex: '^(yes|no)\\b', flags: 'i' }, { taskType: 'binary-classification', labels: ['billing'] });
 * read('Yes, it is about an invoice'); // true
 * read('Maybe');                       // null
 * labelReader({ regex: '(' }, task);   // throws SvcError: label.regex is not a valid regular expression: ...
 * ```
 */
export function labelReader(rule: LabelRule, task: TeacherTask, param = 'label'): (reply: string) => TeacherLabel | null {
  if ('pointer' in rule) {
    const tokens = pointerTokens(rule.pointer, `${param}.pointer`);
    return (reply) => {
      const json = replyJson(reply);
      if (json === undefined) return null;
      const value = resolvePointer(json, tokens);
      return value === undefined ? null : labelOf(value, task);
    };
  }
  if ('regex' in rule) {
    const flags = rule.flags ?? '';
    if (!kRegexFlags.test(flags) || new Set(flags).size !== flags.length) {
      throw new SvcError('invalid_request', `${param}.flags must be distinct letters of 'imsu' (got ${JSON.stringify(flags)})`, {
        param: `${param}.flags`,
      });
    }
    let pattern: RegExp;
    try {
      pattern = new RegExp(rule.regex, flags);
    } catch (error) {
      const why = (error as Error).message.replace(/^Invalid regular expression: /, '');
      throw new SvcError('invalid_request', `${param}.regex is not a valid regular expression: ${why}`, { param: `${param}.regex` });
    }
    return (reply) => {
      const match = pattern.exec(reply);
      if (match === null) return null;
      const word = match[1] ?? match[0];
      return labelOf(word, task);
    };
  }
  return wordsReader(rule.words, task, param);
}

/**
 * The label a reply gives under `rule` for the task (binary: boolean; multi-class: one of labels; multi-label: an
 * array): `pointer` into the reply parsed as JSON (a fenced JSON block too); `regex` whose first capture group (or
 * whole match) is the label word; `words`: label -> words that mean it (binary keys 'true'/'false'), matched
 * case-insensitively as whole words (binary and multi-class: the label whose word comes first in the reply;
 * multi-label: every label with a word in it). A word maps to a label case-insensitively (binary:
 * yes/no/true/false/1/0 and the label_text itself). null when it cannot be read or is outside the set. A rule read
 * many times is better checked once with {@link labelReader}.
 *
 * @example
 * ```ts
 * const task = { taskType: 'multi-class-classification', labels: ['billing', 'shipping'] } as const;
 * callLabel('```json\n{"label":"Billing"}\n```', { pointer: '/label' }, task);                 // 'billing'
 * callLabel('It is about shipping.', { words: { billing: ['invoice'], shipping: ['shipping'] } }, task); // 'shipping'
 * callLabel('{"label":"returns"}', { pointer: '/label' }, task);                               // null
 * ```
 */
export function callLabel(reply: string, rule: LabelRule, task: TeacherTask): TeacherLabel | null {
  return labelReader(rule, task)(reply);
}
