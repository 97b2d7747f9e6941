import { describe, expect, it } from 'vitest';
import { type AgentEventOf, createAgent, scriptedModel } from '../../src/index.js';

describe('usage events carry their cost where the model has prices', () => {
  it('prices a known model from the table, and a model given prices in context.models', async () => {
    const usage = { input: 1_000_000, output: 100_000, cacheRead: 0, cacheWrite: 0 };
    const model = scriptedModel([{ text: 'ok', usage }], { id: 'my-model' });
    const agent = createAgent({
      model,
      context: {
        models: {
          'my-model': { contextWindow: 100_000, prices: { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2 } },
        },
      },
    });
    const seen: AgentEventOf<'usage'>[] = [];
    agent.on('usage', (event) => seen.push(event));
    await agent.prompt('x');
    expect(seen[0]?.cost).toBeCloseTo(2 + 0.8, 6);
    await agent.stop();
  });

  it('leaves cost out for a model whose prices nobody knows', async () => {
    const agent = createAgent({
      model: scriptedModel([{ text: 'ok', usage: { input: 10, output: 1 } }], { id: 'mystery' }),
    });
    const seen: AgentEventOf<'usage'>[] = [];
    agent.on('usage', (event) => seen.push(event));
    await agent.prompt('x');
    expect(seen).toHaveLength(1);
    expect(seen[0]).not.toHaveProperty('cost');
    await agent.stop();
  });

  it('prices the answer the machine receives, so an inspector sees the cost of each step', async () => {
    const frames: Array<{ type: string; cost?: number }> = [];
    const usage = { input: 1_000_000, output: 100_000, cacheRead: 0, cacheWrite: 0 };
    const priced = createAgent({
      model: scriptedModel([{ text: 'ok', usage }], { id: 'claude-haiku-4-5' }),
      inspect: (event) => {
        if (event.type === '@xstate.event' && event.event.type === 'MODEL_DONE') frames.push(event.event);
      },
    });
    await priced.prompt('x');
    await priced.stop();
    const unknown = createAgent({
      model: scriptedModel([{ text: 'ok', usage }], { id: 'mystery' }),
      inspect: (event) => {
        if (event.type === '@xstate.event' && event.event.type === 'MODEL_DONE') frames.push(event.event);
      },
    });
    await unknown.prompt('x');
    await unknown.stop();
    // claude-haiku-4-5 is $1 in and $5 out per million tokens in the table.
    expect(frames).toHaveLength(2);
    expect(frames[0]?.cost).toBeCloseTo(1 + 0.5, 6);
    // No price for an unknown model (the reply is built as one literal, so the key may be there, undefined).
    expect(frames[1]?.cost).toBeUndefined();
  });
});
