// Over 400 lines: the agent's whole statechart, one config read top to bottom (its implementations are in setup.ts
// and guards.ts); split, its transitions would point across files.
import { type ActorRefFrom, and } from 'xstate';
import { agentSetup } from './setup.js';

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

/**
 * A final answer completes the turn, and `nextTurn`'s choice is made in the same microstep (the way most turns end,
 * one hop shorter): the next queued input starts a turn, or the run ends.
 */
const completeTurn = [
  {
    guard: 'hasQueuedInput',
    target: '#agent.running.turn',
    reenter: true,
    actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn', 'dequeueTurn', 'startTurn'],
  },
  { target: '#agent.idle', actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn', 'endRun'] },
] as const;

/** The model's answer, taken in `model` or, after the afterModelCall hooks, in `reviewing`. */
const modelAnswer = [
  {
    guard: 'isCurrentCutOffToolAnswer',
    target: '#agent.running.turn.step.tools.finalizing',
    actions: ['recordAssistant', 'refuseCutOffCalls'],
  },
  // The worker validates the calls as it answers and, if nothing can refuse one, runs the valid ones: no phase to pass.
  {
    guard: 'isCurrentAllowedToolAnswer',
    target: '#agent.running.turn.step.tools.executing',
    actions: ['recordAssistant', 'takeToolCalls'],
  },
  // Validated as it came, but some call may be refused: nothing to ask for validation.
  {
    guard: 'isCurrentValidatedToolAnswer',
    target: '#agent.running.turn.step.tools',
    actions: ['recordAssistant', 'takeToolCalls'],
  },
  {
    guard: 'isCurrentToolAnswer',
    target: '#agent.running.turn.step.tools',
    actions: ['recordAssistant', 'takeToolCalls', 'requestValidation'],
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
 * action given by the runtime (the step's requests to its worker among them), so this file runs unchanged in pure
 * transition tests.
 *
 * The chart is shaped for the cost of a step, which XState charges per event, per microstep and per assign (each
 * clones the snapshot): a step with tools of an agent nothing restricts is three events (the model request, its
 * answer with the calls validated, their results), three microsteps (model → executing → finalizing → the next
 * step) and three assigns (the step counter, the calls, their results): phases that every call passes change
 * nothing in the context, and a phase with nothing to do is not entered.
 */
export const agentMachine = agentSetup.createMachine({
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
    // An idle agent's input opens its turn in the microstep that starts the run: `nextTurn` would only dequeue it
    // (nothing is queued while idle), one hop more per run.
    idle: {
      on: {
        PROMPT: { target: '#agent.running.turn', actions: ['enqueue', 'startRun', 'dequeueTurn', 'startTurn'] },
        STEER: { actions: 'inject' },
        NOTIFY: [
          {
            guard: 'wakesOnNotification',
            target: '#agent.running.turn',
            actions: ['wakeWithNotification', 'startRun', 'dequeueTurn', 'startTurn'],
          },
          { actions: 'inject' },
        ],
      },
    },
    running: {
      // The step's requests are actions the runtime serves (servedBy), its worker's answers events: no actor per
      // run or per request (each actor is a start, a stop, two copies of the agent's children and an event per
      // request, about a fifth of what a subagent costs). Leaving the run aborts what is in flight, and gives back
      // what its calls held: an idle agent (a finished subagent kept for resume) holds nothing running.
      exit: 'abortInFlight',
      initial: 'nextTurn',
      on: {
        PROMPT: { actions: 'enqueue' },
        STEER: { actions: 'inject' },
        NOTIFY: { actions: 'inject' },
        INTERRUPT: '#agent.interrupted',
        CANCEL_INPUT: [
          {
            guard: 'isQueuedInput',
            actions: [
              {
                type: 'settleDropped',
                params: ({ event }) => ({ inputIds: [event.inputId] }),
              },
              'dropInput',
            ],
          },
          { guard: 'isCurrentInput', target: '#agent.interrupted' },
        ],
        // Stopping drops the queue before the interrupt: `interrupted` would otherwise start the next input.
        STOP: {
          target: '#agent.interrupted',
          actions: [
            {
              type: 'settleDropped',
              params: ({ context }) => ({ inputIds: context.queue.map((input) => input.inputId) }),
            },
            'dropQueue',
          ],
        },
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
                    ...completeTurn,
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
                      // Validated with the answer: the same decisions as VALIDATED's, on the context, in the
                      // answer's macrostep (one event each way fewer per step than a request and its reply).
                      always: [
                        { guard: and(['wasValidated', 'allDone']), target: 'finalizing' },
                        { guard: 'wasValidated', target: 'authorizing', actions: 'requestAuthorization' },
                      ],
                      on: {
                        // A batch nothing can refuse (the worker says `allowed`) is not authorized: the worker runs
                        // its valid calls as it answers, so it goes straight to `executing`, with no request (see
                        // docs/architecture/xstate.md). Otherwise authorization is requested on the way in.
                        VALIDATED: [
                          { guard: 'allCallsInvalid', target: 'finalizing', actions: 'applyValidation' },
                          {
                            guard: and(['isAllowedBatch', 'anyInvalid']),
                            target: 'executing',
                            actions: 'applyValidation',
                          },
                          // Every call valid: nothing to record (an assign would clone the snapshot for nothing).
                          { guard: 'isAllowedBatch', target: 'executing' },
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
    /** The turn was interrupted: in-flight work was aborted leaving `running`; every open tool call gets a result. */
    interrupted: {
      entry: [
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
      entry: ['exhaustBudget', 'recordToolResults', 'announceBudgetExhausted', 'endTurn'],
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
