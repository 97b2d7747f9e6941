import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type ModelEvent, scriptedModel, textOf } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { echo } from './helpers.js';

/** Every event of one answer, and what ended the stream: its end, or the error it threw. */
async function play(
  answer: ScriptedAnswer | (() => Promise<ScriptedAnswer>),
  abortAfter?: number,
): Promise<{ events: ModelEvent[]; thrown?: unknown }> {
  const model = scriptedModel(typeof answer === 'function' ? () => answer() : [answer]);
  const controller = new AbortController();
  const events: ModelEvent[] = [];
  try {
    for await (const event of model.stream({ messages: [], tools: [] }, controller.signal)) {
      events.push(event);
      if (events.length === abortAfter) controller.abort();
    }
    return { events };
  } catch (thrown) {
    return { events, thrown };
  }
}

const answers: Record<string, ScriptedAnswer> = {
  everything: {
    reasoning: 'thinking hard',
    text: 'Hello there',
    toolCalls: [
      { name: 'echo', args: { text: 'x' }, id: 'a' },
      { name: 'echo', args: '{broken', id: 'b' },
    ],
    usage: { input: 3, output: 5 },
    chunkSize: 3,
  },
  'whole deltas': { text: 'one delta', toolCalls: [{ name: 'echo', id: 'c' }], chunkSize: 0 },
  'an error after text': { text: 'half an answer', error: { code: 'overloaded', message: 'busy', status: 529 } },
  empty: {},
};

describe('scriptedModel', () => {
  // An answer that is ready at once is served from a list; one that waits (latency, a promised answer) by a
  // generator. Both must play the same stream.
  for (const [name, answer] of Object.entries(answers)) {
    it(`plays the same events whether the answer waits or not: ${name}`, async () => {
      const now = await play(answer);
      const late = await play({ ...answer, latencyMs: 1 });
      const promised = await play(async () => answer);
      expect(late).toEqual(now);
      expect(promised).toEqual(now);
      if (answer.error) {
        expect(now.thrown).toMatchObject({ code: 'overloaded' });
        expect(now.events.map((e) => e.type)).toEqual(['text_delta', 'text_delta']);
      } else {
        expect(now.thrown).toBeUndefined();
        expect(now.events.at(-1)?.type).toBe('done');
      }
    });
  }

  it('streams through `stream` detached from the model, as a provider model does', async () => {
    const { stream } = scriptedModel([{ text: 'alone' }]);
    const events: ModelEvent[] = [];
    for await (const event of stream({ messages: [], tools: [] }, new AbortController().signal)) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: 'done', message: { content: [{ type: 'text', text: 'alone' }] } });
  });

  it("starts an answer's latency with the call, not after the microtask queue drains", async () => {
    // A swarm starts thousands of calls in one burst of microtasks: a latency that began after a hop through that
    // queue would begin after the whole burst, and every subagent would wait longer than its model.
    vi.useFakeTimers();
    try {
      const model = scriptedModel([{ text: 'late', latencyMs: 1000 }]);
      const stream = model.stream({ messages: [], tools: [] }, new AbortController().signal);
      const first = stream[Symbol.asyncIterator]().next();
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(1000);
      expect(await first).toMatchObject({ value: { type: 'text_delta', delta: 'late' } });
    } finally {
      vi.useRealTimers();
    }
  });

  it('streams the answer in chunks, then the whole message', async () => {
    const { events } = await play(answers.everything as ScriptedAnswer);
    expect(events.map((e) => ('delta' in e ? e.delta : e.type))).toEqual([
      'thi',
      'nki',
      'ng ',
      'har',
      'd',
      'Hel',
      'lo ',
      'the',
      're',
      'tool_call_start',
      '{"t',
      'ext',
      '":"',
      'x"}',
      'tool_call_end',
      'tool_call_start',
      '{br',
      'oke',
      'n',
      'tool_call_end',
      'usage',
      'done',
    ]);
    const done = events.at(-1);
    expect(done).toMatchObject({
      type: 'done',
      stopReason: 'tool_calls',
      message: {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'thinking hard' },
          { type: 'text', text: 'Hello there' },
          { type: 'tool_call', id: 'a', name: 'echo', arguments: { text: 'x' } },
          { type: 'tool_call', id: 'b', name: 'echo', arguments: {}, invalidArguments: { text: '{broken' } },
        ],
        usage: { input: 3, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      },
    });
  });

  it('stops after the text delta during which its signal aborted, in both ways of playing', async () => {
    for (const answer of [
      { text: 'abcdef', chunkSize: 2 },
      { text: 'abcdef', chunkSize: 2, latencyMs: 1 },
    ]) {
      const { events, thrown } = await play(answer, 1);
      expect(events.map((e) => e.type)).toEqual(['text_delta']);
      expect(thrown).toMatchObject({ code: 'aborted' });
    }
  });

  it('fails the request past the end of its script, naming the last user message', async () => {
    const model = scriptedModel([]);
    const stream = model.stream(
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] },
      new AbortController().signal,
    );
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toThrow(/0 answer\(s\).*"hi"/);
  });
});

describe('the function form, reading tool results with textOf', () => {
  it("sees each step's tool results as the request's last message, one result a line, errors included", async () => {
    const fail = defineTool({
      name: 'fail',
      description: 'Always fails',
      schema: z.object({}),
      execute: () => {
        throw new Error('no such city');
      },
    });
    const model = scriptedModel((request): ScriptedAnswer => {
      const last = request.messages.at(-1);
      if (last?.role === 'tool') return { text: `The tools said:\n${textOf(last)}` };
      return {
        toolCalls: [
          { name: 'echo', args: { text: 'first' } },
          { name: 'fail', args: {} },
          { name: 'echo', args: { text: 'third' } },
        ],
      };
    });
    const agent = createAgent({ model, tools: [echo, fail] });
    const result = await agent.prompt('Call the tools.');
    expect(result.text).toBe('The tools said:\nfirst\nTool fail failed: no such city\nthird');
    await agent.stop();
  });
});
