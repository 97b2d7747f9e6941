import { type ActorSystem, assign, fromCallback, fromPromise, sendTo, setup, spawnChild } from 'xstate';
import type { SupervisorCommand } from '../../src/protocol/index.js';
import { errorResult, ModelError, toolCallsOf } from '../../src/protocol/index.js';
import { agentGuards, command, compactedThisStep, reply, turnInput } from './guards.js';
import type {
  AgentContext,
  AgentMachineEvent,
  AgentMachineInput,
  CompactorInput,
  ModelWorkerRequest,
  ToolCallState,
  ToolWorkerRequest,
  ValidationOutcomes,
  WorkerRequest,
} from './types.js';

const CUT_OFF =
  'Your previous answer hit the output token limit before this tool call was complete, so it was not run. ' +
  'Issue the call again, with shorter arguments if you can.';
const INTERRUPTED = 'The user interrupted this tool call before it finished; it has no result.';
const BUDGET_SPENT = 'The budget for this turn ran out before this tool call finished; it has no result.';

function closeOpenCalls(calls: ToolCallState[], text: string): ToolCallState[] {
  return calls.map((state) =>
    state.status === 'done' ? state : { call: state.call, status: 'done', result: errorResult(state.call, text) },
  );
}

/** Calls whose arguments failed validation are answered with the error (the others stay open). */
function withValidation(calls: ToolCallState[], outcomes: ValidationOutcomes['outcomes']): ToolCallState[] {
  // Every call is open while the batch validates; the worker answers each of them.
  return calls.map((state): ToolCallState => {
    // Stryker disable next-line OptionalChaining: the tool worker gives an outcome for every call it was sent
    const error = outcomes.find((o) => o.toolCallId === state.call.id)?.error;
    return error ? { call: state.call, status: 'done', result: error } : state;
  });
}

function callsWith(calls: ToolCallState[], status: ToolCallState['status']) {
  return calls.filter((state) => state.status === status).map((state) => state.call);
}

/**
 * What each request action of the chart asks of the agent's worker (the model's and the tools'), made from the
 * context alone: the chart decides when to ask, the worker how to answer.
 */
export const workerRequests = {
  requestModel: (context: AgentContext): ModelWorkerRequest => ({
    type: 'MODEL_REQUEST',
    turn: context.turn,
    step: context.step,
    inputId: turnInput(context).inputId,
    mayCompact: !compactedThisStep(context),
  }),
  requestValidation: (context: AgentContext): ToolWorkerRequest => ({
    type: 'VALIDATE',
    batch: context.batch,
    calls: context.calls.map((state) => state.call),
  }),
  requestAuthorization: (context: AgentContext): ToolWorkerRequest => ({
    type: 'AUTHORIZE',
    batch: context.batch,
    calls: callsWith(context.calls, 'open'),
  }),
  requestExecution: (context: AgentContext): ToolWorkerRequest => ({
    type: 'EXECUTE',
    batch: context.batch,
    calls: callsWith(context.calls, 'open'),
  }),
  requestOutputCheck: (context: AgentContext): ToolWorkerRequest => ({
    type: 'CHECK_OUTPUT',
    turn: context.turn,
    inputId: turnInput(context).inputId,
  }),
} as const;

/**
 * The request an executed action makes of the worker, from the context it ran with; undefined for any other action
 * (for tests and tools that read XState's `transition` results).
 */
export function requestOf(action: { type: string; info?: { context?: AgentContext } }): WorkerRequest | undefined {
  const make = (workerRequests as Partial<Record<string, (context: AgentContext) => WorkerRequest>>)[action.type];
  const context = action.info?.context;
  return make && context ? make(context) : undefined;
}

/** Where a worker's replies go: the agent's actor. */
export interface WorkerReplyTarget {
  send(event: AgentMachineEvent): void;
}

/**
 * A worker: takes each request the chart makes (see `workerRequests`) and answers later by sending the agent its
 * replies (MODEL_DONE, TOOL_RESULTS...). The runtime's is src/runtime/step/worker.ts; a test's answers from a script.
 */
