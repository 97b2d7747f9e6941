/**
 * Budgets through the real agent on the scripted model: an account per turn, charged by the agent and everything it
 * starts; the tightest limit of the chain decides; running out ends every turn below with `budget_exhausted`, and
 * every tool call still gets its result.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  BudgetExhausted,
  createAgent,
  createSupervisor,
  defineTool,
  scriptedModel,
} from '../../src/index.js';
import { expectValidHistory, resultText, toolResults } from '../agent/helpers.js';
import { router, waitFor } from '../supervisor/helpers.js';
import { call, counter, say } from './budget-helpers.js';

/** A tool that runs until its call is aborted, and says when it started and how it ended. */
function waiter() {
  const started: string[] = [];
  const aborted: string[] = [];
  const tool = defineTool({
    name: 'wait',
    description: 'waits',
    schema: z.object({}),
    execute: (_args, ctx) =>
      new Promise<string>((resolve) => {
        started.push(ctx.agentId);
        ctx.signal.addEventListener('abort', () => {
          aborted.push(ctx.agentId);
          resolve('stopped');
        });
      }),
  });
  return { tool, started, aborted };
}

const stops = (events: AgentEvent[]) =>
  events.flatMap((e) => (e.type === 'turn_end' ? [{ agent: e.agentId, stop: e.stopReason }] : []));

afterEach(() => {
  vi.useRealTimers();
});

describe('an agent budget', () => {
  it('ends the turn at the answer that reaches it; the batch it asked for never runs, yet every call has a result', async () => {
    const { tool, runs } = counter();
    const agent = createAgent({
      id: 'root',
      model: scriptedModel([call('work'), call('work'), call('work'), say('done')]),
      tools: [tool],
      budget: { tokens: 20 },
    });
    const events: AgentEvent[] = [];
    agent.on('*', (e) => events.push(e));
    const result = await agent.prompt('go');
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error).toBeInstanceOf(BudgetExhausted);
    expect(result.error?.message).toContain('token budget of root (20 tokens)');
    expect(runs).toEqual(['root']); // the second answer's call was cut off by the budget
    expectValidHistory(agent.messages);
    expect(resultText(toolResults(agent.messages)[1])).toContain('budget');
    const exhausted = events.filter((e) => e.type === 'budget_exhausted');
    expect(exhausted).toEqual([
      expect.objectContaining({ agentId: 'root', limit: 'tokens', account: 'root', max: 20, spent: 20 }),
    ]);
    const state = agent.getState();
    expect(state.budget?.spent.tokens).toBe(20);
    expect(state.budget?.left.tokens).toBe(0);
    expect(state.budget?.exhausted?.limit).toBe('tokens');
    await agent.stop();
  });

  it('gives every turn a fresh account; a prompt budget narrows the agent one for its turn', async () => {
    const { tool } = counter();
    const agent = createAgent({
      model: scriptedModel([call('work'), say('one'), call('work'), call('work')]),
      tools: [tool],
      budget: { tokens: 100 },
    });
    expect((await agent.prompt('first')).stopReason).toBe('completed');
    expect(agent.getState().budget?.left.tokens).toBe(80);
    const second = await agent.prompt('second', { budget: { tokens: 15 } });
    expect(second.stopReason).toBe('budget_exhausted');
    expect(agent.getState().budget).toMatchObject({ limits: { tokens: 15 }, spent: { tokens: 20 } });
    await agent.stop();
  });

  it('counts cost from the model price table', async () => {
    const { tool } = counter();
    // gpt-4.1: $2 per million input tokens (src/context's table), so $0.02 an answer.
    const pricey = { input: 10_000, output: 0 };
    const agent = createAgent({
      model: scriptedModel([{ ...call('work'), usage: pricey }, { ...call('work'), usage: pricey }, say('done')], {
        id: 'gpt-4.1',
      }),
      tools: [tool],
      budget: { costUsd: 0.03 },
    });
    const result = await agent.prompt('go');
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error?.message).toContain('cost budget');
    expect(agent.getState().budget?.spent.costUsd).toBeCloseTo(0.04, 9);
    await agent.stop();
  });

  it('refuses a budget it cannot read', () => {
    const model = scriptedModel([]);
    expect(() => createAgent({ model, budget: { tokens: -1 } })).toThrow(RangeError);
    expect(() => createAgent({ model, budget: { token: 5 } as never })).toThrow(/unknown budget "token"/);
  });
});

