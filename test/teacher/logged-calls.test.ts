// Reading logged calls: the classified text from each request shape, the reply text from each provider's JSON and
// SSE bodies (the shapes fixtures/fake-provider.ts answers with), and a label under each kind of rule.
import { describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { callLabel, callText, labelReader, replyText } from '../../src/teacher/logged-calls.js';
import type { TeacherTask } from '../../src/teacher/protocol.js';
import { chatChunks } from '../../fixtures/fake-provider.js';

const binary: TeacherTask = { taskType: 'binary-classification', labels: ['billing question'] };
const classes: TeacherTask = { taskType: 'multi-class-classification', labels: ['billing', 'shipping', 'Returns'] };
const labelSet: TeacherTask = { taskType: 'multi-label-classification', labels: ['speed', 'price', 'quality'] };

/** The SvcError `run` throws, for exact assertions on code, param and message. */
function refusal(run: () => unknown): { code: string; param: string | null; message: string } {
  try {
    run();
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    return { code: error.code, param: error.param, message: error.message };
  }
  throw new Error('expected an SvcError');
}

/** An Anthropic stream as the fake (and the API) sends it. */
function anthropicStream(blocks: Array<{ type: 'text'; pieces: string[] } | { type: 'tool_use'; pieces: string[] }>): string {
  const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const out = [
    event('message_start', {
      message: { id: 'msg_fake', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 3, output_tokens: 1 } },
    }),
  ];
  blocks.forEach((block, index) => {
    const start =
      block.type === 'text' ? { type: 'text', text: '' } : { type: 'tool_use', id: 'toolu_1', name: 'record_labels', input: {} };
    out.push(event('content_block_start', { index, content_block: start }), event('ping', {}));
    for (const piece of block.pieces) {
      const delta = block.type === 'text' ? { type: 'text_delta', text: piece } : { type: 'input_json_delta', partial_json: piece };
      out.push(event('content_block_delta', { index, delta }));
    }
    out.push(event('content_block_stop', { index }));
  });
  out.push(event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }), event('message_stop', {}));
  return out.join('');
}

const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

describe('callText', () => {
  it('reads the last user message: a string, OpenAI text parts and Anthropic blocks joined with a newline', () => {
    const openai = {
      model: 'provider-a:gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Answer yes or no' },
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'no' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Is this billing?' },
            { type: 'image_url', image_url: { url: 'x' } },
            { type: 'text', text: 'Refund me' },
          ],
        },
      ],
    };
    expect(callText(JSON.stringify(openai))).toBe('Is this billing?\nRefund me');
    const anthropic = {
      model: 'provider-c:claude',
      system: 'Answer yes or no',
      max_tokens: 5,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Where is my parcel?' }] }],
    };
    expect(callText(JSON.stringify(anthropic))).toBe('Where is my parcel?');
    expect(
      callText(
        JSON.stringify({
          messages: [
            { role: 'user', content: 'plain' },
            { role: 'assistant', content: 'x' },
          ],
        }),
      ),
    ).toBe('plain');
  });

  it('is null without a user message, with content that is no text, or a body that is not JSON', () => {
    expect(callText(JSON.stringify({ messages: [{ role: 'system', content: 'x' }] }))).toBeNull();
    expect(
      callText(JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] })),
    ).toBeNull();
    expect(callText(JSON.stringify({ messages: [{ role: 'user', content: 42 }] }))).toBeNull();
    expect(callText(JSON.stringify({ prompt: 'legacy' }))).toBeNull();
    expect(callText('{"messages": [')).toBeNull();
  });

  it('reads the string a JSON pointer names, and is null where the place is missing or no string', () => {
    const body = JSON.stringify({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'u' },
      ],
      'a/b': { '~k': 'escaped' },
    });
    expect(callText(body, '/messages/0/content')).toBe('sys');
    expect(callText(body, '/a~1b/~0k')).toBe('escaped');
    expect(callText(body, '/messages/2/content')).toBeNull();
    expect(callText(body, '/messages/01/content')).toBeNull();
    expect(callText(body, '/messages/-/content')).toBeNull();
    expect(callText(body, '/messages')).toBeNull();
    expect(callText(body, '/nothing/here')).toBeNull();
  });

  it('refuses a malformed pointer with an SvcError naming the field', () => {
    expect(refusal(() => callText('{}', 'messages/0'))).toEqual({
      code: 'invalid_request',
      param: 'from_log.text_pointer',
      message: `from_log.text_pointer must be a JSON pointer starting with '/' (got "messages/0")`,
    });
    expect(refusal(() => callText('{}', '/a~2')).message).toBe(
      `from_log.text_pointer has a '~' not followed by 0 or 1 (got "/a~2"); write '~0' for '~'`,
    );
  });
});

