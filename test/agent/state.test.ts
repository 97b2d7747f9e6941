import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel } from '../../src/index.js';
import { latch, router } from '../supervisor/helpers.js';
import { echo } from './helpers.js';

describe('agent.getState(): the agent at a glance', () => {
  it('reads idle, then the step waiting for an approval with the call, then idle again with the usage', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', args: { text: 'rm' }, id: 'call_1' }], usage: { input: 10, output: 2 } },
      { text: 'done', usage: { input: 5, output: 1 } },
    ]);
    const agent = createAgent({ model, tools: [echo], policy: () => 'ask' });
    expect(agent.getState()).toMatchObject({ status: 'idle', state: 'idle', turn: 0, queuedPrompts: 0, messages: 0 });

    const asked = new Promise<void>((resolve) => agent.on('approval_requested', () => resolve()));
    const first = agent.prompt('go');
    const second = agent.prompt('and again');
    await asked;
    const waiting = agent.getState();
    expect(waiting).toMatchObject({
      status: 'running',
      state: 'running.turn.step.tools.awaitingApproval',
      turn: 1,
      step: 1,
      queuedPrompts: 1,
      pendingApprovals: [{ toolCallId: 'call_1', toolName: 'echo', arguments: { text: 'rm' } }],
    });

    agent.approve('call_1');
    await first;
    await second.catch(() => undefined);
    const after = agent.getState();
    expect(after.pendingApprovals).toEqual([]);
    expect(after.usage).toMatchObject({ input: 15, output: 3 });
    // A copy: editing it changes nothing.
    after.usage.input = 0;
    expect(agent.getState().usage.input).toBe(15);
    await agent.stop();
    expect(agent.getState()).toMatchObject({ status: 'stopped', state: 'stopped' });
  });

  it('lists running subagents and forgets them when they settle', async () => {
    const release = latch();
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'child work', background: true } }] };
        return { text: 'ok' };
      }
      await release.promise;
      return { text: 'child done' };
    });
    const root = createAgent({ model, subagents: {} });
    await root.prompt('ROOT');
    const [child] = root.getState().runningChildren;
    expect(child).toMatchObject({ background: true });
    expect(child?.agentId).toMatch(/./);

    const ended = new Promise<void>((resolve) => root.on('subagent_end', () => resolve()));
    release.open();
    await ended;
    expect(root.getState().runningChildren).toEqual([]);
    await root.stop();
  });
});
