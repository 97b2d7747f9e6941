/**
 * Model-based tests of the real agent machine. `xstate/graph` explores the machine purely (getAdjacencyMap and
 * getShortestPaths, with a serializeState that keeps only what steers the machine and ignores bulky context);
 * every abstract state gets its shortest path and every abstract transition one path through it. Each path is
 * then replayed on a real actor of the same machine, provided with fake workers (which record the requests and
 * send the replies from the path) and recording actions, while the invariants are checked:
 *
 * - no tool executes before it is authorised (allowed by the policy or approved);
 * - every tool call ends with exactly one result;
 * - `turn_end` exactly once per turn, `agent_end` exactly once per run;
 * - an interrupted turn leaves no open tool call.
 *
 * Coverage is measured on the real actor (its `@xstate.microstep` inspection events): every state node and every
 * transition of the machine, each guarded branch counted on its own. The test prints both.
 */
import { describe, expect, it } from 'vitest';
import {
  type AnyActorRef,
  type AnyMachineSnapshot,
  assign,
  createActor,
  fromPromise,
  type InspectionEvent,
  type SnapshotFrom,
  type StateValue,
} from 'xstate';
import {
  type AgentMachineEvent,
  agentMachine,
  type CompactorInput,
  type ModelWorkerRequest,
  servedBy,
  type ToolCallState,
} from '../../machines/agent/index.js';
import type { AssistantMessage } from '../../src/index.js';
import { stateIds, transitionKeys, transitionList } from '../../src/inspect/export.js';
import type { ToolCallPart, ToolResultPart } from '../../src/protocol/index.js';
import { coveringPaths, type Path } from './paths.js';

type Snapshot = SnapshotFrom<typeof agentMachine>;
/** `matches` without the machine's state-value typing (a pure check of the state value). */
const is = (snapshot: unknown, value: StateValue): boolean => (snapshot as AnyMachineSnapshot).matches(value);

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
const message = (
  content: AssistantMessage['content'],
  stopReason: AssistantMessage['stopReason'],
): AssistantMessage => ({
  role: 'assistant',
  content,
  provider: 'test',
  model: 'test',
  stopReason,
  usage,
});
const call = (id: string): ToolCallPart => ({ type: 'tool_call', id, name: 'tool', arguments: {} });
const result = (id: string, isError = false): ToolResultPart => ({
  type: 'tool_result',
  toolCallId: id,
  toolName: 'tool',
  content: [{ type: 'text', text: isError ? 'bad arguments' : 'ok' }],
  isError,
});
const user = (text: string, source?: 'steer' | 'notification') => ({
  role: 'user' as const,
  content: [{ type: 'text' as const, text }],
  ...(source ? { source } : {}),
});

// ---- the events the explorer may send, as a function of the state -------------------------------------------------

const WORKER_REPLIES = new Set([
  'MODEL_DONE',
  'MODEL_ERROR',
  'VALIDATED',
  'AUTHORIZED',
  'TOOL_RESULTS',
  'OUTPUT_CHECKED',
  'PREPARING',
  'PREPARED',
  'REVIEWING',
  'GATING',
  'GATED',
]);
const trip = { name: 'GuardrailTripped', code: 'guardrail_tripped', message: 'no' };
const spent = { name: 'BudgetExhausted', code: 'budget_exhausted', message: 'spent' };

/** A tool answer of one call that the worker validated as it answered (`allowed`: nothing can refuse it). */
function validatedAnswer(
  turn: number,
  step: number,
  batch: number,
  { allowed = false, invalid = false }: { allowed?: boolean; invalid?: boolean },
): AgentMachineEvent {
  const toolCallId = `b${batch}.1`;
  const outcomes = [invalid ? { toolCallId, error: result(toolCallId, true) } : { toolCallId }];
  const validated = allowed ? { outcomes, allowed } : { outcomes };
  return { type: 'MODEL_DONE', turn, step, message: message([call(toolCallId)], 'tool_calls'), validated };
}