describe('replyText', () => {
  const completion = (content: unknown, extra: object = {}) =>
    JSON.stringify({
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content, ...extra }, finish_reason: 'stop', logprobs: null }],
      usage,
    });

  it('reads provider-a and provider-b JSON bodies, a tool call too', () => {
    expect(replyText('provider-a', completion('Echo: is it billing'))).toBe('Echo: is it billing');
    expect(replyText('provider-b', completion('yes'))).toBe('yes');
    expect(replyText('provider-b', completion([{ type: 'text', text: 'no' }]))).toBe('no');
    const tool = { tool_calls: [{ id: 'c1', type: 'function', function: { name: 'record_labels', arguments: '{"label":true}' } }] };
    expect(replyText('provider-a', completion(null, tool))).toBe('{"label":true}');
  });

  it('reads the pieces of provider-a and provider-b streams as the fake sends them', () => {
    const pieces = ['Echo:', ' is', ' it', ' billing'];
    expect(replyText('provider-a', chatChunks('a', 'm', pieces, usage, true).join(''))).toBe('Echo: is it billing');
    expect(replyText('provider-a', chatChunks('a', 'm', pieces, usage, false).join(''))).toBe('Echo: is it billing');
    expect(replyText('provider-b', chatChunks('b', 'm', ['{"label":', ' "billing"}'], usage, false).join(''))).toBe('{"label": "billing"}');
    // CRLF line ends, as some servers write SSE.
    expect(replyText('provider-a', chatChunks('a', 'm', ['yes'], usage, true).join('').replaceAll('\n', '\r\n'))).toBe('yes');
  });

  it("reads provider-c's content blocks and tool_use input, JSON and streamed", () => {
    const message = (content: unknown[]) =>
      JSON.stringify({
        id: 'msg_fake',
        type: 'message',
        role: 'assistant',
        content,
        stop_reason: 'end_turn',
        usage: { input_tokens: 3, output_tokens: 2 },
      });
    expect(replyText('provider-c', message([{ type: 'text', text: 'Echo: where' }]))).toBe('Echo: where');
    const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'record_labels', input: { labels: [{ index: 0, label: 'shipping' }] } };
    expect(replyText('provider-c', message([{ type: 'text', text: 'Recording.' }, toolUse]))).toBe(
      '{"labels":[{"index":0,"label":"shipping"}]}',
    );
    expect(replyText('provider-c', anthropicStream([{ type: 'text', pieces: ['Echo:', ' where', ' is', ' it'] }]))).toBe(
      'Echo: where is it',
    );
    expect(replyText('provider-c', anthropicStream([{ type: 'tool_use', pieces: ['{"label"', ': "price"}'] }]))).toBe('{"label": "price"}');
  });

  it('is null for bodies it cannot read: not JSON, no message, a stream cut mid-event or an error event', () => {
    expect(replyText('provider-b', '<html>bad gateway</html>')).toBeNull();
    expect(replyText('provider-a', JSON.stringify({ choices: [] }))).toBeNull();
    expect(replyText('provider-a', completion(null))).toBeNull();
    expect(replyText('provider-c', JSON.stringify({ type: 'message', content: [] }))).toBeNull();
    const stream = chatChunks('a', 'm', ['yes'], usage, true).join('');
    expect(replyText('provider-a', stream.slice(0, stream.length - 40))).toBeNull();
    expect(replyText('provider-a', 'data: [DONE]\n\n')).toBeNull();
    expect(replyText('provider-c', 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n')).toBeNull();
  });
});

