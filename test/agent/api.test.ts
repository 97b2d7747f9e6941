import { describe, expect, it } from 'vitest';
import { type AgentEvent, createAgent, type Message, scriptedModel } from '../../src/index.js';
import { echo, expectValidHistory } from './helpers.js';

describe('agent.stream()', () => {
  it('yields exactly this turn’s events, from turn_start to turn_end, and settles result', async () => {
    const model = scriptedModel([
      { text: 'first' },
      { reasoning: 'think', text: 'Hello there', toolCalls: [{ name: 'echo', args: { text: 'x' } }], chunkSize: 3 },
      { text: 'bye' },
    ]);
    const agent = createAgent({ model, tools: [echo] });
    const earlier = agent.prompt('one');
    const stream = agent.stream('two');
    const seen: AgentEvent[] = [];
    for await (const event of stream) seen.push(event);
    await earlier;

    expect(seen[0]?.type).toBe('turn_start');
    expect(seen.at(-1)).toMatchObject({ type: 'turn_end', stopReason: 'completed', turn: 2 });
    expect(new Set(seen.map((e) => e.turn))).toEqual(new Set([2]));
    const text = seen.flatMap((e) => (e.type === 'message_update' && e.delta.type === 'text' ? [e.delta.delta] : []));
    expect(text.join('')).toBe('Hello therebye');
    expect(text.length).toBeGreaterThan(2);
    expect(seen.some((e) => e.type === 'message_update' && e.delta.type === 'reasoning')).toBe(true);
    expect(seen.some((e) => e.type === 'message_update' && e.delta.type === 'tool_call_start')).toBe(true);
    expect((await stream.result).text).toBe('bye');
    await agent.stop();
  });

  it('buffers a slow reader boundedly by merging deltas, losing nothing', async () => {
    const text = 'abcd'.repeat(5_000);
    const agent = createAgent({ model: scriptedModel([{ text, chunkSize: 4 }]) });
    const stream = agent.stream('go', { highWaterMark: 16 });
    await stream.result; // the whole turn ran before the reader read a single event
    let received = '';
    let updates = 0;
    for await (const event of stream) {
      if (event.type === 'message_update' && event.delta.type === 'text') {
        received += event.delta.delta;
        updates++;
      }
    }
    expect(received).toBe(text);
    expect(updates).toBeLessThanOrEqual(16);
    await agent.stop();
  });

  it('a refused prompt ends the iteration at once and rejects result', async () => {
    const agent = createAgent({ model: scriptedModel([]) });
    await agent.stop();
    const stream = agent.stream('too late');
    const seen: AgentEvent[] = [];
    for await (const event of stream) seen.push(event);
    expect(seen).toEqual([]);
    await expect(stream.result).rejects.toThrow('is stopped');
  });

  it('a reader may break out early; the turn still completes', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'a b c d e f', chunkSize: 1, deltaDelayMs: 1 }]) });
    const stream = agent.stream('go');
    for await (const event of stream) if (event.type === 'message_update') break;
    expect((await stream.result).text).toBe('a b c d e f');
    await agent.stop();
  });
});

describe('agent.on()', () => {
  it('filters by type, returns an unsubscribe function, and survives a throwing listener', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'one' }, { text: 'two' }]) });
    const ends: string[] = [];
    const all: string[] = [];
    const off = agent.on('turn_end', (e) => ends.push(e.stopReason));
    agent.on('*', (e) => all.push(e.type));
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => errors.push(args);
    agent.on('step_start', () => {
      throw new Error('listener bug');
    });
    try {
      await agent.prompt('1');
      off();
      expect((await agent.prompt('2')).text).toBe('two');
    } finally {
      console.error = original;
    }
    expect(ends).toEqual(['completed']);
    expect(all.filter((t) => t === 'turn_end')).toHaveLength(2);
    expect(errors).toHaveLength(2);
    await agent.stop();
  });
});

describe('history', () => {
  it('round-trips through JSON and seeds a new agent that carries on', async () => {
    const model = scriptedModel([
      { reasoning: 'hmm', toolCalls: [{ name: 'echo', args: { text: 'hi' } }] },
      { text: 'said hi' },
    ]);
    const agent = createAgent({ model, tools: [echo] });
    await agent.prompt('say hi');
    const saved = JSON.stringify(agent.messages);
    const restored = JSON.parse(saved) as Message[];
    expect(restored).toEqual(agent.messages);
    expectValidHistory(restored);

    const next = scriptedModel([{ text: 'still here' }]);
    const resumed = createAgent({ model: next, tools: [echo], messages: restored });
    await resumed.prompt('and now?');
    expect(next.requests[0]?.messages.slice(0, restored.length)).toEqual(restored);
    expect(resumed.messages).toHaveLength(restored.length + 2);
    await agent.stop();
    await resumed.stop();
  });

  it('agent.messages is a copy the caller cannot use to corrupt the history', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'ok' }]) });
    await agent.prompt('hi');
    agent.messages.pop();
    expect(agent.messages).toHaveLength(2);
    await agent.stop();
  });

  it('usage is summed per turn and per agent', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', args: { text: 'x' } }], usage: { input: 100, output: 10, cacheRead: 50 } },
      { text: 'a', usage: { input: 120, output: 5, reasoning: 2 } },
      { text: 'b', usage: { input: 7, output: 1 } },
    ]);
    const agent = createAgent({ model, tools: [echo] });
    const first = await agent.prompt('1');
    expect(first.usage).toEqual({ input: 220, output: 15, cacheRead: 50, cacheWrite: 0, reasoning: 2 });
    await agent.prompt('2');
    expect(agent.usage).toEqual({ input: 227, output: 16, cacheRead: 50, cacheWrite: 0, reasoning: 2 });
    await agent.stop();
  });
});

describe('configuration', () => {
  it('rejects nonsense limits up front', () => {
    const model = scriptedModel([]);
    expect(() => createAgent({ model, maxSteps: 0 })).toThrow('maxSteps must be a positive integer');
    expect(() => createAgent({ model, toolConcurrency: 1.5 })).toThrow('toolConcurrency must be a positive integer');
    expect(() => createAgent({} as never)).toThrow('`model` is required');
  });
});
