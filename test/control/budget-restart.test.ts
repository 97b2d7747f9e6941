/**
 * Budgets across a restart, through real JSONL sessions that are reopened (a crash is the journal as written at that
 * moment, `crashCopy`): accounts are not journaled, they are derived from the answers the journal holds, so a turn
 * resumed after a crash, its subtree and an agent's lifetime account go on from what they had spent.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  type AgentConfig,
  type AgentEvent,
  createAgent,
  createSupervisor,
  defineTool,
  type Model,
  scriptedModel,
  sessions,
} from '../../src/index.js';
import { expectValidHistory, latch, nextEvent, resultText, taskOf, toolResults } from '../agent/helpers.js';
import { byHistory, cleanTempDirs, crashCopy, tempDir } from '../session/helpers.js';
import { router } from '../supervisor/helpers.js';
import { call, counter, say, TEN } from './budget-helpers.js';

cleanTempDirs();

afterEach(() => {
  vi.useRealTimers();
});

function tools() {
  const { tool: work, runs } = counter();
  const hanging = latch();
  // Runs until the process "dies": the crash is taken while it runs.
  const hang = defineTool({
    name: 'hang',
    description: 'runs for ever',
    schema: z.object({}),
    execute: () => {
      hanging.resolve();
      return new Promise<string>(() => {});
    },
  });
  return { runs, list: [work, hang], hanging: hanging.promise };
}

const turnEnds = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'turn_end' ? [e.stopReason] : []));

/** Runs `prompt` on a new session until the `hang` tool starts, and returns the journal a kill -9 then would leave. */
async function crashWhileHanging(
  model: Model,
  config: Omit<AgentConfig, 'model'>,
  prompt: string,
): Promise<{ dir: string; id: string }> {
  const dir = tempDir();
  const session = sessions({ dir }).create({ agentId: 'root' });
  const { list, hanging } = tools();
  const agent = createAgent({ model, tools: list, session, ...config });
  void agent.prompt(prompt);
  // Once it runs, not once it is announced: in a tree at work, a tool's start is stored with its tick's write and
  // the tool runs after it.
  await hanging;
  const crashed = crashCopy(dir);
  session.close();
  await agent.stop();
  return { dir: crashed, id: session.id };
}

