import { describe, expect, it } from 'vitest';
import type { AnyActorRef } from 'xstate';
import { z } from 'zod';
import { createAgent, createSupervisor, defineTool, scriptedModel, textOf } from '../../src/index.js';
import { latch, router } from './helpers.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'looks things up',
  schema: z.object({}),
  execute: () => 'found',
});
const write = defineTool({
  name: 'write',
  description: 'writes things',
  schema: z.object({}),
  execute: () => 'written',
});

describe('profiles and hand-off', () => {
  it('a profile sets the system prompt, a tool allow-list and the model; the rest is inherited, never the history', async () => {
    const childModel = scriptedModel([{ text: 'from the reviewer model' }]);
    const parentRequests: string[][] = [];
    const model = router(({ prompt, answers, lastTool, request }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) {
          return {
            toolCalls: [
              {
                name: 'swarm',
                args: {
                  tasks: [
                    { profile: 'explore', prompt: 'find it' },
                    { profile: 'reviewer', prompt: 'review it' },
                  ],
                },
              },
            ],
          };
        }
        return { text: lastTool };
      }
      parentRequests.push([request.system ?? '', ...request.tools.map((t) => t.name), `${request.messages.length}`]);
      return { text: `explored with ${request.tools.map((t) => t.name).join(',')}` };
    });
    const root = createAgent({
      model,
      system: 'You are the root.',
      tools: [lookup, write],
      subagents: {
        profiles: {
          explore: { system: 'Explore.', tools: ['lookup'] },
          reviewer: { model: childModel, tools: [] },
        },
      },
    });
    await root.prompt('ROOT');
    // The explorer: its own system prompt, only the allowed tool, and nothing of the parent's conversation.
    expect(parentRequests).toEqual([['Explore.', 'lookup', '1']]);
    // The reviewer ran on its profile's model.
    expect(childModel.calls).toBe(1);
    expect(childModel.requests[0]?.messages).toHaveLength(1);
    expect(childModel.requests[0]?.tools).toEqual([]);
    await root.stop();
  });

  it('the model sees the profiles, with what each is for, in the subagent tools', async () => {
    const model = scriptedModel([{ text: 'ok' }]);
    const supervisor = createSupervisor({
      model,
      profiles: { explore: { description: 'researches one topic' }, coder: {} },
    });
    await supervisor.agent({ id: 'lead' }).prompt('hi');
    const tools = model.requests[0]?.tools ?? [];
    expect(tools.map((t) => t.name)).toEqual(['agent', 'swarm', 'task_status', 'task_cancel']);
    const schema = tools[0]?.inputSchema as { properties: { profile: { description: string } } };
    expect(schema.properties.profile.description).toContain('"explore" (researches one topic), "coder"');
    await supervisor.stop();
  });

  it('with an outputSchema the hand-off is the validated output', async () => {
    const model = router(({ answers }) =>
      answers === 0 ? { text: 'not json' } : { text: '{"score": 7, "why": "good"}' },
    );
    const supervisor = createSupervisor({
      model,
      profiles: { judge: { outputSchema: z.object({ score: z.number(), why: z.string() }) } },
    });
    const result = await supervisor.run('judge this', { profile: 'judge' });
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ score: 7, why: 'good' });
    expect(JSON.parse(result.text)).toEqual({ score: 7, why: 'good' });
    await supervisor.stop();
  });

  it('a child’s hand-off waits for its own background children: it is taken once they have reported', async () => {
    const gate = latch();
    const model = router(async ({ prompt, answers, request }) => {
      if (prompt === 'ROOT') {
        return answers === 0 ? { toolCalls: [{ name: 'agent', args: { prompt: 'mid' } }] } : { text: 'root done' };
      }
      if (prompt === 'mid') {
        if (answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'leaf', background: true } }] };
        if (answers === 1) return { text: 'mid: waiting for leaf' };
        const note = request.messages.filter((m) => m.role === 'user' && m.source === 'notification').pop();
        return { text: `mid: leaf said ${textOf(note).replace(/<[^>]+>/g, '')}` };
      }
      await gate.promise;
      return { text: 'leaf result' };
    });
    const root = createAgent({ model, subagents: {} });
    let handOff = '';
    root.on(
      'tool_execution_end',
      (e) => {
        if (e.agentId === root.id) handOff = textOf({ role: 'user', content: e.result.content as never });
      },
      { subtree: true },
    );
    root.on(
      'agent_end',
      (e) => {
        // When mid first goes idle, its leaf is still running: open the gate only then.
        if (e.agentId !== root.id && e.parentId === root.id) gate.open();
      },
      { subtree: true },
    );
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('root done');
    expect(handOff).toBe('mid: leaf said leaf result');
    await root.stop();
  });

  it('stopping the root stops the whole subtree', async () => {
    const started = latch();
    const never = latch();
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'ROOT' && answers === 0) {
        return { toolCalls: [{ name: 'agent', args: { prompt: 'long', background: true } }] };
      }
      if (prompt === 'long') {
        started.open();
        await never.promise;
      }
      return { text: 'ok' };
    });
    const root = createAgent({ model, subagents: {} });
    const ends: string[] = [];
    root.on('subagent_end', (e) => ends.push(e.status));
    await root.prompt('ROOT');
    await started.promise;
    const supervisor = root.actor.getSnapshot().children.supervisor as AnyActorRef | undefined;
    expect(Object.keys(supervisor?.getSnapshot().children ?? {})).toHaveLength(1);
    await root.stop();
    expect(root.actor.getSnapshot().status).toBe('stopped');
    expect(supervisor?.getSnapshot().status).not.toBe('active');
    expect(ends).toEqual(['interrupted']);
  });
});
