import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel } from '../../src/index.js';

describe('getState().context: the window at a glance', () => {
  it('an unknown model: an estimate of what is sent, no window, no compaction', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'hi' }]), system: 'be brief' });
    expect(agent.getState().context).toEqual({ tokens: 0, compaction: false, compactions: 0 });
    await agent.prompt('x'.repeat(400));
    const { context } = agent.getState();
    // 400 characters of prompt and the answer, ~4 characters a token, plus the messages' markers.
    expect(context.tokens).toBeGreaterThanOrEqual(100);
    expect(context.tokens).toBeLessThan(130);
    expect(context.window).toBeUndefined();
    await agent.stop();
  });

  it("after an answer, the provider's count of it plus an estimate of what came since; the window and compaction", async () => {
    const model = scriptedModel([{ text: 'ok', usage: { input: 900, cacheRead: 100, output: 20 } }], { id: 'gpt-5' });
    const agent = createAgent({ model });
    expect(agent.getState().context).toMatchObject({ window: 400_000, compaction: true, compactions: 0 });
    await agent.prompt('hello');
    expect(agent.getState().context.tokens).toBe(1_020);
    const off = createAgent({ model, context: { compactAt: false, contextWindow: 8_000 } });
    expect(off.getState().context).toMatchObject({ window: 8_000, compaction: false });
    await Promise.all([agent.stop(), off.stop()]);
  });

  it('counts compactions', async () => {
    const big = 'word '.repeat(600);
    const model = scriptedModel((request) =>
      request.system?.startsWith('You are compacting')
        ? { text: 'summary of the earlier turns' }
        : { text: `answer ${big}` },
    );
    const agent = createAgent({ model, context: { contextWindow: 4_000 } });
    for (let i = 0; i < 8; i++) await agent.prompt(`question ${i} ${big}`);
    const { context } = agent.getState();
    expect(context.compactions).toBeGreaterThan(0);
    expect(context.tokens).toBeLessThan(4_000);
    await agent.stop();
  });
});
