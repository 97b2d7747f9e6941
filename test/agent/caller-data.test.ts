import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AssistantMessage,
  createAgent,
  defineTool,
  HistoryError,
  type Message,
  scriptedModel,
} from '../../src/index.js';
import type { ToolResultPart } from '../../src/protocol/index.js';
import { echo, expectValidHistory, resultText, toolResults } from './helpers.js';

const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
const assistant = (content: AssistantMessage['content']): AssistantMessage => ({
  role: 'assistant',
  content,
  provider: 'scripted',
  model: 'scripted',
  stopReason: content.some((p) => p.type === 'tool_call') ? 'tool_calls' : 'stop',
  usage,
});

/** A tool that returns whatever the test gives it for its `kind` argument. */
function returning(outputs: Record<string, () => unknown>) {
  return defineTool({
    name: 'odd',
    description: 'returns odd things',
    schema: z.object({ kind: z.string() }),
    execute: ({ kind }) => (outputs[kind] as () => never)(),
  });
}

describe('agent.messages is a deep, JSON-safe copy', () => {
  it('editing what it returns (or what a turn returned) never edits the history the model sees next', async () => {
    const model = scriptedModel([{ text: 'first answer' }, { text: 'second answer' }]);
    const agent = createAgent({ model });
    const result = await agent.prompt('hello');
    const copy = agent.messages;
    (copy[0]?.content[0] as { text: string }).text = 'edited';
    copy.push({ role: 'user', content: [{ type: 'text', text: 'injected' }] });
    (result.messages[1]?.content[0] as { text: string }).text = 'edited too';
    await agent.prompt('again');
    const seen = model.requests[1]?.messages ?? [];
    expect(seen.map((m) => (m.content[0] as { text: string }).text)).toEqual(['hello', 'first answer', 'again']);
    expect(JSON.parse(JSON.stringify(agent.messages))).toEqual(agent.messages);
    await agent.stop();
  });

  it("a tool's details that JSON cannot carry are reduced to a safe form, and detached from the tool", async () => {
    const circular: Record<string, unknown> = { name: 'loop' };
    circular.self = circular;
    const live = { count: 1 };
    const tool = returning({
      details: () => ({
        content: 'ok',
        details: { circular, big: 10n ** 20n, fn: () => 1, when: new Date(0), list: [undefined, () => 1], live },
      }),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'odd', args: { kind: 'details' } }] }, { text: 'done' }]);
    const agent = createAgent({ model, tools: [tool] });
    const ends: ToolResultPart[] = [];
    agent.on('tool_execution_end', (e) => ends.push(e.result));
    await agent.prompt('go');
    live.count = 99; // the tool changing its object afterwards changes nothing
    const [result] = toolResults(agent.messages);
    expect(result?.isError).toBe(false);
    expect(result?.details).toEqual({
      circular: { name: 'loop', self: '[circular]' },
      big: '100000000000000000000',
      when: '1970-01-01T00:00:00.000Z',
      list: [null, null],
      live: { count: 1 },
    });
    expect(ends[0]?.details).toEqual(result?.details);
    expect(() => JSON.stringify(agent.messages)).not.toThrow();
    await agent.stop();
  });
});

