import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createAgent, createSupervisor, defineTool, type Message, textOf } from '../../src/index.js';
import { assertValidHistory, latch, router, waitFor } from './helpers.js';

const notes = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'notification').map((m) => textOf(m));

describe('interrupting a parent mid-batch', () => {
  it('stops its foreground children (queued ones never start), leaves background ones running; histories stay valid', async () => {
    const background = latch();
    const busy = latch();
    const never = latch();
    let working = 0;
    const work = defineTool({
      name: 'work',
      description: 'works until interrupted',
      schema: z.object({}),
      execute: async (_, ctx) => {
        if (++working === 2) busy.open();
        await Promise.race([never.promise, new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))]);
        return 'worked';
      },
    });
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'bg', background: true } }] };
        if (answers === 1) {
          const tasks = ['f1', 'f2', 'f3'].map((p) => ({ prompt: p }));
          return { toolCalls: [{ name: 'swarm', args: { tasks } }] };
        }
        return { text: `woke with ${notes([]).length}` };
      }
      if (prompt === 'bg') {
        await background.promise;
        return { text: 'bg finished' };
      }
      return answers === 0 ? { toolCalls: [{ name: 'work', args: {} }] } : { text: 'unreachable' };
    });
    const supervisor = createSupervisor({ model, tools: [work], concurrency: 2 });
    const parent = supervisor.agent({ model, tools: [work] });
    const starts = new Map<string, string>();
    const ends = new Map<string, string>();
    supervisor.on('subagent_start', (e) => starts.set(e.taskId, e.childId));
    supervisor.on('subagent_end', (e) => ends.set(e.taskId, e.status));
    const turn = parent.prompt('ROOT');
    await busy.promise;
    parent.interrupt();
    const result = await turn;
    expect(result.stopReason).toBe('interrupted');
    // Wait for the interrupted batch to settle, then check.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const statuses = [...ends.values()];
    expect(statuses.filter((s) => s === 'interrupted')).toHaveLength(3);
    // f3 was queued behind the cap of 2: it never started. bg and f1, f2 did.
    expect(starts.size).toBe(3);
    const bgTask = [...starts.keys()].find((taskId) => !ends.has(taskId));
    expect(bgTask).toBeDefined();
    expect(supervisor.status(bgTask ?? '')?.status).toBe('running');
    // The stopped children's histories are valid: their open tool calls were closed.
    for (const [taskId, childId] of starts) {
      if (taskId === bgTask) continue;
      const history = supervisor.messagesOf(childId) ?? [];
      expect(history.length).toBeGreaterThanOrEqual(3);
      assertValidHistory(history);
      const lastTool = history.filter((m) => m.role === 'tool').pop();
      expect(JSON.stringify(lastTool)).toContain('interrupted');
    }
    assertValidHistory(parent.messages);

    // The background child was not touched: it finishes and its result reaches the (woken) parent.
    const woke = waitFor(supervisor.on.bind(supervisor), (e) => e.type === 'turn_end' && e.agentId === parent.id);
    background.open();
    await woke;
    expect(ends.get(bgTask ?? '')).toBe('completed');
    expect(notes(parent.messages)).toHaveLength(1);
    expect(notes(parent.messages)[0]).toContain('bg finished');
    assertValidHistory(parent.messages);
    await supervisor.stop();
  });
});

describe('stopping mid-batch', () => {
  it('settles every task of a running foreground swarm as interrupted, and nothing is sent to a stopped actor', async () => {
    const warn = vi.spyOn(console, 'warn');
    const error = vi.spyOn(console, 'error');
    try {
      const inFlight = latch();
      const never = latch();
      let started = 0;
      const model = router(async ({ prompt, answers }) => {
        if (prompt === 'ROOT' && answers === 0) {
          const tasks = ['a', 'b', 'c'].map((p) => ({ prompt: p }));
          return { toolCalls: [{ name: 'swarm', args: { tasks } }] };
        }
        if (++started === 2) inFlight.open();
        await never.promise;
        return { text: 'never' };
      });
      const root = createAgent({ model, subagents: { concurrency: 2 } });
      const ends: string[] = [];
      root.on('subagent_end', (e) => ends.push(e.status));
      const turn = root.prompt('ROOT');
      await inFlight.promise;
      await root.stop();
      expect((await turn).stopReason).toBe('interrupted');
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(ends).toEqual(['interrupted', 'interrupted', 'interrupted']);
      expect(warn).not.toHaveBeenCalled();
      expect(error).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      error.mockRestore();
    }
  });
});

