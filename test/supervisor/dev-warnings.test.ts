import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAgent, createSupervisor } from '../../src/index.js';
import { latch, router } from './helpers.js';

/**
 * XState's development build (the one vitest loads) warns when an action creator (`assign`, `sendTo`, `raise`, `emit`)
 * is called while a custom action runs. The runtime's effects are custom actions that may send to another actor
 * synchronously (a release of the oldest kept agent, a stop's interrupt), whose transition then runs inside them;
 * the supervision machines must therefore never create actions while resolving a transition.
 */
describe('no XState development warnings from the supervision layer', () => {
  const warnings: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    warnings.length = 0;
  });
  const listen = () =>
    vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
      warnings.push(String(args[0]));
    });

  it('releasing kept agents beyond keepFinished, adopting and stopping members', async () => {
    listen();
    const supervisor = createSupervisor({ model: router(() => ({ text: 'done' })), keepFinished: 1, concurrency: 2 });
    const results = await supervisor.swarm(['a', 'b', 'c', 'd']);
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const member = supervisor.agent({ id: 'm' });
    expect((await member.prompt('hi')).text).toBe('done');
    await supervisor.stop();
    expect(warnings.filter((w) => w.includes('Custom actions'))).toEqual([]);
  });

  it('stopping a parent whose subagents are running (their tasks settle, their agents are interrupted)', async () => {
    listen();
    const gate = latch();
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'ROOT' && answers === 0) {
        return { toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: 'x' }, { prompt: 'y' }] } }] };
      }
      if (prompt !== 'ROOT') await gate.promise;
      return { text: 'done' };
    });
    const root = createAgent({ model, subagents: {} });
    let started = 0;
    root.on('subagent_start', () => started++);
    const run = root.prompt('ROOT');
    await vi.waitFor(() => expect(started).toBe(2));
    await root.stop();
    gate.open();
    await run.catch(() => {});
    expect(warnings.filter((w) => w.includes('Custom actions'))).toEqual([]);
  });
});
