/**
 * `troupe/testing`: what a user needs to test agent flows without a network, down to single transitions.
 *
 * - `scriptedModel` plays model answers from a script;
 * - `createRunRecorder()` records a run (pass `recorder.inspect` to `createAgent`, then `recorder.attach(agent)`)
 *   and answers which states were visited, which events were emitted and which tool calls were made, with
 *   assertion helpers that throw readable errors in any test framework;
 * - `startMachine` / `transitionMachine` / `runEvents` wrap XState's pure `initialTransition` / `transition`, so a
 *   customised machine (`agentMachine.provide(...)`) can be tested without running any actor.
 *
 * Over 400 lines: one entry point, `troupe/testing`, whose exports are small and read in the order a test uses them.
 *
 * @module troupe/testing
 */
import {
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
  type InputFrom,
  type InspectionEvent,
  initialTransition,
  type Observer,
  type SnapshotFrom,
  transition,
} from 'xstate';
import { type AgentMachineEvent, requestOf, type TurnInput } from '../../machines/agent/index.js';
import type {
  AgentEvent,
  AgentEventOf,
  AgentEventType,
  AssistantMessage,
  JsonObject,
  ToolCallPart,
  ToolResultPart,
  Usage,
} from '../protocol/index.js';

export {
  type Script,
  type ScriptedAnswer,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedToolCall,
  type ScriptStep,
  scriptedModel,
} from '../providers/index.js';

// --- recording a run -------------------------------------------------------------------------------------------

/** The states one actor went through, as dotted paths of its active leaves, transient states included. */
export function stateStrings(value: unknown, prefix = ''): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [prefix ? `${prefix}.${value}` : value];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, sub]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    const inner = stateStrings(sub, path);
    return inner.length ? inner : [path];
  });
}

/**
 * A tool call a `RunRecorder` saw: which agent made it, with what arguments, whether a person was asked, and its
 * result.
 */
export interface RecordedToolCall {
  agentId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  /** Whether a person was asked first. */
  askedApproval: boolean;
  result?: ToolResultPart;
  durationMs?: number;
}

/**
 * A record of a run, for tests: the events, the states each agent's machine visited and the tool calls, with queries to
 * assert on.
 */
export interface RunRecorder {
  /** Pass to `createAgent({ inspect })` (or `createSupervisor`) to record the states every agent visits. */
  readonly inspect: Observer<InspectionEvent>;
  /** Records every event of this agent and its subagents (or supervisor: the whole tree). Returns the unsubscribe function. */
  attach(source: {
    on(type: '*', listener: (event: AgentEvent) => void, options?: { subtree?: boolean }): () => void;
  }): () => void;
  /** Every event, in `seq` order. */
  readonly events: readonly AgentEvent[];
  /** The events of one type (of one agent, if given). */
  eventsOf<T extends AgentEventType>(type: T, agentId?: string): AgentEventOf<T>[];
  /** Event types in order (of one agent, if given); message deltas are left out unless asked for. */
  eventTypes(agentId?: string, options?: { deltas?: boolean }): AgentEventType[];
  /** The states an agent's machine visited, in order, transient states included; consecutive repeats merged. */
  statesVisited(agentId?: string): string[];
  /** The tool calls that ran, in the order they started. */
  toolCalls(agentId?: string): RecordedToolCall[];
}

interface Inspected {
  actorRef: { id: string };
  snapshot?: { value?: unknown; context?: unknown };
}

/**
 * Records a run for a test: pass `recorder.inspect` to `createAgent` (or `createSupervisor`), then
 * `recorder.attach(agent)`, and assert on what it saw.
 *
 * @example
 * ```ts
 * const recorder = createRunRecorder();
 * const agent = createAgent({ model: scriptedModel([{ text: 'Hi.' }]), inspect: recorder.inspect });
 * recorder.attach(agent);
 * await agent.prompt('Hello');
 * assertEmitted(recorder, ['turn_start', 'message_end', 'turn_end']);
 * ```
 */
