import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, getNextSnapshot, initialTransition, transition } from 'xstate';
import { type GoalTurnOutcome, goalMachine } from '../../machines/goal/index.js';
import { createAgent, scriptedModel, textOf } from '../../src/index.js';
import { emptyUsage } from '../../src/protocol/index.js';
import { echo } from './helpers.js';

const turn = (over: Partial<GoalTurnOutcome> = {}): GoalTurnOutcome => ({
  stopReason: 'completed',
  met: false,
  tokens: 100,
  usage: emptyUsage(),
  ...over,
});

/** Drives the pure chart: each turn's outcome is delivered as the done event of the invoked turn. */
function runChart(
  outcomes: GoalTurnOutcome[],
  input = { goal: 'g', maxTurns: 3 } as { goal: string; maxTurns: number; maxTokens?: number },
) {
  let [state] = initialTransition(goalMachine, input);
  const visited: string[] = [JSON.stringify(state.value)];
  for (const output of outcomes) {
    if (state.status !== 'active') break;
    [state] = transition(goalMachine, state, { type: 'xstate.done.actor.0.goal.pursuing.turn', output } as never);
    visited.push(JSON.stringify(state.value));
  }
  return { state, visited };
}

describe('the goal statechart (pure transitions)', () => {
  it('takes turns until the model says the goal is met', () => {
    const { state, visited } = runChart([turn(), turn({ met: true, summary: 'done' })]);
    expect(visited).toEqual(['{"pursuing":"turn"}', '{"pursuing":"turn"}', '"achieved"']);
    expect(state.output).toEqual({ status: 'achieved', turns: 2, tokens: 200, summary: 'done' });
  });

  it('ends at the turn budget, and a goal met on the last turn is achieved, not exhausted', () => {
    expect(runChart([turn(), turn(), turn()]).state.output).toMatchObject({ status: 'budget_exhausted', turns: 3 });
    expect(runChart([turn(), turn(), turn({ met: true })]).state.output).toMatchObject({ status: 'achieved' });
  });

  it('ends at the token budget, and on a failed or interrupted turn', () => {
    const tokens = runChart([turn({ tokens: 600 }), turn({ tokens: 600 })], {
      goal: 'g',
      maxTurns: 10,
      maxTokens: 1000,
    });
    expect(tokens.state.output).toMatchObject({ status: 'budget_exhausted', turns: 2, tokens: 1200 });
    // Reaching the token budget exactly spends it, as reaching maxTurns does.
    const exact = runChart([turn({ tokens: 500 }), turn({ tokens: 500 })], {
      goal: 'g',
      maxTurns: 10,
      maxTokens: 1000,
    });
    expect(exact.state.output).toMatchObject({ status: 'budget_exhausted', turns: 2, tokens: 1000 });
    expect(runChart([turn({ stopReason: 'error' })]).state.output).toMatchObject({ status: 'failed', turns: 1 });
    expect(runChart([turn({ stopReason: 'interrupted' })]).state.output).toMatchObject({ status: 'interrupted' });
  });

  it('stops on STOP while a turn runs, and fails when a turn throws', async () => {
    const [initial] = initialTransition(goalMachine, { goal: 'g', maxTurns: 3 });
    expect(getNextSnapshot(goalMachine, initial, { type: 'STOP' }).value).toBe('interrupted');

    const broken = goalMachine.provide({
      actors: {
        takeTurn: fromPromise<GoalTurnOutcome, { goal: string; turn: number }>(() => Promise.reject(new Error('x'))),
      },
    });
    const actor = createActor(broken, { input: { goal: 'g', maxTurns: 3 } }).start();
    await new Promise<void>((resolve) => actor.subscribe({ complete: () => resolve() }));
    expect(actor.getSnapshot().output).toMatchObject({ status: 'failed', turns: 0 });
  });

  it('the chart alone, without the runtime turn, ends failed rather than waiting for ever', async () => {
    const actor = createActor(goalMachine, { input: { goal: 'g', maxTurns: 3 } }).start();
    await new Promise<void>((resolve) => actor.subscribe({ complete: () => resolve() }));
    expect(actor.getSnapshot().output).toEqual({ status: 'failed', turns: 0, tokens: 0 });
  });
});

describe('agent.pursue(goal): goal mode through the real agent', () => {
  it('keeps taking turns until goal_done, then reports the summary, turns and usage', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', args: { text: 'step one' } }], usage: { input: 10, output: 5 } },
      { text: 'Did step one; step two is left.', usage: { input: 10, output: 5 } },
      { toolCalls: [{ name: 'goal_done', args: { summary: 'Both steps done.' } }], usage: { input: 10, output: 5 } },
    ]);
    const agent = createAgent({ model, tools: [echo], goals: true });
    const states: string[] = [];
    agent.on('turn_start', () => states.push(agent.getState().goal?.state ?? 'none'));

    const outcome = await agent.pursue('Do both steps.', { maxTurns: 5 });

    expect(outcome).toMatchObject({ status: 'achieved', turns: 2, summary: 'Both steps done.', tokens: 45 });
    expect(outcome.usage).toMatchObject({ input: 30, output: 15 });
    expect(states).toEqual(['pursuing.turn', 'pursuing.turn']);
    const prompts = agent.messages.filter((m) => m.role === 'user').map((m) => textOf(m));
    expect(prompts[0]).toContain('Your goal: Do both steps.');
    expect(prompts[1]).toContain('turn 2 of at most 5');
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(['echo', 'goal_done']);
    expect(agent.getState().goal).toBeUndefined();
    await agent.stop();
  });

  it('stops at its turn budget when the model never declares the goal met', async () => {
    const model = scriptedModel(Array.from({ length: 3 }, () => ({ text: 'still working' })));
    const agent = createAgent({ model, goals: true });
    const outcome = await agent.pursue('Never ends.', { maxTurns: 3 });
    expect(outcome).toMatchObject({ status: 'budget_exhausted', turns: 3 });
    expect(model.calls).toBe(3);
    await agent.stop();
  });

  it('ends interrupted when its signal aborts, with the history still valid', async () => {
    const model = scriptedModel([{ text: 'slow', latencyMs: 10_000 }]);
    const agent = createAgent({ model, goals: true });
    const controller = new AbortController();
    const pending = agent.pursue('x', { signal: controller.signal });
    setImmediate(() => controller.abort());
    expect((await pending).status).toBe('interrupted');
    await agent.stop();
  });

  it('needs goals: true, refuses a second pursuit at once, and goal_done outside a pursuit is an error result', async () => {
    const plain = createAgent({ model: scriptedModel([]) });
    await expect(plain.pursue('x')).rejects.toThrow(/goals: true/);
    await plain.stop();

    const model = scriptedModel([
      { toolCalls: [{ name: 'goal_done', args: { summary: 'nothing' } }] },
      { text: 'ok' },
      { text: 'first pursuit turn', latencyMs: 50 },
      { toolCalls: [{ name: 'goal_done', args: { summary: 'done' } }] },
    ]);
    const agent = createAgent({ model, goals: true });
    const stray = await agent.prompt('call goal_done now');
    expect(JSON.stringify(stray.messages[2])).toContain('No goal is being pursued');
    const first = agent.pursue('a', { maxTurns: 2 });
    await expect(agent.pursue('b')).rejects.toThrow(/already pursuing/);
    expect((await first).status).toBe('achieved');
    await agent.stop();
  });
});