function eventsFor(snapshot: Snapshot): AgentMachineEvent[] {
  const c = snapshot.context;
  const events: AgentMachineEvent[] = [];
  const prompt = (expectsOutput: boolean): AgentMachineEvent => ({
    type: 'PROMPT',
    input: { inputId: `in.${expectsOutput ? 'o' : 'p'}`, messages: [user('do it')], expectsOutput },
  });
  const steer: AgentMachineEvent = { type: 'STEER', message: user('also this', 'steer') };
  const notify: AgentMachineEvent = { type: 'NOTIFY', inputId: 'n.1', messages: [user('child done', 'notification')] };
  if (is(snapshot, 'idle')) {
    events.push(prompt(false), prompt(true), notify, { type: 'INTERRUPT' });
    if (c.injections.length === 0) events.push(steer);
    events.push({ type: 'DELEGATE', command: { type: 'CANCEL', taskId: 't.1', batchId: 'b.1' } });
    events.push({ type: 'xstate.error.actor.supervisor', error: new Error('supervisor broke') } as never);
    return events;
  }
  // Anywhere in a run: more input (bounded, so the graph stays finite) and the interrupt.
  if (c.queue.length === 0) events.push(prompt(false));
  if (c.injections.length === 0) events.push(steer, notify);
  events.push({ type: 'INTERRUPT' });
  // The caller's side: a queued prompt withdrawn (its signal aborted), the running one withdrawn, and a stop, which
  // drops the whole queue.
  const queued = c.queue[0];
  if (queued) events.push({ type: 'CANCEL_INPUT', inputId: queued.inputId });
  if (c.current && !c.queue.some((input) => input.inputId === c.current?.inputId)) {
    events.push({ type: 'CANCEL_INPUT', inputId: c.current.inputId });
  }
  events.push({ type: 'STOP' });
  const { turn, step, batch } = c;
  // A budget can run out in any state of a run (a timer), and the chart takes the event in `running` alike: it is
  // sent while the model answers only, so the graph stays within the suite's time (the tool phases are covered by
  // test/control/budget-transitions.test.ts).
  if (is(snapshot, { running: { turn: { step: 'model' } } })) {
    events.push({ type: 'BUDGET_EXHAUSTED', turn, error: spent });
  }
  if (is(snapshot, { running: { turn: { step: 'model' } } })) {
    const next = batch + 1;
    events.push(
      { type: 'MODEL_DONE', turn, step, message: message([{ type: 'text', text: 'answer' }], 'stop') },
      { type: 'MODEL_DONE', turn, step, message: message([call(`b${next}.1`), call(`b${next}.2`)], 'tool_calls') },
      { type: 'MODEL_DONE', turn, step, message: message([call(`b${next}.1`)], 'length') },
      // The worker validated the call as it answered: nothing can refuse it, it waits for authorization, it failed.
      validatedAnswer(turn, step, next, { allowed: true }),
      validatedAnswer(turn, step, next, {}),
      validatedAnswer(turn, step, next, { invalid: true }),
      { type: 'MODEL_ERROR', turn, step, error: { name: 'ModelError', code: 'server_error', message: 'boom' } },
      { type: 'MODEL_ERROR', turn, step, error: { name: 'ModelError', code: 'context_overflow', message: 'too long' } },
      { type: 'CONTEXT_FULL', turn, step, tokens: 90, window: 100 },
      // A late reply to an older request: ignored.
      { type: 'MODEL_DONE', turn, step: step - 1, message: message([{ type: 'text', text: 'late' }], 'stop') },
      { type: 'PREPARING', turn, step },
      { type: 'REVIEWING', turn, step },
    );
  }
  if (is(snapshot, { running: { turn: { step: 'preparing' } } })) {
    events.push(
      { type: 'PREPARED', turn, step },
      { type: 'MODEL_ERROR', turn, step, error: trip },
      { type: 'MODEL_ERROR', turn, step, error: { name: 'HookFailed', code: 'hook_failed', message: 'boom' } },
    );
  }
  if (is(snapshot, { running: { turn: { step: 'reviewing' } } })) {
    events.push(
      { type: 'MODEL_DONE', turn, step, message: message([{ type: 'text', text: 'answer' }], 'stop') },
      { type: 'MODEL_DONE', turn, step, message: message([call(`b${batch + 1}.1`)], 'tool_calls') },
      { type: 'MODEL_DONE', turn, step, message: message([call(`b${batch + 1}.1`)], 'length') },
      validatedAnswer(turn, step, batch + 1, { allowed: true }),
      validatedAnswer(turn, step, batch + 1, {}),
      { type: 'MODEL_ERROR', turn, step, error: trip },
      { type: 'MODEL_ERROR', turn, step, error: { name: 'HookFailed', code: 'hook_failed', message: 'boom' } },
    );
  }
  if (is(snapshot, { running: { turn: { step: 'compacting' } } })) {
    // The compactor of the harness never settles on its own: the explorer settles it.
    events.push(
      { type: 'xstate.done.actor.compactor', output: undefined } as never,
      { type: 'xstate.error.actor.compactor', error: new Error('summary failed') } as never,
    );
  }
  const ids = c.calls.map((s) => s.call.id);
  if (is(snapshot, { running: { turn: { step: { tools: 'validating' } } } })) {
    events.push(
      { type: 'VALIDATED', batch, outcomes: ids.map((toolCallId) => ({ toolCallId })) },
      {
        type: 'VALIDATED',
        batch,
        outcomes: ids.map((toolCallId, i) =>
          i === 0 ? { toolCallId, error: result(toolCallId, true) } : { toolCallId },
        ),
      },
      {
        type: 'VALIDATED',
        batch,
        outcomes: ids.map((toolCallId) => ({ toolCallId, error: result(toolCallId, true) })),
      },
      { type: 'VALIDATED', batch: batch - 1, outcomes: [] },
      // Nothing can refuse a call (no policy, rules or mode): authorizing is passed without a request.
      { type: 'VALIDATED', batch, outcomes: ids.map((toolCallId) => ({ toolCallId })), allowed: true },
      {
        type: 'VALIDATED',
        batch,
        outcomes: ids.map((toolCallId, i) =>
          i === 0 ? { toolCallId, error: result(toolCallId, true) } : { toolCallId },
        ),
        allowed: true,
      },
    );
  }
  if (is(snapshot, { running: { turn: { step: { tools: 'authorizing' } } } })) {
    const valid = c.calls.filter((s) => s.status === 'open').map((s) => s.call.id);
    const decide = (pick: (i: number) => 'allow' | 'deny' | 'ask'): AgentMachineEvent => ({
      type: 'AUTHORIZED',
      batch,
      decisions: valid.map((toolCallId, i) => ({ toolCallId, decision: pick(i) })),
    });
    events.push(
      decide(() => 'allow'),
      decide(() => 'ask'),
      decide(() => 'deny'),
      decide((i) => (i === 0 ? 'ask' : 'deny')),
      decide((i) => (i === 0 ? 'deny' : 'allow')),
      { type: 'AUTHORIZED', batch: batch - 1, decisions: [] },
    );
  }
  if (is(snapshot, { running: { turn: { step: { tools: 'awaitingApproval' } } } })) {
    for (const s of c.calls.filter((x) => x.status === 'awaiting')) {
      events.push({ type: 'APPROVE', toolCallId: s.call.id }, { type: 'DENY', toolCallId: s.call.id, reason: 'no' });
    }
    events.push({ type: 'APPROVE', toolCallId: 'unknown' });
  }
  if (is(snapshot, { running: { turn: { step: { tools: 'executing' } } } })) {
    const open = c.calls.filter((x) => x.status === 'open');
    for (const s of open) {
      const toolCallId = s.call.id;
      events.push(
        { type: 'TOOL_RESULTS', batch, results: [{ toolCallId, result: result(toolCallId), terminate: false }] },
        { type: 'TOOL_RESULTS', batch, results: [{ toolCallId, result: result(toolCallId), terminate: true }] },
      );
      // The repetition ladder's stop (the runtime's `halt`), on a batch's last open call only: the graph stays small.
      if (open.length === 1) {
        events.push({
          type: 'TOOL_RESULTS',
          batch,
          results: [{ toolCallId, result: result(toolCallId), terminate: false, halt: true }],
        });
      }
    }
    events.push({
      type: 'TOOL_RESULTS',
      batch: batch - 1,
      results: [{ toolCallId: 'old', result: result('old'), terminate: false }],
    });
    events.push({ type: 'GATING', batch });
  }
  if (is(snapshot, { running: { turn: { step: { tools: 'gating' } } } })) {
    const open = c.calls.filter((s) => s.status === 'open').map((s) => s.call.id);
    events.push(
      { type: 'GATED', batch, outcomes: open.map((toolCallId) => ({ toolCallId })) },
      {
        type: 'GATED',
        batch,
        outcomes: open.map((toolCallId, i) =>
          i === 0 ? { toolCallId, result: result(toolCallId, true) } : { toolCallId },
        ),
      },
      { type: 'GATED', batch, outcomes: open.map((toolCallId) => ({ toolCallId, result: result(toolCallId, true) })) },
      { type: 'GATED', batch: batch - 1, outcomes: [] },
    );
  }
  if (is(snapshot, { running: { turn: { step: 'checkingOutput' } } })) {
    events.push(
      { type: 'OUTPUT_CHECKED', turn, ok: true },
      { type: 'OUTPUT_CHECKED', turn, ok: false, feedback: 'not JSON' },
      { type: 'OUTPUT_CHECKED', turn: turn - 1, ok: true },
    );
  }
  return events;
}