export function createRunRecorder(): RunRecorder {
  const events: AgentEvent[] = [];
  const states = new Map<string, string[]>();
  let firstAgent: string | undefined;

  const visit = (event: Inspected) => {
    const context = event.snapshot?.context as { agentId?: unknown } | undefined;
    if (!context || typeof context.agentId !== 'string' || event.actorRef.id !== context.agentId) return;
    const agentId = context.agentId;
    firstAgent ??= agentId;
    let list = states.get(agentId);
    if (!list) {
      list = [];
      states.set(agentId, list);
    }
    for (const state of stateStrings(event.snapshot?.value)) if (list[list.length - 1] !== state) list.push(state);
  };

  const inspect: Observer<InspectionEvent> = {
    next(event) {
      // Microsteps carry the transient states too (`answered`, `finalizing`, …); the initial state comes as a snapshot.
      if (event.type === '@xstate.microstep' || event.type === '@xstate.snapshot') visit(event as unknown as Inspected);
    },
  };

  const byAgent = (agentId?: string) => (agentId === undefined ? events : events.filter((e) => e.agentId === agentId));

  return {
    inspect,
    attach: (source) => source.on('*', (event) => events.push(event), { subtree: true }),
    events,
    eventsOf: <T extends AgentEventType>(type: T, agentId?: string) =>
      byAgent(agentId).filter((e): e is AgentEventOf<T> => e.type === type),
    eventTypes: (agentId, options) =>
      byAgent(agentId)
        .filter((e) => options?.deltas || e.type !== 'message_update')
        .map((e) => e.type),
    statesVisited: (agentId) => [...(states.get(agentId ?? firstAgent ?? '') ?? [])],
    toolCalls: (agentId) => {
      const calls = new Map<string, RecordedToolCall>();
      const asked = new Set<string>();
      for (const event of byAgent(agentId)) {
        if (event.type === 'approval_requested') asked.add(`${event.agentId}/${event.toolCallId}`);
        if (event.type === 'tool_execution_start') {
          calls.set(`${event.agentId}/${event.toolCallId}`, {
            agentId: event.agentId,
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            args: event.args,
            askedApproval: asked.has(`${event.agentId}/${event.toolCallId}`),
          });
        }
        if (event.type === 'tool_execution_end') {
          const call = calls.get(`${event.agentId}/${event.toolCallId}`);
          if (call) {
            call.result = event.result;
            call.durationMs = event.durationMs;
          }
        }
      }
      return [...calls.values()];
    },
  };
}

// --- assertions --------------------------------------------------------------------------------------------------

/** Thrown by the assertion helpers; any test framework reports it as a failure. */
export class RunAssertionError extends Error {
  override name = 'RunAssertionError';
}

function isSubsequence(
  expected: readonly string[],
  actual: readonly string[],
  match: (e: string, a: string) => boolean,
) {
  let i = 0;
  for (const item of actual) if (i < expected.length && match(expected[i] as string, item)) i++;
  return i;
}

/**
 * The agent visited these states in this order (others may come between). A state matches a visited one when it
 * is equal to it or a prefix of it: `'running.turn.step.tools'` matches every tool phase.
 */
export function assertVisited(recorder: RunRecorder, expected: readonly string[], agentId?: string): void {
  const visited = recorder.statesVisited(agentId);
  const found = isSubsequence(expected, visited, (e, a) => a === e || a.startsWith(`${e}.`));
  if (found < expected.length) {
    throw new RunAssertionError(
      `expected the states ${JSON.stringify(expected)} in order; ${JSON.stringify(expected[found])} was not reached after ` +
        `${JSON.stringify(expected.slice(0, found))}.\nvisited: ${visited.join(' → ')}`,
    );
  }
}

/** The agent never entered this state (or any state below it). */
export function assertNotVisited(recorder: RunRecorder, state: string, agentId?: string): void {
  const visited = recorder.statesVisited(agentId);
  if (visited.some((a) => a === state || a.startsWith(`${state}.`))) {
    throw new RunAssertionError(`expected ${state} never to be visited.\nvisited: ${visited.join(' → ')}`);
  }
}

/** These event types were emitted in this order (others may come between). */
export function assertEmitted(recorder: RunRecorder, expected: readonly AgentEventType[], agentId?: string): void {
  const types = recorder.eventTypes(agentId);
  const found = isSubsequence(expected, types, (e, a) => e === a);
  if (found < expected.length) {
    throw new RunAssertionError(
      `expected the events ${JSON.stringify(expected)} in order; ${JSON.stringify(expected[found])} did not follow.\n` +
        `emitted: ${types.join(', ')}`,
    );
  }
}

