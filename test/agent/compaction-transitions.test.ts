/**
 * The compaction state of the agent statechart, through XState's pure `transition`: when the model worker says
 * the request is too full, or the provider says it overflowed, the step compacts once and asks the model again.
 */
import { describe, expect, it } from 'vitest';
import { type AnyEventObject, initialTransition, transition } from 'xstate';
import { type AgentMachineEvent, agentMachine } from '../../machines/agent/index.js';
import { ModelError } from '../../src/index.js';
import { requestsIn } from './chart.js';

type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];

const overflow = { name: 'ModelError', code: 'context_overflow', message: 'prompt is too long' };
const full: AgentMachineEvent = { type: 'CONTEXT_FULL', turn: 1, step: 1, tokens: 3_500, window: 4_000 };
const done = { type: 'xstate.done.actor.compactor', output: undefined } as unknown as AgentMachineEvent;
const failed = (error: unknown) => ({ type: 'xstate.error.actor.compactor', error }) as unknown as AgentMachineEvent;

function inModel(): Snapshot {
  const [idle] = initialTransition(agentMachine, { agentId: 'a1' });
  const [running] = transition(agentMachine, idle, {
    type: 'PROMPT',
    input: {
      inputId: 'in1',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      expectsOutput: false,
    },
  });
  return running;
}

function step(snapshot: Snapshot, event: AgentMachineEvent) {
  const [next, actions] = transition(agentMachine, snapshot, event);
  return { next, actions: actions as unknown as { type: string; params?: { id?: string; event?: AnyEventObject } }[] };
}

const modelRequests = (actions: ReturnType<typeof step>['actions']) =>
  requestsIn(actions).filter((request) => request.type === 'MODEL_REQUEST');

const value = (snapshot: Snapshot) => JSON.stringify(snapshot.value);

describe('compaction is a state of the step', () => {
  it('the first request of a step may compact', () => {
    const [idle] = initialTransition(agentMachine, { agentId: 'a1' });
    const { actions } = step(idle, {
      type: 'PROMPT',
      input: { inputId: 'in1', messages: [], expectsOutput: false },
    });
    expect(modelRequests(actions)).toEqual([expect.objectContaining({ mayCompact: true })]);
  });

  it('CONTEXT_FULL enters compacting and starts the compactor; its end asks the model again, no longer allowed to compact', () => {
    const { next: compacting, actions } = step(inModel(), full);
    expect(value(compacting)).toBe('{"running":{"turn":{"step":"compacting"}}}');
    expect(compacting.context.compactedAt).toEqual({ turn: 1, step: 1 });
    expect(actions.filter((a) => a.type === 'xstate.spawnChild').map((a) => a.params?.id)).toEqual(['compactor']);
    const after = step(compacting, done);
    expect(value(after.next)).toBe('{"running":{"turn":{"step":"model"}}}');
    expect(after.next.context.step).toBe(1);
    expect(modelRequests(after.actions)).toEqual([expect.objectContaining({ turn: 1, step: 1, mayCompact: false })]);
  });

  it('a context_overflow from the provider compacts and retries once; a second one in the same step fails the turn', () => {
    const { next: compacting } = step(inModel(), { type: 'MODEL_ERROR', turn: 1, step: 1, error: overflow });
    expect(value(compacting)).toBe('{"running":{"turn":{"step":"compacting"}}}');
    const { next: retried } = step(compacting, done);
    const { next: end } = step(retried, { type: 'MODEL_ERROR', turn: 1, step: 1, error: overflow });
    expect(value(end)).toBe('"idle"');
    expect(end.context.error).toMatchObject({ code: 'context_overflow' });
    expect(end.context.stopReason).toBe('error');
  });

  it('a compactor failure fails the turn, keeping a model error as it was classified', () => {
    const { next: compacting } = step(inModel(), full);
    const modelError = new ModelError({ code: 'rate_limit', message: 'slow down', status: 429 });
    const { next } = step(compacting, failed(modelError));
    expect(next.context.error).toMatchObject({ code: 'rate_limit', status: 429 });
    const { next: other } = step(compacting, failed(new Error('disk full')));
    const failure = { name: 'CompactionError', code: 'compaction_failed', message: 'Compaction failed: disk full' };
    expect(other.context.error).toEqual(failure);
    // Whatever the compactor threw, the error says it as text.
    expect(step(compacting, failed('disk full')).next.context.error).toEqual(failure);
  });

  it('ignores CONTEXT_FULL of another step, and replies while compacting', () => {
    const { next: same } = step(inModel(), { ...full, step: 7 } as AgentMachineEvent);
    expect(value(same)).toBe('{"running":{"turn":{"step":"model"}}}');
    const { next: compacting } = step(inModel(), full);
    for (const stray of [full, { type: 'MODEL_ERROR', turn: 1, step: 1, error: overflow } as AgentMachineEvent]) {
      expect(value(step(compacting, stray).next)).toBe('{"running":{"turn":{"step":"compacting"}}}');
    }
  });

  it('INTERRUPT while compacting stops the compactor and ends the turn interrupted', () => {
    const { next: compacting } = step(inModel(), full);
    const { next, actions } = step(compacting, { type: 'INTERRUPT' });
    expect(value(next)).toBe('"idle"');
    expect(next.context.stopReason).toBe('interrupted');
    expect(actions.some((a) => a.type === 'xstate.stopChild' && a.params?.id === 'compactor')).toBe(true);
  });
});