/** What steers the machine; counters that only grow (turn, batch, ids) and message bodies are left out. */
function serializeState(snapshot: Snapshot): string {
  const c = snapshot.context;
  return JSON.stringify({
    v: snapshot.value,
    st: snapshot.status,
    step: c.step,
    queue: c.queue.map((q) => (q.expectsOutput ? 'o' : 'p')).join(''),
    injections: c.injections.length > 0,
    calls: c.calls.map((s) => `${s.status}${s.terminate ? '+t' : ''}${s.result?.isError ? '+e' : ''}`),
    output: c.current?.expectsOutput ?? null,
    attempts: c.outputAttempts,
    // A repetition stop ends the turn like any other stop, and a budget stop like an interrupt: nothing after them
    // depends on which one it was.
    stop:
      c.stopReason === 'repetition'
        ? 'completed'
        : c.stopReason === 'budget_exhausted'
          ? 'interrupted'
          : (c.stopReason ?? null),
    error: c.error?.code === 'budget_exhausted' ? null : (c.error?.code ?? null),
    supervising: c.supervising,
    compacted: c.compactedAt?.turn === c.turn && c.compactedAt.step === c.step,
  });
}

// ---- the real actor, with fake workers and recording actions ---------------------------------------------------

class Violation extends Error {}

