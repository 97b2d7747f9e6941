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
});
