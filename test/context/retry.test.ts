import { describe, expect, it } from 'vitest';
import { type AgentEvent, createAgent, type Message, scriptedModel } from '../../src/index.js';
import { expectValidHistory } from '../agent/helpers.js';
import { assistant, call, result, text, tool, user } from './history.js';

describe('an agent sends the projection, and retries a refused history once', () => {
  it('a broken saved history is repaired on the way out and reported, never rewritten', async () => {
    const stored: Message[] = [
      user('hi'),
      assistant(call('c1'), call('c2')),
      user('late', 'steer'),
      tool(result('c1')),
    ];
    const model = scriptedModel([{ text: 'ok' }]);
    const agent = createAgent({ model, messages: stored });
    const events: AgentEvent[] = [];
    agent.on('context_repair', (e) => events.push(e));
    await agent.prompt('go on');
    const sent = model.requests[0]?.messages ?? [];
    expectValidHistory(sent);
    expect(events.map((e) => e.type === 'context_repair' && e.repair.kind)).toEqual([
      'late_result_moved',
      'missing_result',
    ]);
    expect(agent.messages.slice(0, 4)).toEqual(stored);
    await agent.stop();
  });

  it('a history refusal is retried once with the strict projection, then the error stands', async () => {
    const refusal = { code: 'invalid_request' as const, status: 400, message: 'messages.1: roles must alternate' };
    const model = scriptedModel(() => ({ error: refusal }));
    const agent = createAgent({ model, messages: [assistant(text('hello'))] });
    const events: AgentEvent[] = [];
    agent.on('*', (e) => events.push(e));
    const answer = await agent.prompt('hi');
    expect(answer.error).toMatchObject({ code: 'invalid_request' });
    expect(model.calls).toBe(2);
    // The strict projection opens with a user message.
    expect(model.requests[1]?.messages[0]?.role).toBe('user');
    expect(events.filter((e) => e.type === 'context_retry')).toHaveLength(1);
    await agent.stop();
  });

  it('other refusals (an unknown parameter) and a 413 without images are not retried', async () => {
    for (const error of [
      { code: 'invalid_request' as const, status: 400, message: "Unsupported parameter: 'max_tokens'" },
      { code: 'invalid_request' as const, status: 413, message: 'Request too large' },
    ]) {
      const model = scriptedModel(() => ({ error }));
      const agent = createAgent({ model });
      expect((await agent.prompt('hi')).error).toMatchObject({ code: 'invalid_request' });
      expect(model.calls).toBe(1);
      await agent.stop();
    }
  });
});