interface Harness {
  actor: AnyActorRef;
  /** Transitions taken (keys of transitionList), from the microsteps. */
  taken: Set<string>;
  /** State nodes entered, from the microsteps. */
  entered: Set<string>;
  send(event: AgentMachineEvent): void;
  finish(): void;
}

const machineInput = (wakeOnNotification: boolean) => ({
  agentId: 'agent.mb',
  maxSteps: 2,
  maxOutputAttempts: 2,
  wakeOnNotification,
});

/** What one replay has seen; the provided machine below records into the current one. */
class Recorder {
  modelRequests: ModelWorkerRequest[] = [];
  inRun = false;
  turnsStarted = new Map<number, number>();
  turnsEnded = new Map<number, number>();
  authorised = new Set<string>();
  /** Batches the worker validated as `allowed`: nothing can refuse their calls, so none is sent to authorization. */
  allowedBatches = new Set<number>();
  executed = new Set<string>();
  results = new Map<string, number>();
  violations: string[] = [];
  check(fn: () => void) {
    try {
      fn();
    } catch (error) {
      this.violations.push((error as Error).message);
    }
  }
}

let current = new Recorder();
const violate = (why: string): never => {
  throw new Violation(why);
};

/** Provided once (a `provide` per replay would rebuild the machine 5 000 times). */
const testMachine = agentMachine.provide({
  actors: {
    compactor: fromPromise<void, CompactorInput>(() => new Promise<void>(() => {})),
  },
  actions: {
    // The worker's requests; its replies are the generated events, sent to the agent as the runtime's are.
    ...servedBy((request) => {
      const rec = current;
      if (request.type === 'MODEL_REQUEST') {
        rec.modelRequests.push(request);
        return;
      }
      if (request.type === 'AUTHORIZE' && rec.allowedBatches.has(request.batch)) {
        rec.check(() => violate(`batch ${request.batch} was validated as allowed and still sent to authorization`));
      }
      if (request.type !== 'EXECUTE') return;
      rec.check(() => {
        for (const c of request.calls) {
          if (!rec.authorised.has(c.id)) violate(`tool call ${c.id} executed before it was authorised`);
          if (rec.executed.has(c.id)) violate(`tool call ${c.id} executed twice`);
          rec.executed.add(c.id);
        }
      });
    }),
    startRun: () =>
      current.check(() => {
        if (current.inRun) violate('agent_start inside a run');
        current.inRun = true;
      }),
    endRun: () =>
      current.check(() => {
        if (!current.inRun) violate('agent_end without agent_start');
        current.inRun = false;
      }),
    startTurn: ({ context }) =>
      current.check(() => current.turnsStarted.set(context.turn, (current.turnsStarted.get(context.turn) ?? 0) + 1)),
    endTurn: ({ context }) =>
      current.check(() => {
        if (!current.turnsStarted.has(context.turn)) violate(`turn_end of turn ${context.turn}, which never started`);
        current.turnsEnded.set(context.turn, (current.turnsEnded.get(context.turn) ?? 0) + 1);
      }),
    recordToolResults: ({ context }) =>
      current.check(() => {
        for (const s of context.calls) {
          if (s.status !== 'done' || !s.result) violate(`tool call ${s.call.id} recorded without a result`);
          current.results.set(s.call.id, (current.results.get(s.call.id) ?? 0) + 1);
        }
      }),
  },
});
/** The provided machine has its own transition objects: map those. */
const keys = transitionKeys(testMachine);

