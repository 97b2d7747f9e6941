import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSupervisor, defineTool } from '../../src/index.js';
import { latch, router } from './helpers.js';

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