describe('what a tool returns must be a result', () => {
  it('a symbol, a function, non-parts in content and non-JSON values become error results that say why', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const tool = returning({
      symbol: () => Symbol('x'),
      function: () => () => 1,
      numbers: () => ({ content: [1, 2] }),
      textless: () => ({ content: [{ type: 'text' }] }),
      video: () => ({
        content: [
          { type: 'text', text: 'a' },
          { type: 'video', url: 'x' },
        ],
      }),
      bigint: () => 5n,
      circular: () => circular,
      fine: () => ({ content: [{ type: 'text', text: 'good' }], details: { n: 1 } }),
      data: () => ({ rows: 2 }),
    });
    const kinds = ['symbol', 'function', 'numbers', 'textless', 'video', 'bigint', 'circular', 'fine', 'data'];
    const model = scriptedModel([
      { toolCalls: kinds.map((kind) => ({ name: 'odd', args: { kind } })) },
      { text: 'done' },
    ]);
    const agent = createAgent({ model, tools: [tool] });
    const result = await agent.prompt('go');
    const results = toolResults(result.messages);
    const byKind = Object.fromEntries(kinds.map((kind, i) => [kind, results[i]]));
    for (const kind of ['symbol', 'function', 'numbers', 'textless', 'video', 'bigint', 'circular']) {
      expect(byKind[kind]?.isError, kind).toBe(true);
      expect(resultText(byKind[kind]), kind).toMatch(/^Tool odd gave no usable result: /);
    }
    expect(resultText(byKind.symbol)).toContain('returned a symbol');
    expect(resultText(byKind.function)).toContain('returned a function');
    expect(resultText(byKind.numbers)).toContain('content[0] is a content part that is a number');
    expect(resultText(byKind.textless)).toContain('content[0] is a text part whose text is not a string');
    expect(resultText(byKind.video)).toContain('content[1] is a content part of type "video"');
    expect(resultText(byKind.bigint)).toContain('not JSON');
    expect(resultText(byKind.circular)).toContain('not JSON');
    expect(byKind.fine).toMatchObject({ isError: false, content: [{ type: 'text', text: 'good' }], details: { n: 1 } });
    expect(byKind.data).toMatchObject({ isError: false, content: [{ type: 'text', text: '{"rows":2}' }] });
    // Every part in the history is a real part.
    for (const part of results.flatMap((r) => r.content))
      expect(typeof (part as { text: unknown }).text).toBe('string');
    await agent.stop();
  });
});

describe('createAgent({ messages }) checks the history it resumes from', () => {
  const call = { type: 'tool_call' as const, id: 'c1', name: 'echo', arguments: { text: 'x' } };

  it.each<[string, unknown, RegExp]>([
    ['not an array', 'hello', /^messages\[-1\]: the history is a string/],
    ['a message that is not an object', [null], /^messages\[0\]: a message is an object, not null/],
    ['an unknown role', [{ role: 'system', content: [] }], /^messages\[0\]: role "system"/],
    ['a user message without content', [{ role: 'user' }], /^messages\[0\]: a user message whose content/],
    [
      'a bad user part',
      [{ role: 'user', content: [{ type: 'text', text: 1 }] }],
      /messages\[0\]: content\[0\] is a text part/,
    ],
    ['an assistant part of unknown type', [assistant([{ type: 'audio' } as never])], /unknown type "audio"/],
    [
      'a tool message whose content is not a result',
      [assistant([call]), { role: 'tool', content: [{ type: 'text', text: 'x' }] }],
      /^messages\[1\]: content\[0\] is .* not a tool_result part/,
    ],
    ['two calls with one id', [assistant([call, call])], /^messages\[0\]: two tool calls share the id c1/],
  ])('refuses %s with a HistoryError naming the message', (_, messages, why) => {
    expect(() => createAgent({ model: scriptedModel([]), messages: messages as Message[] })).toThrow(HistoryError);
    expect(() => createAgent({ model: scriptedModel([]), messages: messages as Message[] })).toThrow(why);
  });

  // The order of calls and results is the projection's to repair (src/context, issue 14): the stored history stays
  // as it was given, and what the model is sent is valid.
  it('resumes a history saved mid-call: stored as given, sent with every call closed', async () => {
    const second = { ...call, id: 'c2' };
    const saved: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'run two' }] },
      assistant([{ type: 'text', text: 'running' }, call, second]),
      // Saved while the second call still ran: only the first has its result.
      {
        role: 'tool',
        content: [
          {
            type: 'tool_result',
            toolCallId: 'c1',
            toolName: 'echo',
            content: [{ type: 'text', text: 'x' }],
            isError: false,
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'and then?' }] },
      assistant([{ ...call, id: 'c3' }]), // saved during this call
    ];
    const model = scriptedModel([{ text: 'resumed' }]);
    const agent = createAgent({ model, tools: [echo], messages: saved });
    expect(agent.messages).toEqual(saved);
    const result = await agent.prompt('go on');
    expect(result.text).toBe('resumed');
    const sent = model.requests[0]?.messages ?? [];
    expectValidHistory(sent);
    const closed = toolResults(sent);
    expect(closed.map((r) => [r.toolCallId, r.isError])).toEqual([
      ['c1', false],
      ['c2', true],
      ['c3', true],
    ]);
    expect(resultText(closed[1])).toContain('No result was recorded');
    await agent.stop();
  });
});