function harness(wakeOnNotification: boolean, machine = testMachine): Harness {
  const rec = new Recorder();
  current = rec;
  const { modelRequests, turnsStarted, turnsEnded, authorised, allowedBatches, executed, results, violations } = rec;
  const taken = new Set<string>();
  const entered = new Set<string>();
  const actor = createActor(machine, {
    input: machineInput(wakeOnNotification),
    inspect: (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep' || event.actorRef !== actorRef()) return;
      for (const t of event._transitions) {
        const key = keys.get(t);
        if (key) taken.add(key);
      }
      for (const node of (event.snapshot as unknown as { _nodes: Array<{ id: string }> })._nodes) entered.add(node.id);
    },
  });
  const actorRef = () => actor;
  actor.subscribe({ error: (error) => violations.push(`actor error: ${String(error)}`) });
  actor.start();
  entered.add('agent.idle');

  const openCalls = () =>
    actor
      .getSnapshot()
      .context.calls.filter((s) => s.status !== 'done')
      .map((s) => s.call.id);

  return {
    actor,
    taken,
    entered,
    send(event) {
      const before = actor.getSnapshot();
      if (event.type === 'AUTHORIZED' && event.batch === before.context.batch) {
        for (const d of event.decisions) if (d.decision === 'allow') authorised.add(d.toolCallId);
      }
      if (event.type === 'VALIDATED' && event.allowed && event.batch === before.context.batch) {
        allowedBatches.add(event.batch);
        for (const o of event.outcomes) if (!o.error) authorised.add(o.toolCallId);
      }
      // An answer validated as it came: its batch is the next one, if the machine takes it.
      if (event.type === 'MODEL_DONE' && event.validated?.allowed && event.step === before.context.step) {
        allowedBatches.add(before.context.batch + 1);
        for (const o of event.validated.outcomes) if (!o.error) authorised.add(o.toolCallId);
      }
      if (
        event.type === 'APPROVE' &&
        before.context.calls.some((s) => s.call.id === event.toolCallId && s.status === 'awaiting')
      ) {
        authorised.add(event.toolCallId);
      }
      if (WORKER_REPLIES.has(event.type)) {
        if (event.type === 'MODEL_DONE' && event.step === before.context.step) {
          if (!modelRequests.some((r) => r.turn === event.turn && r.step === event.step)) {
            violations.push(`a model reply for turn ${event.turn} step ${event.step} that was never requested`);
          }
        }
      }
      actor.send(event);
      // Withdrawing the running input interrupts its turn; withdrawing a queued one leaves the turn alone.
      const withdrawsCurrent =
        event.type === 'CANCEL_INPUT' && !before.context.queue.some((input) => input.inputId === event.inputId);
      const interrupts = ['INTERRUPT', 'BUDGET_EXHAUSTED', 'STOP'].includes(event.type) || withdrawsCurrent;
      if (interrupts && !is(before, 'idle')) {
        const open = openCalls();
        if (open.length) violations.push(`${event.type} left open tool calls ${open.join(', ')}`);
      }
      const after = actor.getSnapshot();
      if (event.type === 'STOP' && !is(before, 'idle')) {
        if (!is(after, 'idle') || after.context.queue.length > 0 || after.context.turn !== before.context.turn) {
          violations.push('STOP started a queued input instead of dropping the queue');
        }
      }
      if (event.type === 'CANCEL_INPUT' && before.context.queue.some((input) => input.inputId === event.inputId)) {
        if (after.context.queue.some((input) => input.inputId === event.inputId)) {
          violations.push(`CANCEL_INPUT left ${event.inputId} in the queue`);
        }
        if (after.context.turn !== before.context.turn)
          violations.push('CANCEL_INPUT of a queued input moved the turn');
      }
      if (violations.length) throw new Violation(violations.join('\n'));
    },
    finish() {
      // Close the path: interrupt until idle, then every invariant must hold for the whole run.
      for (let i = 0; i < 4 && !is(actor.getSnapshot(), 'idle'); i++) this.send({ type: 'INTERRUPT' });
      if (!is(actor.getSnapshot(), 'idle')) violations.push('still running after interrupts');
      if (rec.inRun) violations.push('a run without agent_end');
      for (const [turn, count] of turnsStarted) {
        if (count !== 1) violations.push(`turn ${turn} started ${count} times`);
        if (turnsEnded.get(turn) !== 1) violations.push(`turn ${turn} ended ${turnsEnded.get(turn) ?? 0} times`);
      }
      for (const [id, count] of results) if (count !== 1) violations.push(`tool call ${id} has ${count} results`);
      for (const id of executed) if (!results.has(id)) violations.push(`executed tool call ${id} has no result`);
      const snapshot = actor.getSnapshot();
      for (const s of snapshot.context.calls) {
        if (!results.has(s.call.id)) violations.push(`tool call ${s.call.id} of the last batch has no result`);
      }
      actor.stop();
      if (violations.length) throw new Violation(violations.join('\n'));
    },
  };
}

