/**
 * Hook waits in the agent statechart, through XState's pure `transition`: the workers say when a step waits on a
 * hook (PREPARING, REVIEWING, GATING), and the chart shows it; replies for another step or batch change nothing.
 */
import { describe, expect, it } from 'vitest';
import { type AnyEventObject, initialTransition, transition } from 'xstate';
import { type AgentMachineEvent, agentMachine } from '../../machines/agent/index.js';
import type { AssistantMessage } from '../../src/index.js';
import type { ToolResultPart } from '../../src/protocol/index.js';
import { requestsIn } from '../agent/chart.js';

type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];
type Action = { type: string; params?: { id?: string; event?: AnyEventObject } };

function step(snapshot: Snapshot, event: AgentMachineEvent) {
  const [next, actions] = transition(agentMachine, snapshot, event);
  return { next, actions: actions as unknown as Action[] };
}

const sent = (actions: Action[], type: string) => requestsIn(actions).filter((request) => request.type === type);
const value = (snapshot: Snapshot) => JSON.stringify(snapshot.value);
const at = (state: string) => `{"running":{"turn":{"step":${state}}}}`;

const answer = (toolCalls: number): AssistantMessage => ({
  role: 'assistant',
  content: Array.from({ length: toolCalls }, (_, i) => ({
    type: 'tool_call' as const,
    id: `c${i + 1}`,
    name: 'write',
    arguments: {},
  })),
  provider: 'test',
  model: 'test',
  stopReason: toolCalls > 0 ? 'tool_calls' : 'stop',
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
});

function inModel(): Snapshot {
  const [idle] = initialTransition(agentMachine, { agentId: 'a1' });
  return step(idle, {
    type: 'PROMPT',
    input: {
      inputId: 'in1',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      expectsOutput: false,
    },
  }).next;
}

/** A step whose two calls were validated and allowed: the tool worker was asked to run them. */
function inExecuting(): Snapshot {
  let snapshot = step(inModel(), { type: 'MODEL_DONE', turn: 1, step: 1, message: answer(2) }).next;
  snapshot = step(snapshot, {
    type: 'VALIDATED',
    batch: 1,
    outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }],
  }).next;
  const authorized = step(snapshot, {
    type: 'AUTHORIZED',
    batch: 1,
    decisions: [
      { toolCallId: 'c1', decision: 'allow' },
      { toolCallId: 'c2', decision: 'allow' },
    ],
  });
  expect(sent(authorized.actions, 'EXECUTE')).toHaveLength(1);
  return authorized.next;
}

const refusal = (id: string): ToolResultPart => ({
  type: 'tool_result',
  toolCallId: id,
  toolName: 'write',
  content: [{ type: 'text', text: 'A hook refused this call' }],
  isError: true,
});

describe('model hooks are states of the step', () => {
  it('PREPARING enters preparing; PREPARED goes back to model without asking the model twice', () => {
    const preparing = step(inModel(), { type: 'PREPARING', turn: 1, step: 1 });
    expect(value(preparing.next)).toBe(at('"preparing"'));
    const model = step(preparing.next, { type: 'PREPARED', turn: 1, step: 1 });
    expect(value(model.next)).toBe(at('"model"'));
    expect(sent(model.actions, 'MODEL_REQUEST')).toHaveLength(0);
  });

  it('REVIEWING enters reviewing, whose MODEL_DONE takes the answer as `model` does', () => {
    const reviewing = step(inModel(), { type: 'REVIEWING', turn: 1, step: 1 });
    expect(value(reviewing.next)).toBe(at('"reviewing"'));
    const tools = step(reviewing.next, { type: 'MODEL_DONE', turn: 1, step: 1, message: answer(1) });
    expect(value(tools.next)).toBe(at('{"tools":"validating"}'));
    const final = step(reviewing.next, { type: 'MODEL_DONE', turn: 1, step: 1, message: answer(0) });
    expect(value(final.next)).toBe('"idle"');
    expect(final.next.context.stopReason).toBe('completed');
  });

  it('a stale wait (another step) changes nothing', () => {
    const snapshot = inModel();
    expect(value(step(snapshot, { type: 'PREPARING', turn: 1, step: 2 }).next)).toBe(at('"model"'));
    expect(value(step(snapshot, { type: 'REVIEWING', turn: 0, step: 1 }).next)).toBe(at('"model"'));
  });

  it('a tripped guardrail ends the turn with its own stop reason; a failed hook fails it', () => {
    const preparing = step(inModel(), { type: 'PREPARING', turn: 1, step: 1 }).next;
    const trip = { name: 'GuardrailTripped', code: 'guardrail_tripped', message: 'no' };
    const tripped = step(preparing, { type: 'MODEL_ERROR', turn: 1, step: 1, error: trip }).next;
    expect(value(tripped)).toBe('"idle"');
    expect(tripped.context.stopReason).toBe('guardrail_tripped');
    expect(tripped.context.error).toEqual(trip);
    const reviewing = step(inModel(), { type: 'REVIEWING', turn: 1, step: 1 }).next;
    const failure = { name: 'HookFailed', code: 'hook_failed', message: 'boom' };
    const failed = step(reviewing, { type: 'MODEL_ERROR', turn: 1, step: 1, error: failure }).next;
    expect(failed.context.stopReason).toBe('error');
    expect(failed.context.error).toEqual(failure);
  });
});

describe('the tool gate is a state of the batch', () => {
  it('GATING enters gating; GATED applies refusals and answers and goes back to executing without a new request', () => {
    const gating = step(inExecuting(), { type: 'GATING', batch: 1 });
    expect(value(gating.next)).toBe(at('{"tools":"gating"}'));
    const gated = step(gating.next, {
      type: 'GATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1', result: refusal('c1') }, { toolCallId: 'c2' }],
    });
    expect(value(gated.next)).toBe(at('{"tools":"executing"}'));
    expect(sent(gated.actions, 'EXECUTE')).toHaveLength(0);
    expect(gated.next.context.calls.map((c) => c.status)).toEqual(['done', 'open']);
    expect(gated.next.context.calls[0]?.result).toEqual(refusal('c1'));
  });

  it('when the gate answers every call, the batch finalizes and the next step starts', () => {
    const gating = step(inExecuting(), { type: 'GATING', batch: 1 }).next;
    const gated = step(gating, {
      type: 'GATED',
      batch: 1,
      outcomes: [
        { toolCallId: 'c1', result: refusal('c1') },
        { toolCallId: 'c2', result: refusal('c2') },
      ],
    });
    expect(value(gated.next)).toBe(at('"model"'));
    expect(gated.next.context.step).toBe(2);
    expect(sent(gated.actions, 'MODEL_REQUEST')).toHaveLength(1);
  });

  it('a GATED for another batch is ignored', () => {
    const gating = step(inExecuting(), { type: 'GATING', batch: 1 }).next;
    expect(value(step(gating, { type: 'GATED', batch: 0, outcomes: [] }).next)).toBe(at('{"tools":"gating"}'));
  });
});
