import { describe, expect, it } from 'vitest';
import { createAgent, createSupervisor } from '../../src/index.js';
import { SpawnRefused } from '../../src/runtime/index.js';
import { latch, parseResults, router } from './helpers.js';

describe('hard limits: maxDepth and maxAgents', () => {
  it('nests subagents up to maxDepth and refuses beyond it with an error result', async () => {
    const refusals: string[] = [];
    const model = router(({ prompt, answers, lastTool, last }) => {
      const level = Number(prompt.slice(1));
      if (answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: `L${level + 1}` } }] };
      if (last?.role === 'tool' && last.content[0]?.isError) refusals.push(`${prompt}: ${lastTool}`);
      return { text: `${prompt}(${lastTool})` };
    });
    const root = createAgent({ model, subagents: { maxDepth: 2 } });
    const levels: string[] = [];
    root.on('subagent_start', (e) => levels.push(e.agentId), { subtree: true });
    const result = await root.prompt('L0');
    // L0 → L1 → L2; L2's call for L3 is refused.
    expect(levels).toHaveLength(2);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(/^L2: Refused: subagents may nest at most 2 deep \(maxDepth\)/);
    expect(result.text).toMatch(/^L0\(L1\(L2\(Refused/);
    await root.stop();
  });

  it('refuses a batch beyond maxAgents at once (not queued), while other subagents are still running', async () => {
    const gate = latch();
    let refusedWhileBusy = '';
    const model = router(async ({ prompt, answers, lastTool }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) {
          return {
            toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: 'bg1' }, { prompt: 'bg2' }], background: true } }],
          };
        }
        if (answers === 1)
          return { toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: 'x' }, { prompt: 'y' }] } }] };
        refusedWhileBusy = lastTool;
        gate.open();
        return { text: 'ok' };
      }
      await gate.promise;
      return { text: `${prompt} done` };
    });
    const root = createAgent({ model, subagents: { maxAgents: 3 }, wakeOnNotification: false });
    const started: string[] = [];
    root.on('subagent_start', (e) => started.push(e.taskId));
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('ok');
    // The refusal came while bg1 and bg2 were held: nothing waited for a slot.
    expect(refusedWhileBusy).toMatch(/Refused: 2 more subagent\(s\) would exceed the limit of 3/);
    expect(started).toHaveLength(2);
    await root.stop();
  });

  it('createSupervisor().swarm() rejects with SpawnRefused beyond maxAgents, and starts nothing', async () => {
    const model = router(() => ({ text: 'x' }));
    const supervisor = createSupervisor({ model, maxAgents: 2 });
    const started: string[] = [];
    supervisor.on('subagent_start', (e) => started.push(e.taskId));
    await expect(supervisor.swarm(['a', 'b', 'c'])).rejects.toBeInstanceOf(SpawnRefused);
    expect(started).toEqual([]);
    expect((await supervisor.swarm(['a', 'b'])).map((r) => r.status)).toEqual(['completed', 'completed']);
    await expect(supervisor.swarm([{ prompt: 'a', profile: 'nope' }])).rejects.toThrow(/Unknown profile "nope"/);
    await supervisor.stop();
  });

  it('a nested foreground swarm under a full cap completes: every batch has its own concurrency', async () => {
    let openMax = 0;
    let open = 0;
    const model = router(({ prompt, answers, lastTool }) => {
      if (prompt === 'ROOT' || prompt.startsWith('mid')) {
        if (answers === 0) {
          const tasks = [0, 1].map((i) => ({ prompt: prompt === 'ROOT' ? `mid${i}` : `leaf ${prompt}.${i}` }));
          return { toolCalls: [{ name: 'swarm', args: { tasks } }] };
        }
        return {
          text: parseResults(lastTool)
            .map((r) => r.text)
            .join('+'),
        };
      }
      return { text: prompt.slice(5) };
    });
    // concurrency 2 is filled by the two mids, whose nested batches must still run; 6 open tasks = maxAgents.
    const root = createAgent({ model, subagents: { concurrency: 2, maxAgents: 6 } });
    root.on(
      '*',
      (e) => {
        if (e.type === 'subagent_start') openMax = Math.max(openMax, ++open);
        if (e.type === 'subagent_end') open--;
      },
      { subtree: true },
    );
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('mid0.0+mid0.1+mid1.0+mid1.1');
    expect(openMax).toBe(6);
    await root.stop();
  });
});
