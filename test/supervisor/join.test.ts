import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { z } from 'zod';
import { supervisorMachine } from '../../machines/supervisor.js';
import { createSupervisor, defineTool } from '../../src/index.js';
import type { TaskSpec } from '../../src/protocol/index.js';
import { latch, router } from './helpers.js';

function task(i: number): TaskSpec {
  return { taskId: `t${i}`, agentId: `a${i}`, prompt: `p${i}`, expectsOutput: false };
}

const settled = (actions: Array<{ type: string; params?: unknown }>) =>
  actions
    .filter((a) => a.type === 'settleTask')
    .map((a) => {
      const p = a.params as { taskId: string; status: string };
      return `${p.taskId}:${p.status}`;
    });

describe('join policies: pure transitions', () => {
  const tasks = [task(1), task(2), task(3), task(4)];
  function spawn(join: { kind: 'first' | 'quorum'; k: number } | { kind: 'all' | 'allSettled' }) {
    const [s0] = initialTransition(supervisorMachine, { ownerId: 'o', maxRestarts: 0 });
    const [s1] = transition(supervisorMachine, s0, {
      type: 'SPAWN',
      batch: { batchId: 'b', background: false, concurrency: 3, tasks, join },
    });
    return s1;
  }
  const done = (i: number, outcome: 'completed' | 'failed') =>
    ({ type: 'CHILD.DONE', agentId: `a${i}`, taskId: `t${i}`, outcome, text: 'x' }) as const;

  it('first(1): the first completion cancels the running and the queued tasks, each reported as cancelled', () => {
    const [after, actions] = transition(supervisorMachine, spawn({ kind: 'first', k: 1 }), done(2, 'completed'));
    expect(settled(actions)).toEqual(['t2:completed', 't1:cancelled', 't3:cancelled', 't4:cancelled']);
    expect(actions.filter((a) => (a.type as string) === 'xstate.stopChild')).toHaveLength(2);
    expect(after.value).toBe('idle');
  });

  it('first(2): a failure does not decide it; the second completion does', () => {
    let [s, actions] = transition(supervisorMachine, spawn({ kind: 'first', k: 2 }), done(1, 'failed'));
    expect(settled(actions)).toEqual(['t1:failed']);
    [s, actions] = transition(supervisorMachine, s, done(2, 'completed'));
    expect(settled(actions)).toEqual(['t2:completed']);
    [s, actions] = transition(supervisorMachine, s, done(3, 'completed'));
    expect(settled(actions)).toEqual(['t3:completed', 't4:cancelled']);
    expect(s.value).toBe('idle');
  });

  it('quorum(3) of 4 fails as soon as two tasks failed, cancelling the rest', () => {
    let [s, actions] = transition(supervisorMachine, spawn({ kind: 'quorum', k: 3 }), done(1, 'failed'));
    expect(settled(actions)).toEqual(['t1:failed']);
    [s, actions] = transition(supervisorMachine, s, done(2, 'failed'));
    expect(settled(actions)).toEqual(['t2:failed', 't3:cancelled', 't4:cancelled']);
    expect(s.value).toBe('idle');
  });

  it('all and allSettled never cancel: a failure leaves the siblings running', () => {
    for (const kind of ['all', 'allSettled'] as const) {
      const [s, actions] = transition(supervisorMachine, spawn({ kind }), done(1, 'failed'));
      expect(settled(actions)).toEqual(['t1:failed']);
      expect(s.value).toBe('busy');
    }
  });
});

describe('join policies through the real tree', () => {
  it('swarm any: the winner’s answer is kept, the losers are really stopped (their tools see the abort)', async () => {
    const aborted: string[] = [];
    const started = { count: 0, all: latch() };
    const slow = defineTool({
      name: 'slow',
      description: 'waits until aborted',
      schema: z.object({ who: z.string() }),
      execute: ({ who }, { signal }) =>
        new Promise<string>((_, reject) => {
          if (++started.count === 2) started.all.open();
          signal.addEventListener('abort', () => {
            aborted.push(who);
            reject(new Error('aborted'));
          });
        }),
    });
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'fast') {
        await started.all.promise;
        return { text: 'fast wins', usage: { input: 3, output: 2 } };
      }
      if (answers === 0) return { usage: { input: 5 }, toolCalls: [{ name: 'slow', args: { who: prompt } }] };
      return { text: 'too late' };
    });
    const supervisor = createSupervisor({ model, tools: [slow], concurrency: 3 });
    const ends: Array<{ id: string; status: string; input: number }> = [];
    supervisor.on('subagent_end', (e) => ends.push({ id: e.taskId, status: e.status, input: e.usage.input }));
    const results = await supervisor.swarm(['slow-1', 'fast', 'slow-2'], { join: 'any' });
    expect(results.map((r) => r.status)).toEqual(['cancelled', 'completed', 'cancelled']);
    expect(results[1]?.text).toBe('fast wins');
    expect(aborted.sort()).toEqual(['slow-1', 'slow-2']);
    // The losers' partial usage (their first model call) is reported with their cancellation.
    expect(ends.filter((e) => e.status === 'cancelled').map((e) => e.input)).toEqual([5, 5]);
    expect(supervisor.usage.input).toBe(13);
    await supervisor.stop();
  });

  it('refuses a k that no batch of that size can meet', async () => {
    const supervisor = createSupervisor({ model: router(() => ({ text: 'ok' })) });
    await expect(supervisor.swarm(['a', 'b'], { join: { quorum: 3 } })).rejects.toThrow(/quorum\(3\) needs k/);
    await supervisor.stop();
  });
});