/** A tool call `assertToolCalls` expects: its name, and optionally its arguments and whether it failed. */
export interface ExpectedToolCall {
  name: string;
  /** Compared as JSON, when given. */
  args?: unknown;
  /** `true`: the result was an error; `false`: it was not. */
  isError?: boolean;
}

/** Exactly these tool calls ran, in this order. */
export function assertToolCalls(recorder: RunRecorder, expected: readonly ExpectedToolCall[], agentId?: string): void {
  const calls = recorder.toolCalls(agentId);
  const describe = (list: readonly { name?: string; toolName?: string; args?: unknown }[]) =>
    list.map((c) => `${c.name ?? c.toolName}(${JSON.stringify(c.args ?? {})})`).join(', ') || '(none)';
  const ok =
    calls.length === expected.length &&
    expected.every((want, i) => {
      const got = calls[i] as RecordedToolCall;
      if (got.toolName !== want.name) return false;
      if (want.args !== undefined && JSON.stringify(got.args) !== JSON.stringify(want.args)) return false;
      if (want.isError !== undefined && (got.result?.isError ?? false) !== want.isError) return false;
      return true;
    });
  if (!ok) throw new RunAssertionError(`expected tool calls ${describe(expected)}\nbut ran ${describe(calls)}`);
}

// --- pure transitions ------------------------------------------------------------------------------------------

/**
 * An action the machine would run, by name, with its resolved parameters. A `sendTo` shows as `xstate.sendTo`
 * with `sent` saying to whom and what; an agent's request to its worker (`requestModel`, `requestExecution`...)
 * with `asked`, the request; assignments are not listed (they are already in the next context).
 */
export interface PlannedAction {
  type: string;
  params?: unknown;
  sent?: { to: string; event: AnyEventObject };
  /** What a request action of the agent's chart asks its worker, e.g. `{ type: 'EXECUTE', batch, calls }`. */
  asked?: AnyEventObject;
}

/** What one pure step of a machine gives: the next snapshot, the actions it would run, and the active states. */
export interface TransitionResult<M extends AnyStateMachine> {
  snapshot: SnapshotFrom<M>;
  /** The actions this step would execute, in order (assignments already applied to `snapshot.context`). */
  actions: PlannedAction[];
  /** The active leaf states, dotted. */
  states: string[];
}

function planned(actions: readonly { type: string; params?: unknown }[]): PlannedAction[] {
  return actions.map((a) => {
    const action: PlannedAction = a.params === undefined ? { type: a.type } : { type: a.type, params: a.params };
    const params = a.params as { targetId?: unknown; event?: unknown } | undefined;
    if (a.type === 'xstate.sendTo' && typeof params?.targetId === 'string' && typeof params.event === 'object') {
      action.sent = { to: params.targetId, event: params.event as AnyEventObject };
    }
    const asked = requestOf(a);
    if (asked) action.asked = asked;
    return action;
  });
}

/** The machine's first snapshot, computed without starting an actor. */
export function startMachine<M extends AnyStateMachine>(machine: M, input?: InputFrom<M>): TransitionResult<M> {
  const [snapshot, actions] = (
    initialTransition as (m: M, i?: InputFrom<M>) => ReturnType<typeof initialTransition<M>>
  )(machine, input);
  return { snapshot, actions: planned(actions), states: stateStrings((snapshot as AnyMachineSnapshot).value) };
}

/** One event applied to a snapshot, purely: nothing runs, every effect is returned as a named action. */
export function transitionMachine<M extends AnyStateMachine>(
  machine: M,
  snapshot: SnapshotFrom<M>,
  event: EventFromLogic<M>,
): TransitionResult<M> {
  const [next, actions] = transition(machine, snapshot, event);
  return { snapshot: next, actions: planned(actions), states: stateStrings((next as AnyMachineSnapshot).value) };
}

/** What `runEvents` gives: the last step's result, and each event's states and actions along the way. */
export interface EventsRun<M extends AnyStateMachine> extends TransitionResult<M> {
  /** One entry per event (and the start): the states after it and the actions it ran. */
  steps: Array<{ event: AnyEventObject | { type: 'xstate.init' }; states: string[]; actions: PlannedAction[] }>;
}

