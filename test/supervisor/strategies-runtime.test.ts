import { describe, expect, it } from 'vitest';
import { createAgent, createSupervisor } from '../../src/index.js';
import { assertValidHistory, router } from './helpers.js';

// The strategies through the real runtime: scripted children fail on purpose, and what the user sees (results,
// subagent_start events, the root's turn) follows the batch's strategy.

/** A promise and its resolve, for a child that must still be running when its sibling fails. */
function latch() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('supervision strategies, embedded', () => {
  it("oneForAll: the critic's failure restarts the writer still running with it, naming the critic", async () => {
    const criticFailed = latch();
    const asked: string[] = [];
    const model = router(async ({ prompt }) => {
      asked.push(prompt);
      const attempt = asked.filter((p) => p === prompt).length;
      if (prompt === 'critic' && attempt === 1) {
        queueMicrotask(criticFailed.open);
        return { text: '', error: { code: 'invalid_request', message: 'critic lost the plan' } };
      }
      // The writer's first run is still working when the critic fails.
      if (prompt === 'writer' && attempt === 1) await criticFailed.opened.then(() => new Promise(() => {}));
      return { text: `${prompt} done on run ${attempt}` };
    });
    const supervisor = createSupervisor({ model, restartDelayMs: 0 });
    const starts: Array<{ taskId: string; attempt?: number; restartedBy?: string }> = [];
    supervisor.on('subagent_start', (e) =>
      starts.push({
        taskId: e.taskId,
        ...(e.attempt ? { attempt: e.attempt } : {}),
        ...(e.restartedBy ? { restartedBy: e.restartedBy } : {}),
      }),
    );
    const results = await supervisor.swarm(['writer', 'critic'], { strategy: 'oneForAll' });
    expect(results.map((r) => [r.status, r.text])).toEqual([
      ['completed', 'writer done on run 2'],
      ['completed', 'critic done on run 2'],
    ]);
    const [writer, critic] = results.map((r) => r.taskId);
    expect(starts.filter((s) => s.attempt === 1)).toEqual(
      expect.arrayContaining([
        { taskId: writer, attempt: 1, restartedBy: critic },
        { taskId: critic, attempt: 1 },
      ]),
    );
    await supervisor.stop();
  });

  it('restForOne: stage b fails; c (started after it) restarts with it, a (before it) goes on', async () => {
    const bFailed = latch();
    const asked: string[] = [];
    const model = router(async ({ prompt }) => {
      asked.push(prompt);
      const attempt = asked.filter((p) => p === prompt).length;
      if (prompt === 'b' && attempt === 1) {
        queueMicrotask(bFailed.open);
        return { text: '', error: { code: 'invalid_request', message: 'b broke' } };
      }
      if ((prompt === 'a' || prompt === 'c') && attempt === 1) await bFailed.opened;
      return { text: `${prompt} on run ${attempt}` };
    });
    const supervisor = createSupervisor({ model, restartDelayMs: 0 });
    const results = await supervisor.swarm(['a', 'b', 'c'], { strategy: 'restForOne' });
    expect(results.map((r) => r.text)).toEqual(['a on run 1', 'b on run 2', 'c on run 2']);
    await supervisor.stop();
  });

  it("oneForOne (the default): a sibling's failure restarts nobody else", async () => {
    const asked: string[] = [];
    const model = router(({ prompt }) => {
      asked.push(prompt);
      const attempt = asked.filter((p) => p === prompt).length;
      if (prompt === 'b' && attempt === 1) return { text: '', error: { code: 'invalid_request', message: 'b broke' } };
      return { text: `${prompt} on run ${attempt}` };
    });
    const supervisor = createSupervisor({ model, restartDelayMs: 0 });
    const results = await supervisor.swarm(['a', 'b', 'c']);
    expect(results.map((r) => r.text)).toEqual(['a on run 1', 'b on run 2', 'c on run 1']);
    await supervisor.stop();
  });

  it('intensity exceeded escalates up the tree: the root turn ends failed, naming the task and the cause', async () => {
    let childRuns = 0;
    const model = router(({ prompt, answers }) => {
      if (prompt === 'ROOT') {
        return answers === 0 ? { toolCalls: [{ name: 'agent', args: { prompt: 'MIDDLE' } }] } : { text: 'never' };
      }
      if (prompt === 'MIDDLE') {
        if (answers === 0) return { toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: 'leaf' }] } }] };
        return { text: 'middle should not go on' };
      }
      childRuns++;
      return { text: '', error: { code: 'invalid_request', message: 'the leaf keeps failing' } };
    });
    const root = createAgent({
      model,
      subagents: { restartDelayMs: 0, maxRestarts: 5, intensity: { maxRestarts: 1, withinMs: 60_000 } },
    });
    const ends: string[] = [];
    root.on('subagent_end', (e) => ends.push(e.status));
    const result = await root.prompt('ROOT');
    // The leaf ran twice (one restart, the intensity); the second failure escalated to MIDDLE's turn, whose task
    // failed as an escalation, which escalates by default: the root's turn ends with it.
    expect(childRuns).toBe(2);
    expect(result.stopReason).toBe('error');
    expect(result.error?.code).toBe('escalated');
    expect(result.error?.message).toMatch(
      /Subagent task \S+ \(agent \S+\) failed and its batch escalated \(escalation failure\)/,
    );
    expect(result.error?.message).toContain('too many restarts within the intensity window');
    expect(result.error?.message).toContain('the leaf keeps failing');
    // The root hears of its own child only: MIDDLE's task failed.
    expect(ends).toEqual(['failed']);
    assertValidHistory(root.messages);
    await root.stop();
  });

  it('a swarm refuses supervision options that cannot work, before anything starts', async () => {
    const supervisor = createSupervisor({ model: router(() => ({ text: 'x' })) });
    await expect(supervisor.swarm(['a'], { intensity: { maxRestarts: -1, withinMs: 10 } })).rejects.toThrow(
      /swarm\.intensity\.maxRestarts/,
    );
    expect(() => createSupervisor({ strategy: 'all' as never })).toThrow(/subagents\.strategy/);
    await supervisor.stop();
  });
});
