import { type ActorRefFrom, assign, fromCallback, sendTo, setup, spawnChild } from 'xstate';
import { errorResult, toolCallsOf } from '../../src/protocol/index.js';
import { supervisorMachine } from '../supervisor.js';
import type {
  AgentCommand,
  AgentContext,
  AgentMachineEvent,
  AgentMachineInput,
  ModelWorkerRequest,
  ToolCallState,
  ToolWorkerRequest,
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

function closeOpenCalls(calls: ToolCallState[], text: string): ToolCallState[] {
  return calls.map((state) =>
    state.status === 'done' ? state : { ...state, status: 'done', result: errorResult(state.call, text) },
  );
}

function updateCall(calls: ToolCallState[], toolCallId: string, patch: Partial<ToolCallState>): ToolCallState[] {
  return calls.map((state) => (state.call.id === toolCallId ? { ...state, ...patch } : state));
}

function isCurrentModelReply(context: AgentContext, event: { turn: number; step: number }): boolean {
  return event.turn === context.turn && event.step === context.step;
}

function hasToolCalls(event: Reply<'MODEL_DONE'>): boolean {
  return event.message.content.some((part) => part.type === 'tool_call');
}

function callsWith(calls: ToolCallState[], status: ToolCallState['status']) {
  return calls.filter((state) => state.status === status).map((state) => state.call);
}

/**
 * One agent: a turn runs steps until the model answers without tool calls; each step asks the model, then moves
 * its tool batch through validate → authorize (→ await approval) → execute → finalize. Every effect is a named
 * action or a long-lived worker given by the runtime, so this file runs unchanged in pure transition tests.
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
    /** The agent's supervisor for its subagents: a child created when first needed (SUPERVISE). */
    supervisor: supervisorMachine,
  },
  actions: {
    // Effects, given by the runtime with machine.provide(). They read the context; they never change it.
    startRun: () => {},
    endRun: () => {},
    startTurn: () => {},
    endTurn: () => {},
    startStep: () => {},
    endStep: () => {},
    /** Appends the waiting steers, notifications and feedback to the transcript. */
    flushInjections: () => {},
    /** Appends the model's answer to the transcript and accounts its usage. */
    recordAssistant: (_, _params: { event: Reply<'MODEL_DONE'> }) => {},
    /** Appends the batch's results, in call order, to the transcript. */
    recordToolResults: () => {},
    announceApprovals: () => {},
    /** Aborts the model call and running tools at once, so that nothing they say later lands in this turn. */
    abortInFlight: () => {},
    /** The supervisor failed inside the runtime; the agent carries on without it (the runtime reports it). */
    supervisorFailed: () => {},

    spawnSupervisor: spawnChild('supervisor', {
      id: 'supervisor',
      input: ({ event }) => (event as Command<'SUPERVISE'>).input,
    }),

    requestModel: sendTo(
      'worker.model',
      ({ context }): ModelWorkerRequest => ({
        type: 'MODEL_REQUEST',
        turn: context.turn,
        step: context.step,
        inputId: context.current?.inputId ?? '',
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
        calls: callsWith(context.calls, 'validated'),
      }),
    ),
    requestExecution: sendTo(
      'worker.tools',
      ({ context }): ToolWorkerRequest => ({
        type: 'EXECUTE',
        batch: context.batch,
        calls: callsWith(context.calls, 'executing'),
      }),
    ),
    requestOutputCheck: sendTo(
      'worker.tools',
      ({ context }): ToolWorkerRequest => ({
        type: 'CHECK_OUTPUT',
        turn: context.turn,
        inputId: context.current?.inputId ?? '',
      }),
    ),

    enqueue: assign({
      queue: ({ context }, params: { event: Command<'PROMPT'> }) => [...context.queue, params.event.input],
    }),
    inject: assign({
      injections: ({ context }, params: { event: Command<'STEER'> | Command<'NOTIFY'> }) => [
        ...context.injections,
        params.event.message,
      ],
    }),
    /** An idle agent woken by a notification: the notification (and anything else waiting) opens the turn. */
    wakeWithNotification: assign(({ context }, params: { event: Command<'NOTIFY'> }) => ({
      queue: [
        ...context.queue,
        {
          inputId: params.event.inputId,
          messages: [...context.injections, params.event.message],
          expectsOutput: false,
        },
      ],
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
      calls: [],
    })),
    nextStep: assign({ step: ({ context }) => context.step + 1, calls: [] }),
    clearInjections: assign({ injections: [] }),
    takeToolCalls: assign(({ context }, params: { event: Reply<'MODEL_DONE'> }) => ({
      batch: context.batch + 1,
      calls: toolCallsOf(params.event.message).map((call): ToolCallState => ({ call, status: 'pending' })),
    })),
    /** A tool call cut off by the output limit is incomplete: it is answered with an error, never run. */
    refuseCutOffCalls: assign({ calls: ({ context }) => closeOpenCalls(context.calls, CUT_OFF) }),
    applyValidation: assign({
      calls: ({ context }, params: { event: Reply<'VALIDATED'> }) => {
        const failures = new Map(params.event.outcomes.map((outcome) => [outcome.toolCallId, outcome.error]));
        return context.calls.map((state): ToolCallState => {
          if (state.status !== 'pending') return state;
          const error = failures.get(state.call.id);
          return error ? { ...state, status: 'done', result: error } : { ...state, status: 'validated' };
        });
      },
    }),
    applyDecisions: assign({
      calls: ({ context }, params: { event: Reply<'AUTHORIZED'> }) => {
        const decisions = new Map(params.event.decisions.map((d) => [d.toolCallId, d]));
        return context.calls.map((state): ToolCallState => {
          const decision = decisions.get(state.call.id);
          if (state.status !== 'validated' || !decision) return state;
          if (decision.decision === 'allow') return { ...state, status: 'allowed' };
          if (decision.decision === 'ask') return { ...state, status: 'awaiting' };
          const why = decision.reason ? `: ${decision.reason}` : '';
          return { ...state, status: 'done', result: errorResult(state.call, `Permission denied${why}`) };
        });
      },
    }),
    approve: assign({
      calls: ({ context }, params: { event: Command<'APPROVE'> }) =>
        updateCall(context.calls, params.event.toolCallId, { status: 'allowed' }),
    }),
    deny: assign({
      calls: ({ context }, params: { event: Command<'DENY'> }) => {
        const state = context.calls.find((s) => s.call.id === params.event.toolCallId);
        if (!state) return context.calls;
        const why = params.event.reason ? `: ${params.event.reason}` : '';
        return updateCall(context.calls, state.call.id, {
          status: 'done',
          result: errorResult(state.call, `The user denied this tool call${why}`),
        });
      },
    }),
    markExecuting: assign({
      calls: ({ context }) =>
        context.calls.map(
          (state): ToolCallState => (state.status === 'allowed' ? { ...state, status: 'executing' } : state),
        ),
    }),
    takeToolResult: assign({
      calls: ({ context }, params: { event: Reply<'TOOL_RESULT'> }) =>
        updateCall(context.calls, params.event.toolCallId, {
          status: 'done',
          result: params.event.result,
          terminate: params.event.terminate,
        }),
    }),
    closeInterruptedCalls: assign({ calls: ({ context }) => closeOpenCalls(context.calls, INTERRUPTED) }),
    queueOutputFeedback: assign(({ context }, params: { event: Reply<'OUTPUT_CHECKED'> }) => ({
      outputAttempts: context.outputAttempts + 1,
      injections: [
        ...context.injections,
        {
          role: 'user' as const,
          source: 'feedback' as const,
          content: [{ type: 'text' as const, text: params.event.feedback ?? 'The answer did not match the schema.' }],
        },
      ],
    })),
    stopWith: assign((_, params: { reason: NonNullable<AgentContext['stopReason']> }) => ({
      stopReason: params.reason,
    })),
    failWithModelError: assign({
      stopReason: 'error',
      error: (_, params: { event: Reply<'MODEL_ERROR'> }) => params.event.error,
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
    isCurrentModelReply: ({ context }, params: { event: Reply<'MODEL_DONE'> | Reply<'MODEL_ERROR'> }) =>
      isCurrentModelReply(context, params.event),
    isCurrentToolAnswer: ({ context }, params: { event: Reply<'MODEL_DONE'> }) =>
      isCurrentModelReply(context, params.event) && hasToolCalls(params.event),
    /** Tool calls in an answer cut off by the output limit may be incomplete. */
    isCurrentCutOffToolAnswer: ({ context }, params: { event: Reply<'MODEL_DONE'> }) =>
      isCurrentModelReply(context, params.event) &&
      hasToolCalls(params.event) &&
      params.event.message.stopReason === 'length',
    isCurrentBatch: ({ context }, params: { batch: number }) => params.batch === context.batch,
    allCallsInvalid: ({ context }, params: { event: Reply<'VALIDATED'> }) =>
      params.event.batch === context.batch &&
      params.event.outcomes.filter((outcome) => outcome.error).length === context.calls.length,
    anyAsks: ({ context }, params: { event: Reply<'AUTHORIZED'> }) =>
      params.event.batch === context.batch && params.event.decisions.some((d) => d.decision === 'ask'),
    isAwaiting: ({ context }, params: { toolCallId: string }) =>
      context.calls.some((state) => state.call.id === params.toolCallId && state.status === 'awaiting'),
    noneAwaiting: ({ context }) => !context.calls.some((state) => state.status === 'awaiting'),
    isOpenResult: ({ context }, params: { event: Reply<'TOOL_RESULT'> }) =>
      params.event.batch === context.batch &&
      context.calls.some((state) => state.call.id === params.event.toolCallId && state.status === 'executing'),
    allDone: ({ context }) => context.calls.every((state) => state.status === 'done'),
    allTerminate: ({ context }) => context.calls.length > 0 && context.calls.every((state) => state.terminate === true),
    hasInjections: ({ context }) => context.injections.length > 0,
    expectsOutput: ({ context }) => context.current?.expectsOutput === true,
    isValidOutput: ({ context }, params: { event: Reply<'OUTPUT_CHECKED'> }) =>
      params.event.turn === context.turn && params.event.ok,
    canRetryOutput: ({ context }, params: { event: Reply<'OUTPUT_CHECKED'> }) =>
      params.event.turn === context.turn && context.outputAttempts + 1 < context.maxOutputAttempts,
    isCurrentTurn: ({ context }, params: { event: Reply<'OUTPUT_CHECKED'> }) => params.event.turn === context.turn,
    stepLimitReached: ({ context }) => context.step >= context.maxSteps,
    hasQueuedInput: ({ context }) => context.queue.length > 0,
    wakesOnNotification: ({ context }) => context.wakeOnNotification,
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
  }),

  on: {
    SUPERVISE: { actions: 'spawnSupervisor' },
    // A supervisor that fails must not take its agent down: an unhandled child error would put it in `error`.
    'xstate.error.actor.supervisor': { actions: 'supervisorFailed' },
  },
  initial: 'idle',
  states: {
    idle: {
      on: {
        PROMPT: { target: 'running', actions: [{ type: 'enqueue', params: ({ event }) => ({ event }) }, 'startRun'] },
        STEER: { actions: { type: 'inject', params: ({ event }) => ({ event }) } },
        NOTIFY: [
          {
            guard: 'wakesOnNotification',
            target: 'running',
            actions: [{ type: 'wakeWithNotification', params: ({ event }) => ({ event }) }, 'startRun'],
          },
          { actions: { type: 'inject', params: ({ event }) => ({ event }) } },
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
        PROMPT: { actions: { type: 'enqueue', params: ({ event }) => ({ event }) } },
        STEER: { actions: { type: 'inject', params: ({ event }) => ({ event }) } },
        NOTIFY: { actions: { type: 'inject', params: ({ event }) => ({ event }) } },
        INTERRUPT: '#agent.interrupted',
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
            /** Between two steps: the step limit is checked here, whatever sent the turn round again. */
            between: {
              always: [
                {
                  guard: 'stepLimitReached',
                  target: '#agent.running.nextTurn',
                  actions: [{ type: 'stopWith', params: { reason: 'max_steps' } }, 'endTurn'],
                },
                { target: 'step' },
              ],
            },
            step: {
              entry: ['nextStep', 'startStep'],
              exit: 'endStep',
              initial: 'prepare',
              states: {
                prepare: {
                  // The step boundary: steers, notifications and feedback join the history before the model call.
                  entry: ['flushInjections', 'clearInjections'],
                  always: 'model',
                },
                model: {
                  entry: 'requestModel',
                  on: {
                    MODEL_DONE: [
                      {
                        guard: { type: 'isCurrentCutOffToolAnswer', params: ({ event }) => ({ event }) },
                        target: 'tools.finalizing',
                        actions: [
                          { type: 'recordAssistant', params: ({ event }) => ({ event }) },
                          { type: 'takeToolCalls', params: ({ event }) => ({ event }) },
                          'refuseCutOffCalls',
                        ],
                      },
                      {
                        guard: { type: 'isCurrentToolAnswer', params: ({ event }) => ({ event }) },
                        target: 'tools',
                        actions: [
                          { type: 'recordAssistant', params: ({ event }) => ({ event }) },
                          { type: 'takeToolCalls', params: ({ event }) => ({ event }) },
                        ],
                      },
                      {
                        guard: { type: 'isCurrentModelReply', params: ({ event }) => ({ event }) },
                        target: 'answered',
                        actions: { type: 'recordAssistant', params: ({ event }) => ({ event }) },
                      },
                    ],
                    MODEL_ERROR: {
                      guard: { type: 'isCurrentModelReply', params: ({ event }) => ({ event }) },
                      target: '#agent.failed',
                      actions: { type: 'failWithModelError', params: ({ event }) => ({ event }) },
                    },
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
                        guard: { type: 'isValidOutput', params: ({ event }) => ({ event }) },
                        target: '#agent.running.nextTurn',
                        actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn'],
                      },
                      {
                        guard: { type: 'canRetryOutput', params: ({ event }) => ({ event }) },
                        target: '#agent.running.turn.between',
                        actions: { type: 'queueOutputFeedback', params: ({ event }) => ({ event }) },
                      },
                      {
                        guard: { type: 'isCurrentTurn', params: ({ event }) => ({ event }) },
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
                        VALIDATED: [
                          {
                            guard: { type: 'allCallsInvalid', params: ({ event }) => ({ event }) },
                            target: 'finalizing',
                            actions: { type: 'applyValidation', params: ({ event }) => ({ event }) },
                          },
                          {
                            guard: { type: 'isCurrentBatch', params: ({ event }) => ({ batch: event.batch }) },
                            target: 'authorizing',
                            actions: { type: 'applyValidation', params: ({ event }) => ({ event }) },
                          },
                        ],
                      },
                    },
                    authorizing: {
                      entry: 'requestAuthorization',
                      on: {
                        AUTHORIZED: [
                          {
                            guard: { type: 'anyAsks', params: ({ event }) => ({ event }) },
                            target: 'awaitingApproval',
                            actions: { type: 'applyDecisions', params: ({ event }) => ({ event }) },
                          },
                          {
                            guard: { type: 'isCurrentBatch', params: ({ event }) => ({ batch: event.batch }) },
                            target: 'executing',
                            actions: { type: 'applyDecisions', params: ({ event }) => ({ event }) },
                          },
                        ],
                      },
                    },
                    awaitingApproval: {
                      entry: 'announceApprovals',
                      on: {
                        APPROVE: {
                          guard: { type: 'isAwaiting', params: ({ event }) => ({ toolCallId: event.toolCallId }) },
                          actions: { type: 'approve', params: ({ event }) => ({ event }) },
                        },
                        DENY: {
                          guard: { type: 'isAwaiting', params: ({ event }) => ({ toolCallId: event.toolCallId }) },
                          actions: { type: 'deny', params: ({ event }) => ({ event }) },
                        },
                      },
                      always: { guard: 'noneAwaiting', target: 'executing' },
                    },
                    executing: {
                      entry: ['markExecuting', 'requestExecution'],
                      on: {
                        TOOL_RESULT: {
                          guard: { type: 'isOpenResult', params: ({ event }) => ({ event }) },
                          actions: { type: 'takeToolResult', params: ({ event }) => ({ event }) },
                        },
                      },
                      always: { guard: 'allDone', target: 'finalizing' },
                    },
                    finalizing: {
                      entry: 'recordToolResults',
                      always: [
                        {
                          guard: 'allTerminate',
                          target: '#agent.running.nextTurn',
                          actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn'],
                        },
                        { target: '#agent.running.turn.between' },
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
