/**
 * The budget stop in the agent statechart, through XState's pure `transition`: BUDGET_EXHAUSTED for the running turn
 * ends it from any state of the step with `budget_exhausted`, closing every open call with a result; one for a turn
 * already over changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { type AgentMachineEvent, agentMachine } from '../../machines/agent/index.js';
import type { AssistantMessage } from '../../src/index.js';
import type { SerializedError } from '../../src/protocol/index.js';

type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];

function step(snapshot: Snapshot, event: AgentMachineEvent) {
  const [next, actions] = transition(agentMachine, snapshot, event);
  return { next, actions: actions.map((action) => action.type) };
}

const prompt = (inputId: string): AgentMachineEvent => ({
  type: 'PROMPT',
  input: { inputId, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], expectsOutput: false },
});

const answer: AssistantMessage = {
  role: 'assistant',
  content: [
    { type: 'tool_call', id: 'c1', name: 'write', arguments: {} },
    { type: 'tool_call', id: 'c2', name: 'write', arguments: {} },
  ],
  provider: 'test',
  model: 'test',
  stopReason: 'tool_calls',
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
};

const spent: SerializedError = {
  name: 'BudgetExhausted',
  code: 'budget_exhausted',
  message: 'The token budget of root (10 tokens) is spent: 12 tokens used',
};

function inModel(): Snapshot {
  const [idle] = initialTransition(agentMachine, { agentId: 'root' });
  return step(idle, prompt('in1')).next;
}

/** Two calls running: the first has its result, the second is still open. */
function inExecuting(): Snapshot {
  let snapshot = step(inModel(), { type: 'MODEL_DONE', turn: 1, step: 1, message: answer }).next;
  snapshot = step(snapshot, {
    type: 'VALIDATED',
    batch: 1,
    outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }],
  }).next;
  snapshot = step(snapshot, {
    type: 'AUTHORIZED',
    batch: 1,
    decisions: [
      { toolCallId: 'c1', decision: 'allow' },
      { toolCallId: 'c2', decision: 'allow' },
    ],
  }).next;
  const result = {
    type: 'tool_result' as const,
    toolCallId: 'c1',
    toolName: 'write',
    content: [{ type: 'text' as const, text: 'ok' }],
    isError: false,
  };
  snapshot = step(snapshot, {
    type: 'TOOL_RESULTS',
    batch: 1,
    results: [{ toolCallId: 'c1', result, terminate: false }],
  }).next;
  expect(snapshot.matches({ running: { turn: { step: { tools: 'executing' } } } })).toBe(true);
  return snapshot;
}

describe('BUDGET_EXHAUSTED in the agent chart', () => {
  it('ends a turn waiting on the model with budget_exhausted and the error, aborting what is in flight', () => {
    const { next, actions } = step(inModel(), { type: 'BUDGET_EXHAUSTED', turn: 1, error: spent });
    expect(next.value).toBe('idle');
    expect(next.context.stopReason).toBe('budget_exhausted');
    expect(next.context.error).toEqual(spent);
    expect(actions).toEqual(
      expect.arrayContaining(['abortInFlight', 'recordToolResults', 'announceBudgetExhausted', 'endTurn', 'endRun']),
    );
    expect(actions.indexOf('announceBudgetExhausted')).toBeLessThan(actions.indexOf('endTurn'));
  });

  it('closes the open calls of a running batch with a result and keeps the finished ones', () => {
    const { next } = step(inExecuting(), { type: 'BUDGET_EXHAUSTED', turn: 1, error: spent });
    expect(next.value).toBe('idle');
    const [first, second] = next.context.calls;
    expect(first?.result?.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(second?.status).toBe('done');
    expect(second?.result?.isError).toBe(true);
    expect(second?.result?.content[0]).toMatchObject({ text: expect.stringContaining('budget') });
  });

  it('ignores a budget message about a turn that is over', () => {
    const before = inExecuting();
    const { next, actions } = step(before, { type: 'BUDGET_EXHAUSTED', turn: 0, error: spent });
    expect(next.value).toEqual(before.value);
    expect(actions).not.toContain('endTurn');
  });

  it('is ignored by an idle agent, and a queued prompt runs after a budget stop', () => {
    const [idle] = initialTransition(agentMachine, { agentId: 'root' });
    expect(step(idle, { type: 'BUDGET_EXHAUSTED', turn: 0, error: spent }).next.value).toBe('idle');
    const queued = step(inModel(), prompt('in2')).next;
    const { next } = step(queued, { type: 'BUDGET_EXHAUSTED', turn: 1, error: spent });
    expect(next.context.turn).toBe(2);
    expect(next.context.stopReason).toBeUndefined();
    expect(next.matches({ running: { turn: 'step' } })).toBe(true);
  });
});