describe('approvals across the tree', () => {
  const needsApproval = defineTool({
    name: 'danger',
    description: 'needs approval',
    schema: z.object({}),
    execute: () => 'done it',
  });

  it('a subagent inherits its parent’s ask policy; its approval request reaches the root and is answered there', async () => {
    const danger = defineTool({
      name: 'danger',
      description: 'needs approval',
      schema: z.object({ what: z.string() }),
      execute: ({ what }) => `did ${what}`,
    });
    const model = router(({ prompt, answers, lastTool }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) {
          const tasks = [{ prompt: 'yes' }, { prompt: 'no' }];
          return { toolCalls: [{ name: 'swarm', args: { tasks } }] };
        }
        return { text: lastTool };
      }
      if (answers === 0) return { toolCalls: [{ name: 'danger', args: { what: prompt } }] };
      return { text: `${prompt}: ${lastTool}` };
    });
    const root = createAgent({
      model,
      id: 'root',
      tools: [danger],
      policy: (call) => (call.name === 'danger' ? 'ask' : 'allow'),
      subagents: {},
    });
    const asked: Array<{ agentId: string; parentId?: string; args: unknown }> = [];
    root.on(
      'approval_requested',
      (event) => {
        asked.push({
          agentId: event.agentId,
          ...(event.parentId ? { parentId: event.parentId } : {}),
          args: event.args,
        });
        if ((event.args as { what: string }).what === 'yes') root.approve(event);
        else root.deny(event, 'not today');
      },
      { subtree: true },
    );
    const result = await root.prompt('ROOT');
    expect(asked).toHaveLength(2);
    expect(asked.every((a) => a.agentId !== 'root' && a.parentId === 'root')).toBe(true);
    expect(result.text).toContain('yes: did yes');
    expect(result.text).toContain('no: The user denied this tool call: not today');
    await root.stop();
  });

  it('createSupervisor().approve() routes a bare tool call id to the one agent waiting on it', async () => {
    const model = router(({ answers, lastTool }) =>
      answers === 0 ? { toolCalls: [{ name: 'danger', args: {}, id: 'only_call' }] } : { text: lastTool },
    );
    const supervisor = createSupervisor({ model, tools: [needsApproval], policy: () => 'ask' });
    supervisor.on('approval_requested', (event) => supervisor.approve(event.toolCallId));
    expect((await supervisor.run('go')).text).toBe('done it');
    await supervisor.stop();
  });

  it('a waiting call closed without an answer (cancelled) does not capture a later approval of the same id', async () => {
    const model = router(({ answers, lastTool }) =>
      answers === 0 ? { toolCalls: [{ name: 'danger', args: {}, id: 'same_id' }] } : { text: lastTool },
    );
    const supervisor = createSupervisor({ model, tools: [needsApproval], policy: () => 'ask' });
    const starts: string[] = [];
    supervisor.on('subagent_start', (event) => starts.push(event.taskId));
    const asked = waitFor(supervisor.on.bind(supervisor), (e) => e.type === 'approval_requested');
    const first = supervisor.run('first');
    await asked;
    expect(supervisor.cancel(starts[0] ?? '')).toBe(true);
    expect((await first).status).toBe('cancelled');

    // The second agent's call reuses the id; a bare-id approval must reach it, not the cancelled first agent.
    supervisor.on('approval_requested', (event) => supervisor.approve(event.toolCallId));
    const second = await supervisor.run('second');
    expect(second.status).toBe('completed');
    expect(second.text).toBe('done it');
    await supervisor.stop();
  });
});