describe('budgets down the tree', () => {
  it("a grandchild's spending stops the root, the child and the grandchild", async () => {
    const { tool, runs } = counter();
    const model = router(({ prompt, last, lastTool }) => {
      if (last?.role === 'tool' && prompt !== 'GRAND') return say(lastTool);
      if (prompt === 'ROOT') return call('agent', { prompt: 'CHILD' });
      if (prompt === 'CHILD') return call('agent', { prompt: 'GRAND' });
      return call('work');
    });
    const root = createAgent({ id: 'root', model, tools: [tool], subagents: {}, budget: { tokens: 100 } });
    const events: AgentEvent[] = [];
    root.on('*', (e) => events.push(e), { subtree: true });
    const result = await root.prompt('ROOT');
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error?.message).toContain('budget of root');
    // root 10 + child 10 + eight grandchild answers: the eighth reaches 100 and its call never runs.
    expect(runs).toHaveLength(7);
    const exhausted = events.filter((e) => e.type === 'budget_exhausted');
    const grandchild = runs[0] as string;
    expect(new Set(runs)).toEqual(new Set([grandchild]));
    const stopped = new Set(exhausted.map((e) => e.agentId));
    expect(stopped.size).toBe(3);
    expect(stopped).toContain('root');
    expect(stopped).toContain(grandchild);
    for (const event of exhausted) expect(event).toMatchObject({ account: 'root', limit: 'tokens' });
    expect(stops(events).filter((s) => s.stop === 'budget_exhausted')).toHaveLength(3);
    expect(root.subtreeUsage.input + root.subtreeUsage.output).toBe(100);
    expectValidHistory(root.messages);
    await root.stop();
  });

  it('a child has the smaller of its own budget and what its parent has left; its own limit stops only it', async () => {
    let seenLeft: number | undefined;
    let seenLimit: number | undefined;
    const probe = defineTool({
      name: 'probe',
      description: 'looks at its own budget',
      schema: z.object({}),
      execute: (_args, ctx) => {
        const budget = root.subagent(ctx.agentId)?.getState().budget;
        // The rich child probes first.
        seenLeft ??= budget?.left.tokens;
        seenLimit ??= budget?.limits.tokens;
        return 'looked';
      },
    });
    const model = router(({ prompt, last, lastTool, answers }) => {
      if (prompt === 'ROOT') {
        if (answers === 0) return { ...call('agent', { prompt: 'RICH', profile: 'rich' }), usage: { input: 20 } };
        if (answers === 1) return call('agent', { prompt: 'POOR', profile: 'poor' });
        return say(`root saw: ${lastTool}`);
      }
      if (prompt === 'RICH') return last?.role === 'tool' ? say('rich done') : call('probe');
      return call('probe'); // POOR never stops on its own
    });
    const root = createAgent({
      id: 'root',
      model,
      tools: [probe],
      budget: { tokens: 100 },
      subagents: {
        profiles: { rich: { budget: { tokens: 1000 } }, poor: { budget: { tokens: 25 } } },
      },
    });
    const events: AgentEvent[] = [];
    root.on('*', (e) => events.push(e), { subtree: true });
    const result = await root.prompt('ROOT');
    // The rich child's own 1000 is capped by the root's 100 − 20 (root) − 10 (its own first answer).
    expect(seenLimit).toBe(1000);
    expect(seenLeft).toBe(70);
    // The poor child ran out of its own 25 tokens: it stopped, the root went on and finished.
    expect(result.stopReason).toBe('completed');
    const poor = events.find((e) => e.type === 'budget_exhausted');
    expect(poor).toMatchObject({ limit: 'tokens', max: 25, spent: 30 });
    expect(poor?.agentId).not.toBe('root');
    expect(result.text).toContain('stopped: The token budget of');
    await root.stop();
  });

  it('a swarm budget is shared by all its tasks', async () => {
    const { tool, runs } = counter();
    const supervisor = createSupervisor({ model: scriptedModel(() => call('work')), tools: [tool] });
    const results = await supervisor.swarm(['a', 'b', 'c'], { budget: { tokens: 60 } });
    expect(results.map((r) => r.status)).toEqual(['interrupted', 'interrupted', 'interrupted']);
    for (const r of results) expect(r.text).toMatch(/token budget of batch \S+ \(60 tokens\)/);
    // Six answers reach 60; the calls of the answers that reached it never ran.
    expect(runs.length).toBeLessThan(6);
    await supervisor.stop();
  });

  it('a background child is cancelled when the budget of the turn that started it runs out', async () => {
    const { tool: wait, started, aborted } = waiter();
    const { tool: work } = counter();
    const model = router(({ prompt, last, lastUser }) => {
      if (prompt === 'BG') return last?.role === 'tool' ? say('bg done') : call('wait');
      if (lastUser.includes('<notification')) return say('noted');
      if (last?.role === 'user') return call('agent', { prompt: 'BG', background: true });
      return call('work');
    });
    const root = createAgent({ id: 'root', model, tools: [wait, work], subagents: {}, budget: { tokens: 60 } });
    const events: AgentEvent[] = [];
    root.on('*', (e) => events.push(e), { subtree: true });
    const ended = waitFor(
      (type, fn) => root.on(type, fn, { subtree: true }),
      (e) => e.type === 'subagent_end',
    );
    const result = await root.prompt('ROOT');
    expect(result.stopReason).toBe('budget_exhausted');
    const end = await ended;
    expect(end).toMatchObject({ type: 'subagent_end', status: 'interrupted' });
    expect(started).toHaveLength(1);
    expect(aborted).toEqual(started);
    const child = started[0];
    expect(stops(events)).toContainEqual({ agent: child, stop: 'budget_exhausted' });
    expectValidHistory(root.subagent(child as string)?.messages ?? []);
    await root.stop();
  });
});

describe('a wall-time budget', () => {
  it('ends the turn when the time is up, aborting the running tool (fake timers)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { tool, started, aborted } = waiter();
    const agent = createAgent({
      id: 'root',
      model: scriptedModel([call('wait'), say('never')]),
      tools: [tool],
      budget: { timeMs: 60_000 },
    });
    const toolStarted = waitFor(agent.on.bind(agent), (e) => e.type === 'tool_execution_start');
    const turn = agent.prompt('go');
    await toolStarted;
    await vi.advanceTimersByTimeAsync(59_999);
    expect(aborted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    const result = await turn;
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error?.message).toContain('wall-time budget of root (60000 ms)');
    expect(started).toEqual(['root']);
    expect(aborted).toEqual(['root']);
    expectValidHistory(agent.messages);
    await agent.stop();
  });
});