/** Starts the machine and applies the events in order, purely. */
export function runEvents<M extends AnyStateMachine>(
  machine: M,
  input: InputFrom<M> | undefined,
  events: readonly EventFromLogic<M>[],
): EventsRun<M> {
  let current = startMachine(machine, input);
  const steps: EventsRun<M>['steps'] = [
    { event: { type: 'xstate.init' }, states: current.states, actions: current.actions },
  ];
  for (const event of events) {
    current = transitionMachine(machine, current.snapshot, event);
    steps.push({ event, states: current.states, actions: current.actions });
  }
  return { ...current, steps };
}

// --- agent machine events ------------------------------------------------------------------------------------------

const zeroUsage: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };

/** Builders for the agent machine's events, for pure transition tests of `agentMachine` and its customisations. */
export const agentEvents = {
  /** A caller's prompt, starting a turn. */
  prompt(text: string, options: { inputId?: string; expectsOutput?: boolean } = {}): AgentMachineEvent {
    const input: TurnInput = {
      inputId: options.inputId ?? 'in_1',
      messages: [{ role: 'user', content: [{ type: 'text', text }] }],
      expectsOutput: options.expectsOutput ?? false,
    };
    return { type: 'PROMPT', input };
  },
  /** The model answered with text only. */
  answer(turn: number, step: number, text: string): AgentMachineEvent {
    return { type: 'MODEL_DONE', turn, step, message: assistant([{ type: 'text', text }], 'stop') };
  },
  /** The model asked for tools. */
  toolCalls(
    turn: number,
    step: number,
    calls: Array<{ id: string; name: string; args?: JsonObject }>,
  ): AgentMachineEvent {
    const parts: ToolCallPart[] = calls.map((c) => ({
      type: 'tool_call',
      id: c.id,
      name: c.name,
      arguments: c.args ?? {},
    }));
    return { type: 'MODEL_DONE', turn, step, message: assistant(parts, 'tool_calls') };
  },
  /** Every call valid; `allowed`: nothing can refuse them (no policy, rules or mode): the batch runs unauthorized. */
  validated(batch: number, ids: string[], options: { allowed?: boolean } = {}): AgentMachineEvent {
    const outcomes = ids.map((toolCallId) => ({ toolCallId }));
    return options.allowed
      ? { type: 'VALIDATED', batch, outcomes, allowed: true }
      : { type: 'VALIDATED', batch, outcomes };
  },
  /** The policy's answer for each call of a tool batch, by call id. */
  authorized(batch: number, decisions: Record<string, 'allow' | 'deny' | 'ask'>): AgentMachineEvent {
    return {
      type: 'AUTHORIZED',
      batch,
      decisions: Object.entries(decisions).map(([toolCallId, decision]) => ({ toolCallId, decision })),
    };
  },
  /** One tool call's result in a batch; `isError` marks it failed, `terminate` asks to end the turn after the batch. */
  toolResult(
    batch: number,
    toolCallId: string,
    text: string,
    options: { isError?: boolean; terminate?: boolean } = {},
  ) {
    const result: ToolResultPart = {
      type: 'tool_result',
      toolCallId,
      toolName: 'tool',
      content: [{ type: 'text', text }],
      isError: options.isError ?? false,
    };
    return {
      type: 'TOOL_RESULTS',
      batch,
      results: [{ toolCallId, result, terminate: options.terminate ?? false }],
    } as AgentMachineEvent;
  },
  /** A person let a call waiting for approval run. */
  approve: (toolCallId: string): AgentMachineEvent => ({ type: 'APPROVE', toolCallId }),
  /** A person refused a call waiting for approval. */
  deny: (toolCallId: string, reason?: string): AgentMachineEvent =>
    reason === undefined ? { type: 'DENY', toolCallId } : { type: 'DENY', toolCallId, reason },
  /** The caller interrupted the turn. */
  interrupt: (): AgentMachineEvent => ({ type: 'INTERRUPT' }),
};

function assistant(content: AssistantMessage['content'], stopReason: AssistantMessage['stopReason']): AssistantMessage {
  return { role: 'assistant', content, provider: 'test', model: 'test', stopReason, usage: { ...zeroUsage } };
}

export { type DivergenceKind, replaySessionAsTest, SessionDivergence } from './session-test.js';
