import { type ActorRefFrom, and, assign, fromCallback, fromPromise, sendTo, setup, spawnChild } from 'xstate';
import type { SupervisorCommand } from '../../src/protocol/index.js';
import { errorResult, ModelError, toolCallsOf } from '../../src/protocol/index.js';
import type {
  AgentCommand,
  AgentContext,
  AgentMachineEvent,
  AgentMachineInput,
  CompactorInput,
  ModelWorkerRequest,
  ToolCallState,
  ToolWorkerRequest,
  TurnInput,
  WorkerReply,
} from './types.js';

type Reply<T extends WorkerReply['type']> = Extract<WorkerReply, { type: T }>;
type Command<T extends AgentCommand['type']> = Extract<AgentCommand, { type: T }>;

/** Input every worker gets: which agent it serves. The runtime resolves the rest. */
export interface WorkerInput {
  agentId: string;
}

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

/** The input of the turn in progress: `dequeueTurn` sets it before any step of the turn runs. */
const turnInput = (context: AgentContext) => context.current as TurnInput;

function isCurrentModelReply(context: AgentContext, event: { turn: number; step: number }): boolean {
  return event.turn === context.turn && event.step === context.step;
}

function compactedThisStep(context: AgentContext): boolean {
  return context.compactedAt?.turn === context.turn && context.compactedAt.step === context.step;
}

function hasToolCalls(event: Reply<'MODEL_DONE'>): boolean {
  return event.message.content.some((part) => part.type === 'tool_call');
}

function callsWith(calls: ToolCallState[], status: ToolCallState['status']) {
  return calls.filter((state) => state.status === status).map((state) => state.call);
}

// Guards and assigns read the event they are given directly. The narrowing below is what the transition they sit
// on guarantees; `params: ({ event }) => ({ event })` would say the same at the price of an object per evaluation,
// and these run several times per step.
const reply = <T extends WorkerReply['type']>(event: AgentMachineEvent) => event as Reply<T>;
const command = <T extends AgentCommand['type']>(event: AgentMachineEvent) => event as Command<T>;

/** A result is taken only for a call of the current batch that is still open (allowed and not yet answered). */
function isOpen(context: AgentContext, batch: number, toolCallId: string): boolean {
  return (
    batch === context.batch && context.calls.some((state) => state.call.id === toolCallId && state.status === 'open')
  );
}

/**
 * The turn goes round again: a new step, unless the step limit is reached. The hot path (finalizing a tool batch)
 * takes it directly, other paths through `between`, so every way round checks the limit the same way.
 */
const goRound = [
  {
    guard: 'stepLimitReached',
    target: '#agent.running.nextTurn',
    actions: [{ type: 'stopWith', params: { reason: 'max_steps' } }, 'endTurn'],
  },
  { target: '#agent.running.turn.step', reenter: true },
] as const;

/** The model's answer, taken in `model` or, after the afterModelCall hooks, in `reviewing`. */
const modelAnswer = [
  {
    guard: 'isCurrentCutOffToolAnswer',
    target: '#agent.running.turn.step.tools.finalizing',
    actions: ['recordAssistant', 'refuseCutOffCalls'],
  },
  {
    guard: 'isCurrentToolAnswer',
    target: '#agent.running.turn.step.tools',
    actions: ['recordAssistant', 'takeToolCalls'],
  },
  { guard: 'isCurrentModelReply', target: '#agent.running.turn.step.answered', actions: 'recordAssistant' },
] as const;

/**
 * The model call failed. A tripped guardrail ends the turn with its own stop reason (the agent carries on with the
 * next input, it did not fail); any other error fails the turn.
 */
const modelFailure = [
  {
    guard: 'isCurrentGuardrailTrip',
    target: '#agent.running.nextTurn',
    actions: ['tripGuardrail', 'endTurn'],
  },
  { guard: 'isCurrentModelReply', target: '#agent.failed', actions: 'failWithModelError' },
] as const;