describe('budgets across a restart', () => {
  it("a turn resumed after a crash goes on from what it had spent, and stops where the original's budget would", async () => {
    const script = byHistory([call('work'), call('work'), call('hang'), call('work'), call('work'), say('done')]);
    // 30 tokens spent when the process dies, in the hanging step.
    const { dir, id } = await crashWhileHanging(scriptedModel(script), { budget: { tokens: 45 } }, 'go');
    const reopened = sessions({ dir }).open(id);
    const model = scriptedModel(script);
    const { runs, list } = tools();
    const resumed = createAgent({ model, tools: list, session: reopened, budget: { tokens: 45 } });
    const events: AgentEvent[] = [];
    resumed.on('*', (e) => events.push(e));
    await reopened.idle();
    // Replayed: three answers (30 tokens); asked: the fourth (40) and the fifth, which reaches the budget.
    expect(model.requests).toHaveLength(2);
    expect(turnEnds(events)).toEqual(['budget_exhausted']);
    expect(runs).toEqual(['root']); // the fourth answer's call; the fifth's was cut off
    expect(resumed.getState().budget).toMatchObject({ limits: { tokens: 45 }, spent: { tokens: 50 } });
    expectValidHistory(resumed.messages);
    reopened.close();
    await resumed.stop();
  });

  it("keeps a prompt's own budget across the restart", async () => {
    const script = byHistory([call('work'), call('hang'), call('work'), call('work'), call('work'), say('done')]);
    const dir = tempDir();
    const session = sessions({ dir }).create({ agentId: 'root' });
    const first = createAgent({ model: scriptedModel(script), tools: tools().list, session });
    const hanging = nextEvent(first, (e) => e.type === 'tool_execution_start' && e.toolName === 'hang');
    void first.prompt('go', { budget: { tokens: 35 } });
    await hanging;
    const crashed = crashCopy(dir);
    session.close();
    await first.stop();

    const reopened = sessions({ dir: crashed }).open(session.id);
    const model = scriptedModel(script);
    const resumed = createAgent({ model, tools: tools().list, session: reopened });
    const events: AgentEvent[] = [];
    resumed.on('turn_end', (e) => events.push(e));
    await reopened.idle();
    // 20 replayed, 30 and 40 asked: the prompt's 35 holds though the agent has no budget of its own.
    expect(model.requests).toHaveLength(2);
    expect(turnEnds(events)).toEqual(['budget_exhausted']);
    expect(resumed.getState().budget?.limits).toEqual({ tokens: 35 });
    reopened.close();
    await resumed.stop();
  });

  it('a deadline that passed while the process was down ends the resumed turn without a model call', async () => {
    const script = byHistory([call('work'), call('hang'), say('done')]);
    const { dir, id } = await crashWhileHanging(scriptedModel(script), { budget: { timeMs: 60_000 } }, 'go');
    // The process comes back two minutes later.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 120_000 });
    const reopened = sessions({ dir }).open(id);
    const model = scriptedModel(script);
    const resumed = createAgent({ model, tools: tools().list, session: reopened, budget: { timeMs: 60_000 } });
    const ends: AgentEvent[] = [];
    resumed.on('turn_end', (e) => ends.push(e));
    await reopened.idle();
    expect(model.requests).toHaveLength(0);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ stopReason: 'budget_exhausted', error: { code: 'budget_exhausted' } });
    expect(JSON.stringify(ends[0])).toContain('wall-time budget of root');
    // The replay caught up first: every journaled step is in the history, and the hung call has its result.
    expect(resumed.messages).toHaveLength(5);
    expectValidHistory(resumed.messages);
    reopened.close();
    await resumed.stop();
  });

  it("a subagent that settled before the crash still counts against the resumed root's turn", async () => {
    const model = router(({ prompt, answers, lastTool }) => {
      if (prompt === 'CHILD') return answers < 2 ? call('work') : say('child done');
      if (answers === 0) return call('agent', { prompt: 'CHILD' });
      if (answers === 1) return call('hang');
      return lastTool.includes('restart') ? call('work') : say('root done');
    });
    // Spent at the crash: root 20, its child 30 (settled).
    const { dir, id } = await crashWhileHanging(model, { budget: { tokens: 60 }, subagents: {} }, 'ROOT');
    const reopened = sessions({ dir }).open(id);
    const { runs, list } = tools();
    const resumed = createAgent({ model, tools: list, session: reopened, budget: { tokens: 60 }, subagents: {} });
    const events: AgentEvent[] = [];
    resumed.on('*', (e) => events.push(e), { subtree: true });
    await reopened.idle();
    // 50 restored (20 replayed, 30 from the journal), the next answer reaches 60: its call never runs.
    expect(turnEnds(events)).toEqual(['budget_exhausted']);
    expect(runs).toEqual([]);
    expect(resumed.getState().budget?.spent.tokens).toBe(60);
    expectValidHistory(resumed.messages);
    reopened.close();
    await resumed.stop();
  });
});

describe('a subagent replayed after a restart', () => {
  it('opens its turn with what its settled children had spent', async () => {
    const model = router(({ prompt, answers, lastTool }) => {
      if (prompt === 'GRAND') return answers === 0 ? call('work') : say('grand done');
      if (prompt === 'CHILD') {
        if (answers === 0) return call('agent', { prompt: 'GRAND' });
        if (answers === 1) return call('hang');
        return lastTool.includes('restart') ? call('work') : say('child done');
      }
      return answers === 0 ? call('agent', { prompt: 'CHILD' }) : say('root done');
    });
    const subagents = { profiles: { default: { budget: { tokens: 45 } } } };
    // At the crash the child has spent 20 itself and 20 through its settled grandchild.
    const { dir, id } = await crashWhileHanging(model, { subagents }, 'ROOT');
    const reopened = sessions({ dir }).open(id);
    const { runs, list } = tools();
    const resumed = createAgent({ model, tools: list, session: reopened, subagents });
    const events: AgentEvent[] = [];
    resumed.on('*', (e) => events.push(e), { subtree: true });
    await reopened.idle();
    // The child replays its 20, restores the grandchild's 20, and its next answer reaches 45: that call never runs.
    expect(runs).toEqual([]);
    expect(events.filter((e) => e.type === 'budget_exhausted')).toEqual([
      expect.objectContaining({ limit: 'tokens', max: 45, spent: 50 }),
    ]);
    expect(resultText(toolResults(resumed.messages)[0])).toContain('stopped');
    expectValidHistory(resumed.messages);
    reopened.close();
    await resumed.stop();
  });
});

