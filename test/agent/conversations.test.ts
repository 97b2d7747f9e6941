import { describe, expect, it } from 'vitest';
import {
  type AgentEvent,
  type AssistantMessage,
  createAgent,
  type Message,
  scriptedModel,
  textOf,
} from '../../src/index.js';
import { emptyUsage } from '../../src/protocol/index.js';
import { echo } from './helpers.js';

const reply = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  provider: 'scripted',
  model: 'scripted',
  stopReason: 'stop',
  usage: emptyUsage(),
});

describe('agent.run({ messages, input }): conversations owned by the caller', () => {
  it('runs a turn against the given history, returns the new messages and leaves the agent and the history alone', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'echo', args: { text: 'ping' } }] }, { text: 'Pong.' }]);
    const agent = createAgent({ model, tools: [echo], system: 'Be brief.' });
    const history: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'Remember: the code is 42.' }] },
      reply('Noted.'),
    ];
    const frozen = structuredClone(history);

    const result = await agent.run({ messages: history, input: 'Ping the echo tool.' });

    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('Pong.');
    expect(result.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(textOf(result.messages[0])).toBe('Ping the echo tool.');
    // The model saw the caller's history first, with the agent's own settings.
    expect(model.requests[0]?.messages.slice(0, 2)).toEqual(history);
    expect(model.requests[0]?.system).toBe('Be brief.');
    expect(history).toEqual(frozen);
    expect(agent.messages).toEqual([]);
    await agent.stop();
  });

  it('runs several conversations on one definition at once, each with its own history', async () => {
    // Each answer names the conversation it saw, so crossed histories would show.
    const model = scriptedModel((request) => ({ text: `seen: ${textOf(request.messages[0])}`, latencyMs: 5 }));
    const agent = createAgent({ model });
    const conversations = ['alice', 'bob', 'carol'].map((who): Message[] => [
      { role: 'user', content: [{ type: 'text', text: who }] },
      reply('hi'),
    ]);

    const results = await Promise.all(conversations.map((messages) => agent.run({ messages, input: 'who am I?' })));

    expect(results.map((r) => r.text)).toEqual(['seen: alice', 'seen: bob', 'seen: carol']);
    expect(model.requests.every((r) => r.messages.length === 3)).toBe(true);
    await agent.stop();
  });

  it("reports the conversation's own events to `on`, not to the agent's listeners", async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'ok' }]) });
    const agentHeard: AgentEvent[] = [];
    agent.on('*', (event) => agentHeard.push(event));
    const heard: string[] = [];
    await agent.run({ messages: [], input: 'x', on: (event) => heard.push(event.type) });

    expect(heard).toContain('turn_start');
    expect(heard.at(-1)).toBe('agent_end');
    expect(agentHeard).toEqual([]);
    await agent.stop();
  });

  it('refuses a stopped agent, and a conversation whose signal aborts ends interrupted', async () => {
    const slow = createAgent({ model: scriptedModel([{ text: 'late', latencyMs: 10_000 }]) });
    const controller = new AbortController();
    const pending = slow.run({ messages: [], input: 'x', signal: controller.signal });
    setImmediate(() => controller.abort());
    expect((await pending).stopReason).toBe('interrupted');

    await slow.stop();
    await expect(slow.run({ messages: [], input: 'x' })).rejects.toThrow(/stopped/);
  });
});
