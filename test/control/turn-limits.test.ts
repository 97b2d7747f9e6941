/**
 * Turn limits hold for agents used as tools and for background subagents (issue 15: elsewhere a subagent with
 * `maxTurns: 10` ran 72 turns): a profile's `maxSteps`, and the parent's own when the profile leaves it out.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEvent, createAgent, defineTool } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { router, waitFor } from '../supervisor/helpers.js';

/** A child that never stops on its own: every answer calls `work` again. */
function looping() {
  const calls = new Map<string, number>();
  const work = defineTool({
    name: 'work',
    description: 'works',
    schema: z.object({}),
    execute: (_args, ctx) => {
      calls.set(ctx.agentId, (calls.get(ctx.agentId) ?? 0) + 1);
      return 'more to do';
    },
  });
  return { work, calls };
}

const callWork: ScriptedAnswer = { toolCalls: [{ name: 'work', args: {} }] };

function rootModel(spawn: Record<string, unknown>) {
  return router(({ prompt, last, lastUser }) => {
    if (prompt === 'CHILD') return callWork;
    if (lastUser.includes('<notification')) return { text: 'noted' };
    if (last?.role === 'tool') return { text: 'root done' };
    return { toolCalls: [{ name: 'agent', args: { prompt: 'CHILD', ...spawn } }] };
  });
}

function childEnd(events: AgentEvent[]) {
  return events.find((e) => e.type === 'turn_end' && e.agentId !== 'root');
}

describe("a profile's maxSteps", () => {
  it('holds for an agent used as a tool (foreground)', async () => {
    const { work, calls } = looping();
    const root = createAgent({
      id: 'root',
      model: rootModel({ profile: 'worker' }),
      tools: [work],
      subagents: { profiles: { worker: { maxSteps: 3 } } },
    });
    const events: AgentEvent[] = [];
    root.on('*', (e) => events.push(e), { subtree: true });
    const result = await root.prompt('go');
    expect(result.stopReason).toBe('completed');
    expect(childEnd(events)).toMatchObject({ stopReason: 'max_steps' });
    // Three model calls, each asking for `work`: three runs, then the limit.
    expect([...calls.values()]).toEqual([3]);
    await root.stop();
  });

  it('holds for a background subagent', async () => {
    const { work, calls } = looping();
    const root = createAgent({
      id: 'root',
      model: rootModel({ profile: 'worker', background: true }),
      tools: [work],
      subagents: { profiles: { worker: { maxSteps: 3 } } },
    });
    const events: AgentEvent[] = [];
    root.on('*', (e) => events.push(e), { subtree: true });
    const delivered = waitFor(root.on.bind(root), (e) => e.type === 'notification');
    await root.prompt('go');
    await delivered;
    expect(childEnd(events)).toMatchObject({ stopReason: 'max_steps' });
    expect([...calls.values()]).toEqual([3]);
    await root.stop();
  });
});

describe("the parent's maxSteps", () => {
  it('is inherited by a subagent whose profile leaves it out, foreground and background', async () => {
    for (const background of [false, true]) {
      const { work, calls } = looping();
      const root = createAgent({
        id: 'root',
        model: rootModel({ background }),
        tools: [work],
        maxSteps: 4,
        subagents: {},
      });
      const events: AgentEvent[] = [];
      root.on('*', (e) => events.push(e), { subtree: true });
      const ended = waitFor(
        (type, fn) => root.on(type, fn, { subtree: true }),
        (e) => e.type === 'subagent_end',
      );
      await root.prompt('go');
      await ended;
      expect(childEnd(events)).toMatchObject({ stopReason: 'max_steps' });
      expect([...calls.values()]).toEqual([4]);
      await root.stop();
    }
  });
});