describe('callLabel', () => {
  it('reads a JSON pointer into the reply, a fenced block too, and maps the value into the task', () => {
    expect(callLabel('{"label": true}', { pointer: '/label' }, binary)).toBe(true);
    expect(callLabel('{"label": "no"}', { pointer: '/label' }, binary)).toBe(false);
    expect(callLabel('{"label": 1}', { pointer: '/label' }, binary)).toBe(true);
    expect(callLabel('{"label": "Billing Question"}', { pointer: '/label' }, binary)).toBe(true);
    expect(callLabel('Sure:\n```json\n{"answer": {"class": "SHIPPING"}}\n```\nDone', { pointer: '/answer/class' }, classes)).toBe(
      'shipping',
    );
    expect(callLabel('{"class": "returns"}', { pointer: '/class' }, classes)).toBe('Returns');
    expect(callLabel('{"labels": ["price", "Speed", "price"]}', { pointer: '/labels' }, labelSet)).toEqual(['price', 'speed']);
    expect(callLabel('{"labels": []}', { pointer: '/labels' }, labelSet)).toEqual([]);
    expect(callLabel('{"labels": "quality, price"}', { pointer: '/labels' }, labelSet)).toEqual(['quality', 'price']);
  });

  it('is null where the pointer finds nothing, the reply is no JSON, or the value is outside the set', () => {
    expect(callLabel('{"label": true}', { pointer: '/verdict' }, binary)).toBeNull();
    expect(callLabel('yes', { pointer: '/label' }, binary)).toBeNull();
    expect(callLabel('{"label": "maybe"}', { pointer: '/label' }, binary)).toBeNull();
    expect(callLabel('{"label": 2}', { pointer: '/label' }, binary)).toBeNull();
    expect(callLabel('{"class": "refunds"}', { pointer: '/class' }, classes)).toBeNull();
    expect(callLabel('{"class": ["billing"]}', { pointer: '/class' }, classes)).toBeNull();
    expect(callLabel('{"labels": ["price", "colour"]}', { pointer: '/labels' }, labelSet)).toBeNull();
    expect(callLabel('{"labels": [1]}', { pointer: '/labels' }, labelSet)).toBeNull();
  });

  it('reads the first capture group of a regex, or its whole match', () => {
    expect(callLabel('Echo: yes it is', { regex: 'Echo: (\\w+)' }, binary)).toBe(true);
    expect(callLabel('Answer: **No.**', { regex: 'Answer: (\\S+)' }, binary)).toBe(false);
    expect(callLabel('YES', { regex: '^(yes|no)$', flags: 'i' }, binary)).toBe(true);
    expect(callLabel('Category - shipping', { regex: 'shipping|billing' }, classes)).toBe('shipping');
    expect(callLabel('Labels: price, quality', { regex: 'Labels: (.*)' }, labelSet)).toEqual(['price', 'quality']);
    expect(callLabel('no match here', { regex: 'Answer: (\\w+)' }, binary)).toBeNull();
    expect(callLabel('Answer: perhaps', { regex: 'Answer: (\\w+)' }, binary)).toBeNull();
  });

  it('reads label words whole and case-insensitively: the first one in the reply, or every label for multi-label', () => {
    const yesNo = { words: { true: ['yes', 'billing'], false: ['no', 'not billing'] } };
    expect(callLabel('Yes. It asks about an invoice, no doubt.', yesNo, binary)).toBe(true);
    expect(callLabel('No, this is about a parcel.', yesNo, binary)).toBe(false);
    expect(callLabel('Yesterday it was billing.', yesNo, binary)).toBe(true);
    expect(callLabel('Nothing to say', yesNo, binary)).toBeNull();
    const topics = { words: { billing: ['invoice', 'refund'], shipping: ['parcel', 'delivery'], returns: ['return'] } };
    expect(callLabel('A late DELIVERY, then a refund', topics, classes)).toBe('shipping');
    expect(callLabel('They returned it', topics, classes)).toBeNull();
    expect(callLabel('Please return it', topics, classes)).toBe('Returns');
    const aspects = { words: { speed: ['slow', 'fast'], price: ['expensive', 'cheap'], quality: ['broken'] } };
    expect(callLabel('Slow and expensive', aspects, labelSet)).toEqual(['speed', 'price']);
    expect(callLabel('Fine', aspects, labelSet)).toEqual([]);
  });

  it('refuses a bad rule when it is checked, naming the field, never when a reply is read', () => {
    expect(refusal(() => labelReader({ regex: '(unclosed' }, binary, 'from_log.label'))).toEqual({
      code: 'invalid_request',
      param: 'from_log.label.regex',
      message: 'from_log.label.regex is not a valid regular expression: /(unclosed/: Unterminated group',
    });
    expect(refusal(() => labelReader({ regex: 'x', flags: 'g' }, binary, 'from_log.label'))).toEqual({
      code: 'invalid_request',
      param: 'from_log.label.flags',
      message: `from_log.label.flags must be distinct letters of 'imsu' (got "g")`,
    });
    expect(refusal(() => labelReader({ pointer: 'label' }, binary, 'from_log.label')).param).toBe('from_log.label.pointer');
    expect(refusal(() => labelReader({ words: { yes: ['yes'] } }, binary, 'from_log.label'))).toEqual({
      code: 'invalid_request',
      param: 'from_log.label.words',
      message: `from_log.label.words names 'yes', which is not a label of the task (use 'true', 'false')`,
    });
    expect(refusal(() => labelReader({ words: { refunds: ['refund'] } }, classes, 'from_log.label')).message).toBe(
      `from_log.label.words names 'refunds', which is not a label of the task (use 'billing', 'shipping', 'Returns')`,
    );
    expect(refusal(() => labelReader({ words: { billing: [] } }, classes, 'from_log.label')).message).toBe(
      'from_log.label.words.billing must list at least one non-empty word',
    );
    expect(refusal(() => labelReader({ words: {} }, classes, 'from_log.label')).message).toBe(
      'from_log.label.words must name at least one label',
    );
  });
});
