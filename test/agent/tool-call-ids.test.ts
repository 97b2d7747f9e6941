import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel } from '../../src/index.js';
import type { ToolCallPart } from '../../src/protocol/index.js';
import { echo, expectValidHistory, resultText, toolResults } from './helpers.js';

describe('tool-call ids', () => {
  it('two calls with the same id in one answer each run with their own arguments, under unique ids', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'echo', id: 'call_1', args: { text: 'first' } },
          { name: 'echo', id: 'call_1', args: { text: 'second' } },
          { name: 'echo', id: 'call_1_2', args: { text: 'third' } },
        ],
      },
      { text: 'done' },
    ]);
    const agent = createAgent({ model, tools: [echo] });
    const result = await agent.prompt('go');
    const calls = result.messages.flatMap((m) =>
      m.role === 'assistant' ? m.content.filter((p): p is ToolCallPart => p.type === 'tool_call') : [],
    );
    // Ids are given in the order the calls stream in, so that a call's stream events, its execution and its result
    // name it alike: the provider's id is kept where nothing before it holds it; a repeat gets one derived from it,
    // and a later call whose id a derived one already took is derived in turn.
    expect(calls.map((c) => c.id)).toEqual(['call_1', 'call_1_2', 'call_1_2_2']);
    const results = toolResults(result.messages);
    expect(results.map((r) => [r.toolCallId, resultText(r)])).toEqual([
      ['call_1', 'first'],
      ['call_1_2', 'second'],
      ['call_1_2_2', 'third'],
    ]);
    expectValidHistory(agent.messages);
    // The model sees the same pairing on its next call.
    expect(toolResults(model.requests[1]?.messages ?? []).map((r) => r.toolCallId)).toEqual([
      'call_1',
      'call_1_2',
      'call_1_2_2',
    ]);
    await agent.stop();
  });
});
