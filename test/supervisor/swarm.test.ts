import { describe, expect, it } from 'vitest';
import type { AnyActorRef } from 'xstate';
import { createAgent, createSupervisor } from '../../src/index.js';
import { parseResults, router } from './helpers.js';

describe('swarm batches', () => {
  it('fans out 100 subagents with concurrency 8: never more than 8 running, each result once, in task order', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    let swarmResult = '';
    const model = router(async ({ prompt, answers, lastTool }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) {
          const tasks = Array.from({ length: 100 }, (_, i) => ({ prompt: `task ${i}` }));
          return { toolCalls: [{ name: 'swarm', args: { tasks } }] };
        }
        swarmResult = lastTool;
        return { text: 'all done' };
      }
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const i = Number(prompt.slice(5));
      // Uneven latency, so that children finish out of task order.
      await new Promise((resolve) => setTimeout(resolve, (i * 7) % 5));
      inFlight--;
      return { text: `answer ${i}`, usage: { input: 10, output: 1 } };
    });
    const root = createAgent({ model, subagents: { concurrency: 8, keepFinished: 0 } });
    let running = 0;
    let maxRunning = 0;
    const started = new Map<string, number>();
    const ended = new Map<string, number>();
    const endOrder: string[] = [];
    root.on(
      '*',
      (event) => {
        if (event.type === 'subagent_start') {
          running++;
          maxRunning = Math.max(maxRunning, running);
          started.set(event.taskId, (started.get(event.taskId) ?? 0) + 1);
          expect(event.agentId).toBe(root.id);
        }
        if (event.type === 'subagent_end') {
          running--;
          ended.set(event.taskId, (ended.get(event.taskId) ?? 0) + 1);
          endOrder.push(event.childId);
        }
      },
      { subtree: true },
    );

    const result = await root.prompt('ROOT');
    expect(result.text).toBe('all done');
    expect(maxRunning).toBe(8);
    expect(maxInFlight).toBe(8);
    expect(started.size).toBe(100);
    expect([...started.values()].every((n) => n === 1)).toBe(true);
    expect(ended.size).toBe(100);
    expect([...ended.values()].every((n) => n === 1)).toBe(true);

    const results = parseResults(swarmResult);
    expect(results.map((r) => r.text)).toEqual(Array.from({ length: 100 }, (_, i) => `answer ${i}`));
    expect(results.every((r) => r.status === 'completed')).toBe(true);
    // They did finish in another order: the task order of the result is the batch's doing.
    expect(endOrder).not.toEqual(results.map((r) => r.agentId));
    // Usage per agent, per subtree, per system.
    expect(root.usage.input).toBe(0);
    expect(root.subtreeUsage.input).toBe(1000);
    await root.stop();
  });

  it('createSupervisor().swarm() resolves with results in task order, and background with task ids', async () => {
    const model = router(({ prompt }) => ({ text: `re: ${prompt}`, latencyMs: prompt === 'slow' ? 5 : 0 }));
    const supervisor = createSupervisor({ model, concurrency: 2 });
    const results = await supervisor.swarm(['slow', 'fast', { prompt: 'third' }]);
    expect(results.map((r) => r.text)).toEqual(['re: slow', 're: fast', 're: third']);
    expect(new Set(results.map((r) => r.agentId)).size).toBe(3);

    const notes: string[] = [];
    supervisor.on('notification', (event) => notes.push(event.taskId));
    const ids = await supervisor.swarm(['a', 'b'], { background: true });
    expect(ids).toHaveLength(2);
    const settled = await Promise.all(ids.map((id) => supervisor.result(id)));
    expect(settled.map((r) => r.text)).toEqual(['re: a', 're: b']);
    expect(notes.sort()).toEqual([...ids].sort());
    expect(supervisor.status(ids[0] ?? '')?.status).toBe('completed');
    await supervisor.stop();
  });

  it('accounts usage per agent, per subtree (stopped agents included) and per system', async () => {
    const model = router(({ prompt, answers }) => {
      if (prompt === 'LEAD' && answers === 0) {
        return {
          usage: { input: 100 },
          toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: 'a' }, { prompt: 'b' }] } }],
        };
      }
      if (prompt === 'LEAD') return { usage: { input: 100 }, text: 'done' };
      return { usage: { input: 10, output: 1 }, text: prompt };
    });
    // keepFinished: 0 stops each child as soon as it is done: its usage must not go with it.
    const supervisor = createSupervisor({ model, keepFinished: 0 });
    const lead = supervisor.agent({ id: 'lead' });
    const children: string[] = [];
    supervisor.on('subagent_end', (e) => children.push(e.childId));
    await lead.prompt('LEAD');
    expect(lead.usage.input).toBe(200);
    expect(lead.subtreeUsage).toMatchObject({ input: 220, output: 2 });
    expect(supervisor.usageOf('lead', 'subtree')).toMatchObject({ input: 220, output: 2 });
    expect(children.map((id) => supervisor.usageOf(id)?.input)).toEqual([10, 10]);
    expect(children.map((id) => supervisor.whereIs(id))).toEqual(['archived', 'archived']);
    await supervisor.run('solo');
    expect(supervisor.usage).toMatchObject({ input: 230, output: 3 });
    await supervisor.stop();
  });

  it('one listener on the root follows the whole tree: events carry agentId and parentId', async () => {
    const model = router(({ prompt, answers }) => {
      if (prompt === 'ROOT' && answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'mid' } }] };
      if (prompt === 'mid' && answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'leaf' } }] };
      return { text: `${prompt} done` };
    });
    const root = createAgent({ model, id: 'root', subagents: {} });
    const seen = new Map<string, string | undefined>();
    root.on('turn_end', (event) => seen.set(event.agentId, event.parentId), { subtree: true });
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('ROOT done');
    expect(seen.size).toBe(3);
    expect(seen.get('root')).toBeUndefined();
    const [mid] = [...seen].find(([, parent]) => parent === 'root') ?? [];
    expect(mid).toBeDefined();
    expect([...seen].some(([, parent]) => parent === mid)).toBe(true);
    await root.stop();
  });

  it('the XState parent chain is agent → supervisor → batch → pool → pool → task → subagent, with dotted ids', async () => {
    let chainDuring: string[] = [];
    let childWorkersDuring: string[] = ['not read'];
    let child: AnyActorRef | undefined;
    const model = router(({ prompt, answers }) => {
      if (prompt === 'ROOT' && answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'child' } }] };
      if (prompt === 'child') {
        chainDuring = [];
        let actor = root.actor.getSnapshot().children.supervisor as AnyActorRef | undefined;
        while (actor) {
          const [key, next] = Object.entries(actor.getSnapshot().children ?? {})[0] ?? [];
          if (!key) break;
          chainDuring.push(key);
          child = next as AnyActorRef;
          actor = child;
        }
        childWorkersDuring = Object.keys(child?.getSnapshot().children ?? {}).sort();
      }
      return { text: 'ok' };
    });
    const root = createAgent({ model, subagents: {} });
    await root.prompt('ROOT');
    expect(chainDuring.map((key) => key.split('.')[0])).toEqual(['batch', 'pool', 'pool', 'task', 'subagent']);
    expect(chainDuring.slice(1, 4)).toEqual(['pool.0', 'pool.0', 'task.0']);
    // The child runs its turn with no actor under it (its requests are actions), and holds none idle.
    expect(childWorkersDuring).toEqual([]);
    expect(child?.getSnapshot().value).toBe('idle');
    expect(child?.getSnapshot().children).toEqual({});
    await root.stop();
  });
});
