import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, createSupervisor, type Message, textOf } from '../../src/index.js';
import { assertValidHistory, router, waitFor } from './helpers.js';

const notes = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'notification').map((m) => textOf(m));

describe('failures and the supervision strategy', () => {
  it('restarts a failing child from its prompt with a fresh history, then reports it as a failed notification; siblings are unaffected', async () => {
    const badRequests: number[] = [];
    let rootSaw = '';
    const model = router(({ prompt, answers, request }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) {
          const tasks = ['bad', 'good1', 'good2'].map((p) => ({ prompt: p }));
          return { toolCalls: [{ name: 'swarm', args: { tasks, background: true } }] };
        }
        if (answers === 1) return { text: 'waiting' };
        rootSaw = notes(request.messages).join('\n');
        return { text: 'noted' };
      }
      if (prompt === 'bad') {
        badRequests.push(request.messages.length);
        return { text: 'partial', error: { code: 'invalid_request', message: 'the request is bad' } };
      }
      return { text: `${prompt} ok` };
    });
    const root = createAgent({ model, subagents: { maxRestarts: 2, restartDelayMs: 0 } });
    const starts: Array<{ child: string; attempt?: number }> = [];
    const ends: Record<string, string[]> = {};
    root.on('subagent_start', (e) => starts.push({ child: e.childId, ...(e.attempt ? { attempt: e.attempt } : {}) }));
    root.on('subagent_end', (e) => {
      ends[e.childId] ??= [];
      ends[e.childId]?.push(e.status);
    });
    let settled = 0;
    const allSettled = waitFor(root.on.bind(root), (e) => e.type === 'subagent_end' && ++settled === 3);
    await root.prompt('ROOT');
    await allSettled;
    await waitFor(
      root.on.bind(root),
      (e) => e.type === 'agent_end' && e.agentId === root.id && notes(root.messages).length === 3,
    );

    // Three attempts, each from the original prompt alone: a fresh history.
    expect(badRequests).toEqual([1, 1, 1]);
    const badId = starts.find((s) => s.attempt === 1)?.child;
    expect(starts.filter((s) => s.child === badId).map((s) => s.attempt)).toEqual([undefined, 1, 2]);
    expect(ends[badId ?? '']).toEqual(['failed']);
    const good = Object.entries(ends).filter(([id]) => id !== badId);
    expect(good.map(([, statuses]) => statuses)).toEqual([['completed'], ['completed']]);
    // One notification per task; the failure's says why.
    expect(notes(root.messages)).toHaveLength(3);
    const failed = notes(root.messages).find((n) => n.includes('status="failed"'));
    expect(failed).toContain('the request is bad');
    expect(rootSaw).toContain('good1 ok');
    assertValidHistory(root.messages);
    await root.stop();
  });

  it('a child that throws inside the runtime fails its task only: the supervisor and its siblings carry on', async () => {
    const model = router(({ prompt }) => ({ text: prompt === 'broken' ? '{"x":"1"}' : `${prompt} ok` }));
    const supervisor = createSupervisor({
      model,
      maxRestarts: 0,
      profiles: {
        broken: {
          outputSchema: z.object({ x: z.string() }).refine(() => {
            throw new Error('a bug in the schema');
          }),
        },
      },
    });
    const results = await supervisor.swarm([
      { prompt: 'one' },
      { prompt: 'broken', profile: 'broken' },
      { prompt: 'two' },
    ]);
    expect(results.map((r) => r.status)).toEqual(['completed', 'failed', 'completed']);
    expect(results[1]?.text).toMatch(/crashed/);
    expect(supervisor.actor.getSnapshot().status).toBe('active');
    // And it still works.
    expect((await supervisor.run('three')).text).toBe('three ok');
    await supervisor.stop();
  });
});