// ---- the suite ----------------------------------------------------------------------------------------------------

function explore(wakeOnNotification: boolean) {
  return coveringPaths<Snapshot, AgentMachineEvent>(agentMachine, {
    input: machineInput(wakeOnNotification),
    events: eventsFor,
    serializeState,
  });
}

describe('model-based: the agent machine', () => {
  it('replays a path through every abstract transition on the real actor, with the invariants holding', {
    // ~4,400 abstract states: up to five minutes when the shared 2-core machine is loaded.
    timeout: 420_000,
  }, () => {
    const allTransitions = transitionList(agentMachine).map((t) => t.key);
    const allStates = stateIds(agentMachine);
    const taken = new Set<string>();
    const entered = new Set<string>();
    let replayed = 0;
    let abstractStates = 0;
    let abstractEdges = 0;
    for (const wake of [true, false]) {
      const { states, edges, paths } = explore(wake);
      abstractStates += states;
      abstractEdges += edges;
      for (const path of paths) {
        const run = harness(wake);
        try {
          for (const step of path.steps.slice(1)) {
            run.send(step.event);
            expect(serializeState(run.actor.getSnapshot() as Snapshot)).toBe(serializeState(step.state));
          }
          run.finish();
        } catch (error) {
          const events = path.steps.slice(1).map((s) => s.event.type);
          throw new Error(`${(error as Error).message}\npath: ${events.join(' → ')}`);
        }
        for (const key of run.taken) taken.add(key);
        for (const id of run.entered) entered.add(id);
        replayed++;
      }
    }
    const missingStates = allStates.filter((id) => !entered.has(id));
    const missingTransitions = allTransitions.filter((key) => !taken.has(key));
    console.log(
      [
        'agent machine, model-based coverage:',
        `  abstract graph: ${abstractStates} states, ${abstractEdges} transitions (two inputs), ${replayed} paths replayed on the real actor`,
        `  state coverage: ${allStates.length - missingStates.length}/${allStates.length} state nodes`,
        `  transition coverage: ${allTransitions.length - missingTransitions.length}/${allTransitions.length} transitions (guarded branches counted apart)`,
        ...(missingStates.length ? [`  states never entered: ${missingStates.join(', ')}`] : []),
        ...(missingTransitions.length ? [`  transitions never taken: ${missingTransitions.join(', ')}`] : []),
      ].join('\n'),
    );
    expect(missingStates).toEqual([]);
    expect(missingTransitions).toEqual([]);
  });

  // The checks check: the same replays on machines with a planted bug must report the broken invariant.
  const mutants = [
    {
      bug: "the policy's ask and deny are taken as allow",
      machine: testMachine.provide({
        actions: {
          applyDecisions: assign({ calls: ({ context }) => context.calls.map((s: ToolCallState) => s) }) as never,
        },
      }),
      expected: 'executed before it was authorised',
    },
    {
      bug: 'an interrupt leaves the open calls open',
      machine: testMachine.provide({ actions: { closeInterruptedCalls: () => {} } }),
      expected: 'INTERRUPT left open tool calls',
    },
    {
      bug: 'a turn never announces its end',
      machine: testMachine.provide({ actions: { endTurn: () => {} } }),
      expected: 'ended 0 times',
    },
    {
      bug: 'a stop keeps the queue, so the next prompt starts on the way out',
      machine: testMachine.provide({ actions: { dropQueue: () => {} } }),
      expected: 'STOP started a queued input',
    },
    {
      bug: 'a withdrawn queued prompt stays queued',
      machine: testMachine.provide({ actions: { dropInput: () => {} } }),
      expected: 'CANCEL_INPUT left in.p in the queue',
    },
  ];
  for (const mutant of mutants) {
    it(`catches a planted bug: ${mutant.bug}`, { timeout: 180_000 }, () => {
      const messages = new Set<string>();
      for (const path of explore(true).paths as Path<Snapshot, AgentMachineEvent>[]) {
        const run = harness(true, mutant.machine as typeof testMachine);
        try {
          for (const step of path.steps.slice(1)) run.send(step.event);
          run.finish();
        } catch (error) {
          if (error instanceof Violation) messages.add(error.message);
          run.actor.stop();
        }
        if ([...messages].some((m) => m.includes(mutant.expected))) break;
      }
      expect([...messages].join('\n')).toContain(mutant.expected);
    });
  }
});
