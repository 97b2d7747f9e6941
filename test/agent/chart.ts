/**
 * Helpers for the agent statechart's pure transition tests: events as the workers and the runtime send them, and
 * snapshots at each stable state of a step, reached through XState's `initialTransition` / `transition` alone.
 */
import { expect } from 'vitest';
import { type AnyMachineSnapshot, initialTransition, transition } from 'xstate';
import { type AgentMachineEvent, agentMachine, requestOf, type WorkerRequest } from '../../machines/agent/index.js';
import type { AssistantMessage } from '../../src/index.js';
import type { ToolResultPart } from '../../src/protocol/index.js';

export type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };

export function answer(
  content: AssistantMessage['content'],
  stopReason: AssistantMessage['stopReason'] = 'stop',
): AssistantMessage {
  return { role: 'assistant', content, provider: 'test', model: 'test', stopReason, usage };
}
export const call = (id: string, name = 'echo') => ({ type: 'tool_call' as const, id, name, arguments: {} });
export const result = (id: string, isError = false): ToolResultPart => ({
  type: 'tool_result',
  toolCallId: id,
  toolName: 'echo',
  content: [{ type: 'text', text: id }],
  isError,
});
export const prompt = (inputId = 'in1', expectsOutput = false): AgentMachineEvent => ({
  type: 'PROMPT',
  input: { inputId, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], expectsOutput },
});
export const steer: AgentMachineEvent = {
  type: 'STEER',
  message: { role: 'user', content: [{ type: 'text', text: 'also' }] },
};
export const notify: AgentMachineEvent = {
  type: 'NOTIFY',
  inputId: 'n1',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'done' }], source: 'notification' }],
};

export function start(input: Partial<Parameters<typeof initialTransition<typeof agentMachine>>[1]> = {}) {
  return initialTransition(agentMachine, { agentId: 'a1', ...input });
}

/** Applies events in order; returns the last snapshot and every action type run on the way. */
export function drive(snapshot: Snapshot, ...events: AgentMachineEvent[]): [Snapshot, string[]] {
  const actions: string[] = [];
  let current = snapshot;
  for (const event of events) {
    const [next, executed] = transition(agentMachine, current, event);
    current = next;
    for (const action of executed) actions.push(action.type);
  }
  return [current, actions];
}

/** The context each run of a named action saw. */
export function contextsOf(snapshot: Snapshot, event: AgentMachineEvent, type: string): Snapshot['context'][] {
  const [, executed] = transition(agentMachine, snapshot, event);
  return executed
    .filter((a) => a.type === type)
    .map((a) => (a as unknown as { info: { context: Snapshot['context'] } }).info.context);
}

export const stateOf = (snapshot: AnyMachineSnapshot) => JSON.stringify(snapshot.value);
export const MODEL = stateOf({ value: { running: { turn: { step: 'model' } } } } as AnyMachineSnapshot);
export const tools = (phase: string) => JSON.stringify({ running: { turn: { step: { tools: phase } } } });

export function inModel(input?: Parameters<typeof start>[0], expectsOutput = false): Snapshot {
  return drive(start(input)[0], prompt('in1', expectsOutput))[0];
}
export function inValidating(ids = ['c1', 'c2']): Snapshot {
  return drive(inModel(), {
    type: 'MODEL_DONE',
    turn: 1,
    step: 1,
    message: answer(
      ids.map((id) => call(id)),
      'tool_calls',
    ),
  })[0];
}
export function inAuthorizing(): Snapshot {
  return drive(inValidating(), {
    type: 'VALIDATED',
    batch: 1,
    outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }],
  })[0];
}
export function inExecuting(): Snapshot {
  return drive(inAuthorizing(), {
    type: 'AUTHORIZED',
    batch: 1,
    decisions: [
      { toolCallId: 'c1', decision: 'allow' },
      { toolCallId: 'c2', decision: 'allow' },
    ],
  })[0];
}
export function inAwaiting(): Snapshot {
  return drive(inAuthorizing(), {
    type: 'AUTHORIZED',
    batch: 1,
    decisions: [
      { toolCallId: 'c1', decision: 'ask' },
      { toolCallId: 'c2', decision: 'allow' },
    ],
  })[0];
}

/**
 * Events a state must ignore leave its snapshot exactly as it was: the same object, so not even a copy of the
 * context is made (an assign that changes nothing still clones it, and observers would see a new snapshot).
 */
export function expectIgnored(snapshot: Snapshot, ...events: AgentMachineEvent[]) {
  for (const event of events) {
    const [next, actions] = drive(snapshot, event);
    expect(stateOf(next), event.type).toBe(stateOf(snapshot));
    expect(next.context, event.type).toEqual(snapshot.context);
    expect(actions, event.type).toEqual([]);
    expect(next === snapshot, `${event.type} left the snapshot as it was`).toBe(true);
  }
}

/** The requests among executed actions, in order: each request action's, from the context it ran with. */
export function requestsIn(executed: ReadonlyArray<{ type: string }>): WorkerRequest[] {
  return executed.flatMap((action) => requestOf(action) ?? []);
}

/** The requests a transition makes of the worker, in order. */
export function requestsOf(snapshot: Snapshot, event: AgentMachineEvent): WorkerRequest[] {
  return requestsIn(transition(agentMachine, snapshot, event)[1]);
}
