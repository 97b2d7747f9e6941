import { assign, fromCallback, fromPromise, sendTo, setup, spawnChild } from 'xstate';
import { echo, type Script, type ToolCall, type Turn } from './script.js';

interface Input {
  inputId: string;
  expectsOutput: boolean;
}
interface Result {
  toolCallId: string;
  text: string;
  isError: boolean;
}
interface CallState {
  call: ToolCall;
  status: 'open' | 'awaiting' | 'done';
  result?: Result;
  terminate?: boolean;
  halt?: boolean;
}

/** The same keys as Troupe's AgentContext: every assign copies this many. Exported: a machine built on it names it. */
export interface Ctx {
  agentId: string;
  parentId?: string;
  maxSteps: number;
  maxOutputAttempts: number;
  wakeOnNotification: boolean;
  turn: number;
  step: number;
  batch: number;
  current?: Input;
  queue: Input[];
  injections: string[];
  calls: CallState[];
  validation?: 'checked' | 'allowed';
  outputAttempts: number;
  compactedAt?: { turn: number; step: number };
  stopReason?: string;
  error?: string;
  supervising: boolean;
}

/** Every event's payload in one loose shape: the guards read what their transition guarantees. */
interface Payload {
  input: Input;
  inputId: string;
  turn: number;
  step: number;
  batch: number;
  answer: Turn;
  validated: { outcomes: Array<{ toolCallId: string; error?: Result }>; allowed?: boolean };
  outcomes: Array<{ toolCallId: string; error?: Result }>;
  allowed: boolean;
  decisions: Array<{ toolCallId: string; decision: 'allow' | 'deny' | 'ask' }>;
  results: Array<{ toolCallId: string; result: Result; terminate: boolean; halt?: boolean }>;
  ok: boolean;
  code: string;
  toolCallId: string;
  wake: false;
}
type EventType =
  | 'PROMPT'
  | 'STEER'
  | 'NOTIFY'
  | 'INTERRUPT'
  | 'CANCEL_INPUT'
  | 'STOP'
  | 'APPROVE'
  | 'DENY'
  | 'DELEGATE'
  | 'BUDGET_EXHAUSTED'
  | 'MODEL_DONE'
  | 'MODEL_ERROR'
  | 'CONTEXT_FULL'
  | 'VALIDATED'
  | 'AUTHORIZED'
  | 'TOOL_RESULTS'
  | 'OUTPUT_CHECKED'
  | 'PREPARING'
  | 'PREPARED'
  | 'REVIEWING'
  | 'GATING'
  | 'GATED'
  | 'xstate.error.actor.supervisor';
export type ShapeEvent = { type: EventType } & Partial<Payload>;

/** What the runtime would hold for an agent: its model, and whom its turn's end is told. */
export interface Seat {
  script: Script;
  done: (stopReason: string) => void;
  /** The last answer's text (Troupe's transcript has it; the chart's context does not). */
  text?: string;
  /** Its tool batches so far. */
  batch?: number;
}
export const seats = new Map<string, Seat>();

const isCurrentReply = (context: Ctx, event: ShapeEvent) => event.turn === context.turn && event.step === context.step;
const hasToolCalls = (event: ShapeEvent) => event.answer?.type === 'tools';

/**
 * The worker, as Troupe's serves its chart's request actions: answers a model request from the seat's script, then
 * runs the calls and sends their results, each reply an event to the agent. The seat keeps its batch count.
 */
function requestModel({ context, self }: { context: Ctx; self: { send(event: ShapeEvent): void } }) {
  const seat = seats.get(context.agentId) as Seat;
  const { turn, step } = context;
  void seat.script.next().then((answer) => {
    if (answer.type === 'text') {
      seat.text = answer.text;
      self.send({ type: 'MODEL_DONE', turn, step, answer });
      return;
    }
    const validated = { outcomes: answer.calls.map((call) => ({ toolCallId: call.id })), allowed: true };
    self.send({ type: 'MODEL_DONE', turn, step, answer, validated });
    seat.batch = (seat.batch ?? 0) + 1;
    const its = seat.batch;
    void Promise.all(
      answer.calls.map(async (call) => ({
        toolCallId: call.id,
        result: { toolCallId: call.id, text: JSON.stringify(await echo(call.args)), isError: false },
        terminate: false,
      })),
    ).then((results) => self.send({ type: 'TOOL_RESULTS', batch: its, results }));
  });
}

