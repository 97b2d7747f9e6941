import { describe, expect, it } from 'vitest';
import { MISSING_RESULT, Projection, project } from '../../src/context/index.js';
import type { Message } from '../../src/index.js';
import type { ContextRepair } from '../../src/protocol/index.js';
import { expectValidHistory } from '../agent/helpers.js';
import { assistant, call, image, result, text, tool, user } from './history.js';

const loose = { mergeUserMessages: false };

describe('the projection repairs what providers refuse, without touching the stored history', () => {
  it('shares every message of a healthy history and reports nothing', () => {
    const history: Message[] = [
      user('hi'),
      assistant(text('looking'), call('c1'), call('c2')),
      tool(result('c1'), result('c2')),
      assistant(text('done')),
    ];
    const { messages, repairs } = project(history, loose);
    expect(repairs).toEqual([]);
    expect(messages).toHaveLength(4);
    for (const [i, message] of messages.entries()) expect(message).toBe(history[i]);
  });

  it('moves a late result back next to its call', () => {
    const history: Message[] = [user('hi'), assistant(call('c1')), user('steer', 'steer'), tool(result('c1'))];
    const frozen = structuredClone(history);
    const { messages, repairs } = project(history, loose);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(messages[2]?.content).toEqual([result('c1')]);
    expect(repairs).toEqual([{ kind: 'late_result_moved', toolCallId: 'c1', toolName: 'echo' }]);
    expectValidHistory(messages);
    expect(history).toEqual(frozen);
  });

  it('closes a call that has no result with an error result', () => {
    const history: Message[] = [user('hi'), assistant(call('c1'), call('c2')), tool(result('c1')), user('next')];
    const { messages, repairs } = project(history, loose);
    const sent = messages[2];
    expect(sent?.role).toBe('tool');
    expect(sent?.content[0]).toBe(history[2]?.content[0]);
    expect(sent?.content[1]).toMatchObject({ toolCallId: 'c2', isError: true, content: [{ text: MISSING_RESULT }] });
    expect(repairs).toEqual([{ kind: 'missing_result', toolCallId: 'c2', toolName: 'echo' }]);
    expectValidHistory(messages);
  });

  it('closes calls at the very end of a history (a session saved mid-step)', () => {
    const { messages, repairs } = project([user('hi'), assistant(call('c1'))], loose);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(repairs.map((r) => r.kind)).toEqual(['missing_result']);
  });

  it('drops an orphan result, and a second result for one call', () => {
    const history: Message[] = [
      user('hi'),
      tool(result('ghost')),
      assistant(call('c1')),
      tool(result('c1'), result('c1', 'again')),
      assistant(text('ok')),
    ];
    const { messages, repairs } = project(history, loose);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2]?.content).toEqual([result('c1')]);
    expect(repairs).toEqual([
      { kind: 'orphan_result_dropped', toolCallId: 'ghost', toolName: 'echo' },
      { kind: 'orphan_result_dropped', toolCallId: 'c1', toolName: 'echo' },
    ]);
  });

  it('merges adjacent user messages where the provider requires it, and only there', () => {
    const history: Message[] = [user('first'), user('second', 'steer'), assistant(text('ok'))];
    const merged = project(history, { mergeUserMessages: true });
    expect(merged.messages).toHaveLength(2);
    expect(merged.messages[0]?.content).toEqual([text('first'), text('second')]);
    expect(merged.repairs).toEqual([{ kind: 'user_messages_merged', count: 1 }]);
    expect(project(history, loose).messages).toHaveLength(3);
  });

  it('drops empty text parts, and messages they leave empty', () => {
    const history: Message[] = [
      user('hi'),
      assistant(text('')),
      user('  '),
      assistant(text(''), call('c1')),
      tool(result('c1')),
    ];
    const { messages, repairs } = project(history, loose);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[1]?.content).toEqual([call('c1')]);
    expect(repairs).toEqual([{ kind: 'empty_text_dropped', count: 3 }]);
  });

  it('a strict projection leaves out provider-specific parts and opens with a user message', () => {
    const signed = assistant(
      { type: 'reasoning', text: 'hmm', opaque: { provider: 'anthropic', model: 'm', data: { signature: 's' } } },
      { type: 'opaque', kind: 'redacted_thinking', provider: 'anthropic', model: 'm', data: 'x' },
      text('answer'),
    );
    const { messages, repairs } = project([signed, user('more'), user('again')], {
      mergeUserMessages: false,
      strict: true,
    });
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[1]?.content).toEqual([text('answer')]);
    expect(repairs).toEqual([
      { kind: 'user_messages_merged', count: 1 },
      { kind: 'opaque_dropped', count: 2 },
    ]);
  });

  it('replaces images by a note, in user messages and tool results', () => {
    const history: Message[] = [
      { role: 'user', content: [text('look'), image] },
      assistant(call('c1', 'screenshot', {})),
      tool({ ...result('c1', 'shot', 'screenshot'), content: [image] }),
    ];
    const { messages, repairs } = project(history, { mergeUserMessages: false, replaceImages: true });
    const parts = messages.flatMap((m) => m.content.flatMap((p) => (p.type === 'tool_result' ? p.content : [p])));
    expect(parts.some((p) => p.type === 'image')).toBe(false);
    expect(JSON.stringify(messages)).toContain('left out because the request was too large');
    expect(repairs).toEqual([{ kind: 'images_replaced', count: 2 }]);
    expect(history[0]?.content[1]).toBe(image);
  });

  it('projects incrementally: what was added since the last call, reported once', () => {
    const repairs: ContextRepair[] = [];
    const projection = new Projection({ mergeUserMessages: true }, (r) => repairs.push(r));
    const stored: Message[] = [user('a'), user('b')];
    projection.append(stored);
    stored.push(assistant(call('c1')), tool(result('c1')), user('c'));
    const messages = projection.append(stored, 2);
    expect(messages).toEqual(project(stored, { mergeUserMessages: true }).messages);
    expect(repairs).toEqual([{ kind: 'user_messages_merged', count: 1 }]);
    expect(projection.append(stored, stored.length)).toBe(messages);
  });

  it('pairs a step with the results stored after it only within one append', () => {
    const repairs: ContextRepair[] = [];
    const projection = new Projection(loose, (r) => repairs.push(r));
    const stored: Message[] = [user('a'), assistant(call('c1'), call('c2')), tool(result('c1'), result('c2'))];
    // The results are stored after the append that took their calls: the calls were closed, the results are orphans.
    projection.append(stored, 0, 2);
    const messages = projection.append(stored, 2);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[2]?.content).not.toBe(stored[2]?.content);
    expect(repairs.map((r) => r.kind)).toEqual([
      'missing_result',
      'missing_result',
      'orphan_result_dropped',
      'orphan_result_dropped',
    ]);
  });

  it('answers a call id repeated in one message once, as a history loaded whole', () => {
    const history: Message[] = [user('a'), assistant(call('c1'), call('c1')), tool(result('c1'), result('c1'))];
    const { messages, repairs } = project(history, loose);
    expect(messages[2]?.content).toEqual([result('c1'), expect.objectContaining({ toolCallId: 'c1', isError: true })]);
    expect(repairs.map((r) => r.kind)).toEqual(['missing_result', 'orphan_result_dropped']);
  });
});