export type AgentWorker = (request: WorkerRequest, agent: WorkerArgs) => void;

/** What a worker is given with each request: the agent's context as the request was made, its actor and system. */
export interface WorkerArgs {
  context: AgentContext;
  self: WorkerReplyTarget;
  // biome-ignore lint/suspicious/noExplicitAny: XState's own AnyActorSystem is ActorSystem<any> but is not exported.
  system: ActorSystem<any>;
}

/** The chart's request actions served by `worker`: for `agentMachine.provide({ actions: servedBy(worker) })`. */
export function servedBy(worker: AgentWorker) {
  const serve =
    (make: (context: AgentContext) => WorkerRequest) =>
    (args: WorkerArgs): void =>
      worker(make(args.context), args);
  return {
    requestModel: serve(workerRequests.requestModel),
    requestValidation: serve(workerRequests.requestValidation),
    requestAuthorization: serve(workerRequests.requestAuthorization),
    requestExecution: serve(workerRequests.requestExecution),
    requestOutputCheck: serve(workerRequests.requestOutputCheck),
  };
}

/**
 * The agent chart's implementations (chart.ts is the chart): its actions (effects the runtime gives with
 * machine.provide(), the step's requests to its worker among them, and the assigns that are the context's only
 * writers), its compactor and supervisor, and its guards (guards.ts).
 */