const nothing = () => {};

/** The shape's implementations (agent.ts is the chart), as machines/agent/setup.ts is Troupe's. */
export const shapeSetup = setup({
  types: {
    context: {} as Ctx,
    events: {} as ShapeEvent,
    input: {} as { agentId: string; maxSteps: number },
  },
  actors: {
    compactor: fromPromise<void, { agentId: string }>(async () => {}),
    supervisor: fromCallback(nothing),
  },
  actions: {
    startRun: nothing,
    endRun: nothing,
    startTurn: nothing,
    endTurn: ({ context }) => seats.get(context.agentId)?.done(context.stopReason ?? ''),
    startStep: (_, _params: { step: number }) => {},
    endStep: nothing,
    recordAssistant: nothing,
    recordToolResults: nothing,
    announceApprovals: nothing,
    abortInFlight: nothing,
    settleDropped: nothing,
    supervisorFailed: nothing,
    spawnSupervisor: spawnChild('supervisor', { id: 'supervisor' }),
    markSupervising: assign({ supervising: true }),
    delegate: sendTo('supervisor', ({ event }) => event),
    requestModel,
    requestValidation: nothing,
    requestAuthorization: nothing,
    requestExecution: nothing,
    requestOutputCheck: nothing,
    enqueue: assign({ queue: ({ context, event }) => [...context.queue, event.input as Input] }),
    dropInput: assign({ queue: ({ context, event }) => context.queue.filter((i) => i.inputId !== event.inputId) }),
    dropQueue: assign({ queue: [] }),
    inject: assign({ injections: ({ context }) => [...context.injections, 'injected'] }),
    wakeWithNotification: assign(({ context, event }) => ({
      queue: [...context.queue, { inputId: event.inputId as string, expectsOutput: false }],
      injections: [],
    })),
    dequeueTurn: assign(({ context }) => ({
      current: context.queue[0],
      queue: context.queue.slice(1),
      turn: context.turn + 1,
      step: 0,
      outputAttempts: 0,
      stopReason: undefined,
      error: undefined,
    })),
    nextStep: assign(({ context }) => ({
      step: context.step + 1,
      calls: [],
      injections: context.injections.length === 0 ? context.injections : [],
    })),
    takeToolCalls: assign(({ context, event }) => {
      const answer = event.answer as Extract<Turn, { type: 'tools' }>;
      const calls = answer.calls.map((call): CallState => ({ call, status: 'open' }));
      const { validated } = event;
      if (!validated) return { batch: context.batch + 1, calls, validation: undefined };
      return {
        batch: context.batch + 1,
        calls: calls.map((state) => {
          const error = validated.outcomes.find((o) => o.toolCallId === state.call.id)?.error;
          return error ? { call: state.call, status: 'done' as const, result: error } : state;
        }),
        validation: validated.allowed ? ('allowed' as const) : ('checked' as const),
      };
    }),
    refuseCutOffCalls: assign(({ context }) => ({ batch: context.batch + 1, calls: [] })),
    applyValidation: assign({ calls: ({ context }) => [...context.calls] }),
    applyDecisions: assign({ calls: ({ context }) => [...context.calls] }),
    approve: assign({ calls: ({ context }) => [...context.calls] }),
    deny: assign({ calls: ({ context }) => [...context.calls] }),
    takeToolResults: assign({
      calls: ({ context, event }) =>
        context.calls.map((state): CallState => {
          if (state.status !== 'open') return state;
          const answer = event.results?.find((r) => r.toolCallId === state.call.id);
          if (!answer) return state;
          const done: CallState = {
            call: state.call,
            status: 'done',
            result: answer.result,
            terminate: answer.terminate,
          };
          if (answer.halt) done.halt = true;
          return done;
        }),
    }),
    closeInterruptedCalls: assign({ calls: ({ context }) => [...context.calls] }),
    exhaustBudget: assign({ stopReason: 'budget_exhausted' }),
    queueOutputFeedback: assign(({ context }) => ({ outputAttempts: context.outputAttempts + 1 })),
    stopWith: assign((_, params: { reason: string }) => ({ stopReason: params.reason })),
    failWithModelError: assign({ stopReason: 'error' }),
    tripGuardrail: assign({ stopReason: 'guardrail_tripped' }),
    applyGate: assign({ calls: ({ context }) => [...context.calls] }),
    markCompaction: assign({ compactedAt: ({ context }) => ({ turn: context.turn, step: context.step }) }),
    failWithCompactionError: assign({ stopReason: 'error' }),
    failWithInvalidOutput: assign({ stopReason: 'error' }),
    announceBudgetExhausted: nothing,
  },
  guards: {
    isCurrentModelReply: ({ context, event }) => isCurrentReply(context, event),
    isCurrentOverflow: ({ context, event }) => event.code === 'context_overflow' && isCurrentReply(context, event),
    isCurrentToolAnswer: ({ context, event }) => isCurrentReply(context, event) && hasToolCalls(event),
    isCurrentValidatedToolAnswer: ({ context, event }) =>
      event.validated !== undefined && isCurrentReply(context, event) && hasToolCalls(event),
    wasValidated: ({ context }) => context.validation !== undefined,
    isCurrentAllowedToolAnswer: ({ context, event }) =>
      event.validated?.allowed === true && isCurrentReply(context, event) && hasToolCalls(event),
    isCurrentCutOffToolAnswer: ({ context, event }) =>
      event.code === 'length' && isCurrentReply(context, event) && hasToolCalls(event),
    isCurrentGuardrailTrip: ({ context, event }) =>
      event.code === 'guardrail_tripped' && isCurrentReply(context, event),
    isCurrentBatch: ({ context, event }) => event.batch === context.batch,
    isAllowedBatch: ({ context, event }) => event.allowed === true && event.batch === context.batch,
    allCallsInvalid: ({ context, event }) =>
      event.batch === context.batch && (event.outcomes ?? []).filter((o) => o.error).length === context.calls.length,
    anyInvalid: ({ context, event }) => event.batch === context.batch && (event.outcomes ?? []).some((o) => o.error),
    anyAsks: ({ context, event }) =>
      event.batch === context.batch && (event.decisions ?? []).some((d) => d.decision === 'ask'),
    anyDenied: ({ context, event }) =>
      event.batch === context.batch && (event.decisions ?? []).some((d) => d.decision !== 'allow'),
    isAwaiting: ({ context, event }) =>
      context.calls.some((state) => state.call.id === event.toolCallId && state.status === 'awaiting'),
    noneAwaiting: ({ context }) => !context.calls.some((state) => state.status === 'awaiting'),
    answersOpenCalls: ({ context, event }) =>
      event.batch === context.batch &&
      (event.results ?? []).some((r) => context.calls.some((s) => s.call.id === r.toolCallId && s.status === 'open')),
    completesBatch: ({ context, event }) =>
      event.batch === context.batch &&
      context.calls.every(
        (state) => state.status === 'done' || (event.results ?? []).some((r) => r.toolCallId === state.call.id),
      ),
    allDone: ({ context }) => context.calls.every((state) => state.status === 'done'),
    anyHalts: ({ context }) => context.calls.some((state) => state.halt === true),
    allTerminate: ({ context }) => context.calls.every((state) => state.terminate === true),
    hasInjections: ({ context }) => context.injections.length > 0,
    expectsOutput: ({ context }) => context.current?.expectsOutput === true,
    isValidOutput: ({ context, event }) => event.turn === context.turn && event.ok === true,
    canRetryOutput: ({ context, event }) =>
      event.turn === context.turn && context.outputAttempts + 1 < context.maxOutputAttempts,
    isCurrentTurn: ({ context, event }) => event.turn === context.turn,
    isBudgetOfThisTurn: ({ context, event }) => event.turn === context.turn,
    stepLimitReached: ({ context }) => context.step >= context.maxSteps,
    hasQueuedInput: ({ context }) => context.queue.length > 0,
    isQueuedInput: ({ context, event }) => context.queue.some((input) => input.inputId === event.inputId),
    isCurrentInput: ({ context, event }) => context.current?.inputId === event.inputId,
    wakesOnNotification: ({ context, event }) => context.wakeOnNotification && event.wake !== false,
    isSupervising: ({ context }) => context.supervising,
  },
});