describe('a swarm budget across a restart', () => {
  it("a reopened supervisor's swarm counts what its settled tasks spent against the tasks it starts again", async () => {
    /** a and b: one call, then done (20 tokens each); c: two calls, then done. */
    const model = scriptedModel((request) => {
      const who = taskOf(request);
      const n = request.messages.filter((m) => m.role === 'tool').length;
      if (n < (who === 'c' ? 2 : 1))
        return { toolCalls: [{ id: `${who}_${n}`, name: 'work', args: { who } }], usage: TEN };
      return say(`${who} done`);
    });
    const runs: string[] = [];
    const cStarted = latch();
    const work = (hangOnC: boolean) =>
      defineTool({
        name: 'work',
        description: 'w',
        schema: z.object({ who: z.string() }),
        execute: ({ who }) => {
          runs.push(who);
          if (who !== 'c' || !hangOnC) return `${who} worked`;
          cStarted.resolve();
          return new Promise<string>(() => {});
        },
      });
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const supervisor = createSupervisor({ model, tools: [work(true)], session });
    void supervisor.swarm(['a', 'b', 'c'], { budget: { tokens: 60 } });
    await cStarted.promise;
    await new Promise((resolve) => setImmediate(resolve));
    expect(session.tasks().filter((task) => task.status === 'completed')).toHaveLength(2);
    const crashed = crashCopy(dir); // 50 tokens spent: a 20, b 20, c 10 (its call running)
    session.close();
    await supervisor.stop();

    runs.length = 0;
    const reopened = sessions({ dir: crashed }).open(session.id);
    const again = createSupervisor({ model, tools: [work(false)], session: reopened });
    const events: AgentEvent[] = [];
    again.on('budget_exhausted', (e) => events.push(e));
    await reopened.idle();
    // c replays its first answer (60 - 40 - 10 left), and its second reaches the swarm's 60: that call never runs.
    expect(runs).toEqual([]);
    expect(events).toEqual([expect.objectContaining({ limit: 'tokens', max: 60, spent: 60 })]);
    expect(reopened.tasks().map((task) => [task.prompt, task.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'interrupted'],
    ]);
    reopened.close();
    await again.stop();
  });
});

describe('an agent lifetime budget (totalBudget)', () => {
  it('counts every turn; once spent, a later turn ends before its model call', async () => {
    const { runs, list } = tools();
    const model = scriptedModel([call('work'), say('one'), call('work'), call('work'), say('never')]);
    const agent = createAgent({ id: 'root', model, tools: list, totalBudget: { tokens: 40 } });
    expect((await agent.prompt('first')).stopReason).toBe('completed');
    expect(agent.getState().totalBudget).toMatchObject({ limits: { tokens: 40 }, spent: { tokens: 20 } });
    const second = await agent.prompt('second');
    expect(second.stopReason).toBe('budget_exhausted');
    expect(second.error?.message).toContain('token budget of total root');
    expect(runs).toEqual(['root', 'root']); // one call a turn: the second turn's second call was cut off
    const third = await agent.prompt('third');
    expect(third.stopReason).toBe('budget_exhausted');
    expect(model.requests).toHaveLength(4); // the third turn asked nothing
    expectValidHistory(agent.messages);
    await agent.stop();
  }, 10_000);

  it('holds over subagents and run() conversations, and refuses wall time', async () => {
    const model = router(({ prompt, answers }) => {
      if (prompt === 'CHILD') return answers < 3 ? call('work') : say('child done');
      return answers === 0 && prompt === 'ROOT' ? call('agent', { prompt: 'CHILD' }) : say('ok');
    });
    const { list } = tools();
    const agent = createAgent({ id: 'root', model, tools: list, subagents: {}, totalBudget: { tokens: 45 } });
    // The child's three calls and its answer cost 40, the root's call 10: the root's turn runs out.
    expect((await agent.prompt('ROOT')).stopReason).toBe('budget_exhausted');
    expect(agent.getState().totalBudget?.spent.tokens).toBeGreaterThanOrEqual(45);
    const conversation = await agent.run({ messages: [], input: 'hello' });
    expect(conversation.stopReason).toBe('budget_exhausted');
    expect(() => createAgent({ model, totalBudget: { timeMs: 1000 } })).toThrow(/wall time is budgeted per turn/);
    await agent.stop();
  });

  it('with a session, counts what was spent before the restart', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create({ agentId: 'root' });
    const script = [call('work'), say('one'), call('work'), call('work'), say('two')];
    const first = createAgent({
      model: scriptedModel(script),
      tools: tools().list,
      session,
      totalBudget: { tokens: 40 },
    });
    expect((await first.prompt('first')).stopReason).toBe('completed');
    session.close();
    await first.stop();

    const reopened = sessions({ dir }).open(session.id);
    const model = scriptedModel(script.slice(2));
    const second = createAgent({ model, tools: tools().list, session: reopened, totalBudget: { tokens: 40 } });
    expect(second.getState().totalBudget?.spent.tokens).toBe(20);
    const result = await second.prompt('second');
    expect(result.stopReason).toBe('budget_exhausted');
    expect(model.requests).toHaveLength(2);
    reopened.close();
    await second.stop();
  });
});