/**
 * One agent: a turn runs steps until the model answers without tool calls; each step asks the model, then moves
 * its tool batch through validate → authorize (→ await approval) → execute → finalize. Every effect is a named
 * action or a long-lived worker given by the runtime, so this file runs unchanged in pure transition tests.
 *
 * The chart is shaped for the cost of a step, which XState charges per microstep and per assign (each clones the
 * snapshot): a step with tools is five microsteps (model → validating → authorizing → executing → finalizing →
 * the next step) and three assigns (the step counter, the calls, their results): phases that every call passes
 * change nothing in the context.
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentMachineEvent,
    input: {} as AgentMachineInput,
  },
  actors: {
    /** Streams model answers: takes MODEL_REQUEST, replies MODEL_DONE / MODEL_ERROR. */
    modelWorker: fromCallback<ModelWorkerRequest, WorkerInput>(() => {}),
    /** Validates, authorizes and runs tool calls: takes VALIDATE / AUTHORIZE / EXECUTE / CHECK_OUTPUT. */
    toolWorker: fromCallback<ToolWorkerRequest, WorkerInput>(() => {}),
    /** Replaces older messages of what is sent by a continuation note (src/context); resolves when done. */
    compactor: fromPromise<void, CompactorInput>(async () => {}),
    /**
     * The agent's supervisor: here a stand-in that takes commands and does nothing, so the machine runs alone in
     * tests. The runtime's composition (src/runtime/machines.ts) provides `spawnSupervisor` with the real one.
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
    /** Aborts the model call and running tools at once, so that nothing they say later lands in this turn. */
    abortInFlight: () => {},
    /** Announces that a budget ended the turn (the `budget_exhausted` event); runs before `endTurn`. */
    announceBudgetExhausted: () => {},
    /** The supervisor failed inside the runtime; the agent carries on without it (the runtime reports it). */
    supervisorFailed: () => {},

    /**
     * Spawns the agent's supervisor as its child `supervisor`. The runtime's composition provides it (the
     * supervisor machine spawns agents in turn, so the two are joined in one place: src/runtime/machines.ts).
     */
    spawnSupervisor: spawnChild('supervisor', { id: 'supervisor' }),
    markSupervising: assign({ supervising: true }),
    /** Hands a command about subagents to the agent's supervisor. */
    delegate: sendTo('supervisor', ({ event }) => command<'DELEGATE'>(event).command),

    requestModel: sendTo(
      'worker.model',
      ({ context }): ModelWorkerRequest => ({
        type: 'MODEL_REQUEST',
        turn: context.turn,
        step: context.step,
        inputId: turnInput(context).inputId,
        mayCompact: !compactedThisStep(context),
      }),
    ),
    requestValidation: sendTo(
      'worker.tools',
      ({ context }): ToolWorkerRequest => ({
        type: 'VALIDATE',
        batch: context.batch,
        calls: context.calls.map((state) => state.call),
      }),
    ),
    requestAuthorization: sendTo(
      'worker.tools',
      ({ context }): ToolWorkerRequest => ({
        type: 'AUTHORIZE',
        batch: context.batch,
        calls: callsWith(context.calls, 'open'),
      }),
    ),
    requestExecution: sendTo(
      'worker.tools',
      ({ context }): ToolWorkerRequest => ({
        type: 'EXECUTE',
        batch: context.batch,
        calls: callsWith(context.calls, 'open'),
      }),
    ),
    requestOutputCheck: sendTo(
      'worker.tools',
      ({ context }): ToolWorkerRequest => ({
        type: 'CHECK_OUTPUT',
        turn: context.turn,
        inputId: turnInput(context).inputId,
      }),
    ),

    enqueue: assign({ queue: ({ context, event }) => [...context.queue, command<'PROMPT'>(event).input] }),
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
    takeToolCalls: assign(({ context, event }) => ({
      batch: context.batch + 1,
      calls: toolCallsOf(reply<'MODEL_DONE'>(event).message).map((call): ToolCallState => ({ call, status: 'open' })),
    })),
    /** Tool calls in an answer cut off by the output limit may be incomplete: each is answered with an error. */
    refuseCutOffCalls: assign(({ context, event }) => ({
      batch: context.batch + 1,
      calls: toolCallsOf(reply<'MODEL_DONE'>(event).message).map(
        (call): ToolCallState => ({ call, status: 'done', result: errorResult(call, CUT_OFF) }),
      ),
    })),
    /** Calls whose arguments failed validation are answered with the error (the others stay open). */
    applyValidation: assign({
      calls: ({ context, event }) => {
        const { outcomes } = reply<'VALIDATED'>(event);
        // Every call is open while the batch validates; the worker answers each of them.
        return context.calls.map((state): ToolCallState => {
          // Stryker disable next-line OptionalChaining: the tool worker gives an outcome for every call it was sent
          const error = outcomes.find((o) => o.toolCallId === state.call.id)?.error;
          return error ? { call: state.call, status: 'done', result: error } : state;
        });
      },
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
  guards: {
    isCurrentModelReply: ({ context, event }) => isCurrentModelReply(context, reply<'MODEL_DONE'>(event)),
    /** The provider says the request is too long, and this step has not compacted yet: compact and retry once. */
    isCurrentOverflow: ({ context, event }) => {
      const failed = reply<'MODEL_ERROR'>(event);
      return (
        failed.error.code === 'context_overflow' && isCurrentModelReply(context, failed) && !compactedThisStep(context)
      );
    },
    isCurrentToolAnswer: ({ context, event }) =>
      isCurrentModelReply(context, reply<'MODEL_DONE'>(event)) && hasToolCalls(reply<'MODEL_DONE'>(event)),
    /** Tool calls in an answer cut off by the output limit may be incomplete. */
    isCurrentCutOffToolAnswer: ({ context, event }) => {
      const done = reply<'MODEL_DONE'>(event);
      return done.message.stopReason === 'length' && isCurrentModelReply(context, done) && hasToolCalls(done);
    },
    isCurrentGuardrailTrip: ({ context, event }) => {
      const failed = reply<'MODEL_ERROR'>(event);
      return failed.error.code === 'guardrail_tripped' && isCurrentModelReply(context, failed);
    },
    isCurrentBatch: ({ context, event }) => reply<'VALIDATED'>(event).batch === context.batch,
    /**
     * The worker validated this batch and nothing can refuse or hold its calls. Read by `authorizing`'s `always`
     * too, where the event is the one of the macrostep: only the VALIDATED that entered it says `allowed`.
     */
    isAllowedBatch: ({ context, event }) => {
      // Only a VALIDATED carries `allowed`: any other event of the macrostep reads `undefined` here.
      const validated = reply<'VALIDATED'>(event);
      return validated.allowed === true && validated.batch === context.batch;
    },
    allCallsInvalid: ({ context, event }) => {
      const { batch, outcomes } = reply<'VALIDATED'>(event);
      return batch === context.batch && outcomes.filter((outcome) => outcome.error).length === context.calls.length;
    },
    anyInvalid: ({ context, event }) => {
      const { batch, outcomes } = reply<'VALIDATED'>(event);
      return batch === context.batch && outcomes.some((outcome) => outcome.error);
    },
    anyAsks: ({ context, event }) => {
      const { batch, decisions } = reply<'AUTHORIZED'>(event);
      return batch === context.batch && decisions.some((d) => d.decision === 'ask');
    },
    anyDenied: ({ context, event }) => {
      const { batch, decisions } = reply<'AUTHORIZED'>(event);
      return batch === context.batch && decisions.some((d) => d.decision !== 'allow');
    },
    isAwaiting: ({ context, event }) => {
      const { toolCallId } = command<'APPROVE' | 'DENY'>(event);
      return context.calls.some((state) => state.call.id === toolCallId && state.status === 'awaiting');
    },
    noneAwaiting: ({ context }) => !context.calls.some((state) => state.status === 'awaiting'),
    /** Some of the results answer open calls of this batch. */
    answersOpenCalls: ({ context, event }) => {
      const { batch, results } = reply<'TOOL_RESULTS'>(event);
      return results.some((r) => isOpen(context, batch, r.toolCallId));
    },
    /**
     * The results answer the last open calls of this batch. In `executing` a call is open or done, and one at least
     * is open (`allDone` leaves it otherwise).
     */
    completesBatch: ({ context, event }) => {
      const { batch, results } = reply<'TOOL_RESULTS'>(event);
      return (
        batch === context.batch &&
        context.calls.every((state) => state.status === 'done' || results.some((r) => r.toolCallId === state.call.id))
      );
    },
    allDone: ({ context }) => context.calls.every((state) => state.status === 'done'),
    anyHalts: ({ context }) => context.calls.some((state) => state.halt === true),
    // A batch that reaches `finalizing` has one call at least: the model's answer had tool calls.
    allTerminate: ({ context }) => context.calls.every((state) => state.terminate === true),
    hasInjections: ({ context }) => context.injections.length > 0,
    expectsOutput: ({ context }) => turnInput(context).expectsOutput,
    isValidOutput: ({ context, event }) => {
      const checked = reply<'OUTPUT_CHECKED'>(event);
      return checked.turn === context.turn && checked.ok;
    },
    canRetryOutput: ({ context, event }) =>
      reply<'OUTPUT_CHECKED'>(event).turn === context.turn && context.outputAttempts + 1 < context.maxOutputAttempts,
    isCurrentTurn: ({ context, event }) => reply<'OUTPUT_CHECKED'>(event).turn === context.turn,
    /** A budget message about this turn (one about a turn already over is dropped). */
    isBudgetOfThisTurn: ({ context, event }) => command<'BUDGET_EXHAUSTED'>(event).turn === context.turn,
    stepLimitReached: ({ context }) => context.step >= context.maxSteps,
    hasQueuedInput: ({ context }) => context.queue.length > 0,
    wakesOnNotification: ({ context, event }) => context.wakeOnNotification && command<'NOTIFY'>(event).wake !== false,
    isSupervising: ({ context }) => context.supervising,
  },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({
    agentId: input.agentId,
    parentId: input.parentId,
    maxSteps: input.maxSteps ?? 25,
    maxOutputAttempts: input.maxOutputAttempts ?? 3,
    wakeOnNotification: input.wakeOnNotification ?? true,
    turn: 0,
    step: 0,
    batch: 0,
    queue: [],
    injections: [],
    calls: [],
    outputAttempts: 0,
    supervising: false,
  }),

  on: {
    // Subagents are commanded through their owner: its supervisor is created with the first command.
    DELEGATE: [
      { guard: 'isSupervising', actions: 'delegate' },
      { actions: ['spawnSupervisor', 'markSupervising', 'delegate'] },
    ],
    // A supervisor that fails must not take its agent down: an unhandled child error would put it in `error`.
    'xstate.error.actor.supervisor': { actions: 'supervisorFailed' },
  },
  initial: 'idle',
  states: {
    idle: {
      on: {
        PROMPT: { target: 'running', actions: ['enqueue', 'startRun'] },
        STEER: { actions: 'inject' },
        NOTIFY: [
          { guard: 'wakesOnNotification', target: 'running', actions: ['wakeWithNotification', 'startRun'] },
          { actions: 'inject' },
        ],
      },
    },
    running: {
      // The workers live as long as a run and take requests as events: invoking an actor per request costs several
      // times more than sending one an event, while starting them per run costs ~50 µs once and halves what an
      // idle agent (a finished subagent kept for resume) holds in memory.
      invoke: [
        { id: 'worker.model', src: 'modelWorker', input: ({ context }) => ({ agentId: context.agentId }) },
        { id: 'worker.tools', src: 'toolWorker', input: ({ context }) => ({ agentId: context.agentId }) },
      ],
      initial: 'nextTurn',
      on: {
        PROMPT: { actions: 'enqueue' },
        STEER: { actions: 'inject' },
        NOTIFY: { actions: 'inject' },
        INTERRUPT: '#agent.interrupted',
        // A guard on the event only: agents without budgets never see it, so the hot path pays nothing.
        BUDGET_EXHAUSTED: { guard: 'isBudgetOfThisTurn', target: '#agent.budgetExhausted' },
      },
      states: {
        nextTurn: {
          always: [
            { guard: 'hasQueuedInput', target: 'turn', actions: ['dequeueTurn', 'startTurn'] },
            { target: '#agent.idle', actions: 'endRun' },
          ],
        },
        turn: {
          initial: 'step',
          states: {
            /** The turn goes round again after a final answer (a steer arrived, or the output needs a retry). */
            between: { always: [...goRound] },
            step: {
              // The step boundary: steers, notifications and feedback join the history before the model call.
              // The model is asked on the step's entry rather than `model`'s: the way back from `preparing` must
              // not ask twice.
              entry: [
                { type: 'startStep', params: ({ context }) => ({ step: context.step + 1 }) },
                'nextStep',
                'requestModel',
              ],
              exit: 'endStep',
              initial: 'model',
              states: {
                /**
                 * The model call waits on hooks: the turn's input checks (first step) and beforeModelCall, which
                 * may change the request. Entered only when the model worker says it has hooks to run.
                 */
                preparing: {
                  on: {
                    PREPARED: { guard: 'isCurrentModelReply', target: 'model' },
                    MODEL_ERROR: [...modelFailure],
                  },
                },
                model: {
                  on: {
                    PREPARING: { guard: 'isCurrentModelReply', target: 'preparing' },
                    REVIEWING: { guard: 'isCurrentModelReply', target: 'reviewing' },
                    MODEL_DONE: [...modelAnswer],
                    CONTEXT_FULL: { guard: 'isCurrentModelReply', target: 'compacting', actions: 'markCompaction' },
                    MODEL_ERROR: [
                      { guard: 'isCurrentOverflow', target: 'compacting', actions: 'markCompaction' },
                      // Hooks fail only while the step waits on them (preparing, reviewing): no guardrail here.
                      { guard: 'isCurrentModelReply', target: '#agent.failed', actions: 'failWithModelError' },
                    ],
                  },
                },
                /** The answer is in; the afterModelCall hooks (output checks) may change or reject it. */
                reviewing: {
                  on: {
                    MODEL_DONE: [...modelAnswer],
                    MODEL_ERROR: [...modelFailure],
                  },
                },
                /**
                 * Older messages are summarised before the model is called (the request would pass the threshold,
                 * or the provider refused it as too long); then the call is made again, at most once per step.
                 */
                compacting: {
                  invoke: {
                    id: 'compactor',
                    src: 'compactor',
                    input: ({ context, event }) => ({
                      agentId: context.agentId,
                      reason: event.type === 'CONTEXT_FULL' ? 'threshold' : 'overflow',
                    }),
                    onDone: { target: 'model', actions: 'requestModel' },
                    onError: { target: '#agent.failed', actions: 'failWithCompactionError' },
                  },
                },
                /** The model answered without tool calls: the turn ends unless something new arrived meanwhile. */
                answered: {
                  always: [
                    { guard: 'hasInjections', target: '#agent.running.turn.between' },
                    { guard: 'expectsOutput', target: 'checkingOutput' },
                    {
                      target: '#agent.running.nextTurn',
                      actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn'],
                    },
                  ],
                },
                checkingOutput: {
                  entry: 'requestOutputCheck',
                  on: {
                    OUTPUT_CHECKED: [
                      {
                        guard: 'isValidOutput',
                        target: '#agent.running.nextTurn',
                        actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn'],
                      },
                      {
                        guard: 'canRetryOutput',
                        target: '#agent.running.turn.between',
                        actions: 'queueOutputFeedback',
                      },
                      {
                        guard: 'isCurrentTurn',
                        target: '#agent.running.nextTurn',
                        actions: ['failWithInvalidOutput', 'endTurn'],
                      },
                    ],
                  },
                },
                tools: {
                  initial: 'validating',
                  states: {
                    validating: {
                      entry: 'requestValidation',
                      on: {
                        // Authorization is requested on the way in, not on entry: a batch nothing can refuse (the
                        // worker says `allowed`) passes `authorizing` without a request (see
                        // docs/architecture/xstate.md).
                        VALIDATED: [
                          { guard: 'allCallsInvalid', target: 'finalizing', actions: 'applyValidation' },
                          {
                            guard: and(['isAllowedBatch', 'anyInvalid']),
                            target: 'authorizing',
                            actions: 'applyValidation',
                          },
                          // Every call valid: nothing to record (an assign would clone the snapshot for nothing).
                          { guard: 'isAllowedBatch', target: 'authorizing' },
                          {
                            guard: 'anyInvalid',
                            target: 'authorizing',
                            actions: ['applyValidation', 'requestAuthorization'],
                          },
                          { guard: 'isCurrentBatch', target: 'authorizing', actions: 'requestAuthorization' },
                        ],
                      },
                    },
                    authorizing: {
                      // Nothing can refuse or hold a call: every valid call is allowed, in the same macrostep.
                      always: { guard: 'isAllowedBatch', target: 'executing', actions: 'requestExecution' },
                      on: {
                        AUTHORIZED: [
                          { guard: 'anyAsks', target: 'awaitingApproval', actions: 'applyDecisions' },
                          {
                            guard: 'anyDenied',
                            target: 'executing',
                            actions: ['applyDecisions', 'requestExecution'],
                          },
                          { guard: 'isCurrentBatch', target: 'executing', actions: 'requestExecution' },
                        ],
                      },
                    },
                    awaitingApproval: {
                      entry: 'announceApprovals',
                      on: {
                        APPROVE: { guard: 'isAwaiting', actions: 'approve' },
                        DENY: { guard: 'isAwaiting', actions: 'deny' },
                      },
                      always: { guard: 'noneAwaiting', target: 'executing', actions: 'requestExecution' },
                    },
                    /**
                     * The allowed calls wait on the beforeToolCall hooks (the tool worker says so with GATING): a
                     * hook may change a call's arguments, answer it, or refuse it. Calls it lets through run next.
                     */
                    gating: {
                      on: {
                        GATED: { guard: 'isCurrentBatch', target: 'executing', actions: 'applyGate' },
                      },
                    },
                    // Execution is requested on the way in, not on entry: the way back from `gating` must not ask
                    // twice (the tool worker runs what the gate let through itself).
                    executing: {
                      on: {
                        GATING: { guard: 'isCurrentBatch', target: 'gating' },
                        // The last results go straight to finalizing: one microstep, not a take and then an `always`.
                        TOOL_RESULTS: [
                          { guard: 'completesBatch', target: 'finalizing', actions: 'takeToolResults' },
                          { guard: 'answersOpenCalls', actions: 'takeToolResults' },
                        ],
                      },
                      // Every call was denied or invalid: nothing runs.
                      always: { guard: 'allDone', target: 'finalizing' },
                    },
                    finalizing: {
                      entry: 'recordToolResults',
                      always: [
                        {
                          guard: 'anyHalts',
                          target: '#agent.running.nextTurn',
                          actions: [{ type: 'stopWith', params: { reason: 'repetition' } }, 'endTurn'],
                        },
                        {
                          guard: 'allTerminate',
                          target: '#agent.running.nextTurn',
                          actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn'],
                        },
                        ...goRound,
                      ],
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    /** The turn was interrupted: in-flight work is aborted and every open tool call gets a result. */
    interrupted: {
      entry: [
        'abortInFlight',
        'closeInterruptedCalls',
        'recordToolResults',
        { type: 'stopWith', params: { reason: 'interrupted' } },
        'endTurn',
      ],
      always: [
        { guard: 'hasQueuedInput', target: 'running' },
        { target: 'idle', actions: 'endRun' },
      ],
    },
    /**
     * A budget covering the turn ran out: like an interrupt (the model call and the tools are aborted, foreground
     * subagents with them, every open call gets a result), with the stop reason `budget_exhausted`. Subagents below
     * are told by their own budgets, background ones included.
     */
    budgetExhausted: {
      entry: ['abortInFlight', 'exhaustBudget', 'recordToolResults', 'announceBudgetExhausted', 'endTurn'],
      always: [
        { guard: 'hasQueuedInput', target: 'running' },
        { target: 'idle', actions: 'endRun' },
      ],
    },
    /** The model failed after its retries; the error is in context and every completed message is kept. */
    failed: {
      entry: 'endTurn',
      always: [
        { guard: 'hasQueuedInput', target: 'running' },
        { target: 'idle', actions: 'endRun' },
      ],
    },
  },
});

export type AgentMachine = typeof agentMachine;
export type AgentActorRef = ActorRefFrom<AgentMachine>;