describe('resume by id', () => {
  it('resumes a finished subagent kept alive, and one rebuilt from its history after eviction', async () => {
    const seen: number[] = [];
    const model = router(({ prompt, request, lastUser }) => {
      seen.push(request.messages.length);
      return { text: `${prompt} / ${lastUser}` };
    });
    const supervisor = createSupervisor({ model, keepFinished: 1 });
    const first = await supervisor.run('A');
    const a = first.agentId;
    expect(supervisor.whereIs(a)).toBe('alive');
    const again = await supervisor.resume(a, 'follow up');
    expect(again.agentId).toBe(a);
    expect(again.text).toBe('A / follow up');
    expect(seen.at(-1)).toBe(3);

    // Two more tasks push A out of the keepFinished window: it is stopped, its history archived.
    await supervisor.swarm(['B', 'C'], { concurrency: 1 });
    expect(supervisor.whereIs(a)).toBe('archived');
    const usageBefore = supervisor.usageOf(a);
    const rebuilt = await supervisor.resume(a, 'one more');
    expect(rebuilt.text).toBe('A / one more');
    expect(seen.at(-1)).toBe(5);
    expect(supervisor.whereIs(a)).toBe('alive');
    expect(supervisor.messagesOf(a)?.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(usageBefore).toBeDefined();
    await expect(supervisor.resume('nobody', 'x')).rejects.toThrow(/No finished subagent "nobody"/);
    await supervisor.stop();
  });

  it('gives an Agent handle on a kept subagent: its history, usage and a direct prompt', async () => {
    const model = router(({ prompt, lastUser }) => ({ text: `${prompt} / ${lastUser}`, usage: { input: 5 } }));
    const supervisor = createSupervisor({ model });
    const { agentId } = await supervisor.run('first');
    const handle = supervisor.get(agentId);
    expect(handle?.id).toBe(agentId);
    expect(handle?.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect((await handle?.prompt('direct'))?.text).toBe('first / direct');
    expect(handle?.usage.input).toBe(10);
    await handle?.stop();
    expect(supervisor.whereIs(agentId)).toBe('archived');
    expect(supervisor.get(agentId)).toBeUndefined();
    expect(supervisor.get('nobody')).toBeUndefined();
    await supervisor.stop();
  });

  it('the model resumes its own subagent with the agent tool’s agent_id', async () => {
    const model = router(({ prompt, answers, lastTool, request, lastUser }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'remember 42' } }] };
        if (answers === 1) {
          const id = supervisorlessId(request.messages);
          return { toolCalls: [{ name: 'agent', args: { prompt: 'what was it?', agent_id: id } }] };
        }
        return { text: lastTool };
      }
      return { text: lastUser === 'what was it?' ? `it was ${prompt.split(' ')[1]}` : 'ok' };
    });
    const root = createAgent({ model, subagents: { keepFinished: 0 } });
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('it was 42');
    await root.stop();
  });

  it('two resumes of one agent sent while its owner is busy (both queued): the second is refused', async () => {
    const model = router(({ prompt, answers, lastUser }) => {
      if (prompt === 'SPAWN' && answers === 0)
        return { toolCalls: [{ name: 'agent', args: { prompt: 'remember 42' } }] };
      if (prompt === 'remember 42') return { text: lastUser === prompt ? 'ok' : `${lastUser}: 42` };
      return { text: 'ok' };
    });
    const supervisor = createSupervisor({ model });
    const owner = supervisor.agent({ id: 'owner' });
    await owner.prompt('SPAWN');
    const childId = supervisorlessId(owner.messages);
    expect(supervisor.whereIs(childId)).toBe('alive');
    // Both resumes are sent from inside the owner's transition: its supervisor hears neither until it is over, so
    // the agent has no task yet when the second one asks.
    let resumes: Array<Promise<unknown>> = [];
    const off = owner.on('turn_start', () => {
      off();
      resumes = [supervisor.resume(childId, 'first'), supervisor.resume(childId, 'second')];
    });
    await owner.prompt('NEXT');
    const [first, second] = await Promise.allSettled(resumes);
    expect(second).toMatchObject({ status: 'rejected' });
    expect(String((second as PromiseRejectedResult).reason)).toMatch(/is still running a task; wait for its result/);
    expect(first).toMatchObject({
      status: 'fulfilled',
      value: { agentId: childId, status: 'completed', text: 'first: 42' },
    });
    // The first resume ran on the one agent, undisturbed: its history holds both of its turns, once each.
    expect(supervisor.messagesOf(childId)?.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    await supervisor.stop();
  });
});

/** The child's agent id, from the details of the first `agent` tool result. */
function supervisorlessId(messages: readonly Message[]): string {
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    const details = message.content[0]?.details as { agentId?: string } | undefined;
    if (details?.agentId) return details.agentId;
  }
  return '';
}