export const agentSetup = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentMachineEvent,
    input: {} as AgentMachineInput,
  },
  actors: {
    /** Replaces older messages of what is sent by a continuation note (src/context); resolves when done. */
    compactor: fromPromise<void, CompactorInput>(async () => {}),
    /**
     * The agent's supervisor: here a stand-in that takes commands and does nothing, so the machine runs alone in
     * tests. The runtime's composition (src/runtime/agent/wiring.ts) provides `spawnSupervisor` with the real one.
     */
    supervisor: fromCallback<SupervisorCommand>(() => {}),
  },
  actions: {
    // Effects, given by the runtime with machine.provide(). They read the context; they never change it.
    startRun: () => {},
    endRun: () => {},
    startTurn: () => {},
    endTurn: () => {},
    /**
     * Opens step `params.step`: announces it, then appends the waiting steers, notifications and feedback to the
     * transcript (the step boundary). Runs before `nextStep` clears them from the context.
     */
    startStep: (_, _params: { step: number }) => {},
    endStep: () => {},
    /** Appends the model's answer (the MODEL_DONE event) to the transcript and accounts its usage. */
    recordAssistant: () => {},
    /** Appends the batch's results, in call order, to the transcript. */
    recordToolResults: () => {},
    announceApprovals: () => {},
    /**
     * Aborts the model call and running tools at once, so that nothing they say later lands in this turn; leaving
     * a run, gives back what its calls held.
     */
    abortInFlight: () => {},
    /** Announces that a budget ended the turn (the `budget_exhausted` event); runs before `endTurn`. */
    announceBudgetExhausted: () => {},
    /**
     * Inputs `params.inputIds` leave the queue without a turn: each caller hears `interrupted`, and nothing of them
     * enters the history. Runs before the assign that removes them.
     */
    settleDropped: (_, _params: { inputIds: string[] }) => {},
    /** The supervisor failed inside the runtime; the agent carries on without it (the runtime reports it). */
    supervisorFailed: () => {},

    /**
     * Spawns the agent's supervisor as its child `supervisor`. The runtime's composition provides it (the
     * supervisor machine spawns agents in turn, so the two are joined in one place: src/runtime/agent/wiring.ts).
     */
    spawnSupervisor: spawnChild('supervisor', { id: 'supervisor' }),
    markSupervising: assign({ supervising: true }),
    /** Hands a command about subagents to the agent's supervisor. */
    delegate: sendTo('supervisor', ({ event }) => command<'DELEGATE'>(event).command),

    /**
     * The step's requests to the agent's worker (`workerRequests` says what each asks), given by the runtime with
     * `servedBy`: the worker answers later, with events (MODEL_DONE, VALIDATED, AUTHORIZED, TOOL_RESULTS...).
     */
    requestModel: () => {},
    requestValidation: () => {},
    requestAuthorization: () => {},
    requestExecution: () => {},
    requestOutputCheck: () => {},

    enqueue: assign({ queue: ({ context, event }) => [...context.queue, command<'PROMPT'>(event).input] }),
    dropInput: assign({
      queue: ({ context, event }) => {
        const { inputId } = command<'CANCEL_INPUT'>(event);
        return context.queue.filter((input) => input.inputId !== inputId);
      },
    }),
    dropQueue: assign({ queue: [] }),
    inject: assign({
      injections: ({ context, event }) => {
        const injected = command<'STEER' | 'NOTIFY'>(event);
        return injected.type === 'NOTIFY'
          ? [...context.injections, ...injected.messages]
          : [...context.injections, injected.message];
      },
    }),
    /** An idle agent woken by notifications: they (and anything else waiting) open the turn, together. */
    wakeWithNotification: assign(({ context, event }) => {
      const { inputId, messages } = command<'NOTIFY'>(event);
      return {
        queue: [...context.queue, { inputId, messages: [...context.injections, ...messages], expectsOutput: false }],
        injections: [],
      };
    }),
    dequeueTurn: assign(({ context }) => ({
      current: context.queue[0],
      queue: context.queue.slice(1),
      turn: context.turn + 1,
      step: 0,
      outputAttempts: 0,
      stopReason: undefined,
      error: undefined,
    })),
    /**
     * The injections were appended by `startStep`; the new step starts with none and no tool batch. An empty list is
     * kept as it is: a new one would tell the session recorder that something was injected.
     */
    nextStep: assign(({ context }) => ({
      step: context.step + 1,
      calls: [],
      injections: context.injections.length === 0 ? context.injections : [],
    })),
    /**
     * A new batch (the worker counts on its number being one more than the last), its calls open; those the worker
     * found invalid as it answered are done with their error, in the same assign.
     */
    takeToolCalls: assign(({ context, event }) => {
      const { message, validated } = reply<'MODEL_DONE'>(event);
      const calls = toolCallsOf(message).map((call): ToolCallState => ({ call, status: 'open' }));
      if (!validated) return { batch: context.batch + 1, calls, validation: undefined };
      return {
        batch: context.batch + 1,
        calls: withValidation(calls, validated.outcomes),
        validation: validated.allowed ? ('allowed' as const) : ('checked' as const),
      };
    }),
    /** Tool calls in an answer cut off by the output limit may be incomplete: each is answered with an error. */
    refuseCutOffCalls: assign(({ context, event }) => ({
      batch: context.batch + 1,
      calls: toolCallsOf(reply<'MODEL_DONE'>(event).message).map(
        (call): ToolCallState => ({ call, status: 'done', result: errorResult(call, CUT_OFF) }),
      ),
    })),
    /** Calls whose arguments failed validation are answered with the error (the others stay open). */
    applyValidation: assign({
      calls: ({ context, event }) => withValidation(context.calls, reply<'VALIDATED'>(event).outcomes),
    }),
    /** Denied calls are answered with an error, calls that ask wait for approval (the allowed stay open). */
    applyDecisions: assign({
      calls: ({ context, event }) => {
        const { decisions } = reply<'AUTHORIZED'>(event);
        // Only the open calls were sent for authorization: a call answered by validation has no decision.
        return context.calls.map((state): ToolCallState => {
          const decision = decisions.find((d) => d.toolCallId === state.call.id);
          if (!decision || decision.decision === 'allow') return state;
          if (decision.decision === 'ask') return { call: state.call, status: 'awaiting' };
          const why = decision.reason ? `: ${decision.reason}` : '';
          return { call: state.call, status: 'done', result: errorResult(state.call, `Permission denied${why}`) };
        });
      },
    }),
    approve: assign({
      calls: ({ context, event }) => {
        const { toolCallId } = command<'APPROVE'>(event);
        return context.calls.map((state) =>
          state.call.id === toolCallId ? { call: state.call, status: 'open' } : state,
        );
      },
    }),
    deny: assign({
      calls: ({ context, event }) => {
        const { toolCallId, reason } = command<'DENY'>(event);
        const text = `The user denied this tool call${reason ? `: ${reason}` : ''}`;
        return context.calls.map((state) =>
          state.call.id === toolCallId
            ? { call: state.call, status: 'done', result: errorResult(state.call, text) }
            : state,
        );
      },
    }),
    takeToolResults: assign({
      calls: ({ context, event }) => {
        const { results } = reply<'TOOL_RESULTS'>(event);
        return context.calls.map((state): ToolCallState => {
          if (state.status !== 'open') return state;
          const answer = results.find((r) => r.toolCallId === state.call.id);
          if (!answer) return state;
          const done: ToolCallState = {
            call: state.call,
            status: 'done',
            result: answer.result,
            terminate: answer.terminate,
          };
          if (answer.halt) done.halt = true;
          return done;
        });
      },
    }),
    closeInterruptedCalls: assign({ calls: ({ context }) => closeOpenCalls(context.calls, INTERRUPTED) }),
    /** The budget ran out: the turn ends with its own stop reason and the error that says which budget. */
    exhaustBudget: assign(({ context, event }) => ({
      calls: closeOpenCalls(context.calls, BUDGET_SPENT),
      stopReason: 'budget_exhausted' as const,
      error: command<'BUDGET_EXHAUSTED'>(event).error,
    })),
    queueOutputFeedback: assign(({ context, event }) => ({
      outputAttempts: context.outputAttempts + 1,
      injections: [
        ...context.injections,
        {
          role: 'user' as const,
          source: 'feedback' as const,
          content: [
            {
              type: 'text' as const,
              text: reply<'OUTPUT_CHECKED'>(event).feedback ?? 'The answer did not match the schema.',
            },
          ],
        },
      ],
    })),
    stopWith: assign((_, params: { reason: NonNullable<AgentContext['stopReason']> }) => ({
      stopReason: params.reason,
    })),
    failWithModelError: assign({ stopReason: 'error', error: ({ event }) => reply<'MODEL_ERROR'>(event).error }),
    tripGuardrail: assign({
      stopReason: 'guardrail_tripped',
      error: ({ event }) => reply<'MODEL_ERROR'>(event).error,
    }),
    /** Calls a beforeToolCall hook answered or refused are done with its result; the others stay open. */
    applyGate: assign({
      calls: ({ context, event }) => {
        const { outcomes } = reply<'GATED'>(event);
        // The gate was sent the open calls only: a call answered earlier has no outcome.
        return context.calls.map((state): ToolCallState => {
          const result = outcomes.find((o) => o.toolCallId === state.call.id)?.result;
          return result ? { call: state.call, status: 'done', result } : state;
        });
      },
    }),
    markCompaction: assign({ compactedAt: ({ context }) => ({ turn: context.turn, step: context.step }) }),
    failWithCompactionError: assign({
      stopReason: 'error',
      error: ({ event }) => {
        const { error } = event as unknown as { error: unknown };
        // A model error (the summary call failed, or there was nothing to compact) keeps its classification.
        if (error instanceof ModelError) return error.toJSON();
        const message = error instanceof Error ? error.message : String(error);
        return { name: 'CompactionError', code: 'compaction_failed', message: `Compaction failed: ${message}` };
      },
    }),
    failWithInvalidOutput: assign(({ context }) => ({
      stopReason: 'error' as const,
      error: {
        name: 'OutputValidationError',
        code: 'output_invalid',
        message: `The final answer did not match the output schema after ${context.outputAttempts + 1} attempts`,
      },
    })),
  },
  guards: agentGuards,
});
