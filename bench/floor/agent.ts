import { and, createActor, type InspectionEvent } from 'xstate';
import { seats, shapeSetup } from './agent-setup.js';
import type { Script } from './script.js';

/**
 * Troupe's agent chart (machines/agent/chart.ts) rebuilt in plain XState with none of Troupe's code: the same
 * states, nesting, transitions, guards, assigns (on a context of the same keys) and worker protocol, so a step
 * takes the same events and microsteps. Effects (announcing a step, the transcript, the event bus) do nothing, and
 * the request actions answer the model requests and run the tool calls, validated and allowed with the answer as
 * Troupe's worker does for an agent nothing restricts. `collapsed` drops the tool phases: a batch is one state, left
 * by its results.
 */

const goRound = [
  {
    guard: 'stepLimitReached',
    target: '#agent.running.nextTurn',
    actions: [{ type: 'stopWith', params: { reason: 'max_steps' } }, 'endTurn'],
  },
  { target: '#agent.running.turn.step', reenter: true },
] as const;

/** A final answer completes the turn and makes `nextTurn`'s choice in the same microstep. */
const completeTurn = [
  {
    guard: 'hasQueuedInput',
    target: '#agent.running.turn',
    reenter: true,
    actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn', 'dequeueTurn', 'startTurn'],
  },
  { target: '#agent.idle', actions: [{ type: 'stopWith', params: { reason: 'completed' } }, 'endTurn', 'endRun'] },
] as const;

const TOOLS = '#agent.running.turn.step.tools';
/** The model's answer; an answer nothing can refuse skips validating (collapsed: there is one state to enter). */
const modelAnswer = (collapsed: boolean) =>
  [
    { guard: 'isCurrentCutOffToolAnswer', target: TOOLS, actions: ['recordAssistant', 'refuseCutOffCalls'] },
    {
      guard: 'isCurrentAllowedToolAnswer',
      target: collapsed ? TOOLS : `${TOOLS}.executing`,
      actions: ['recordAssistant', 'takeToolCalls'],
    },
    { guard: 'isCurrentValidatedToolAnswer', target: TOOLS, actions: ['recordAssistant', 'takeToolCalls'] },
    {
      guard: 'isCurrentToolAnswer',
      target: TOOLS,
      actions: ['recordAssistant', 'takeToolCalls', 'requestValidation'],
    },
    { guard: 'isCurrentModelReply', target: '#agent.running.turn.step.answered', actions: 'recordAssistant' },
  ] as const;

const modelFailure = [
  { guard: 'isCurrentGuardrailTrip', target: '#agent.running.nextTurn', actions: ['tripGuardrail', 'endTurn'] },
  { guard: 'isCurrentModelReply', target: '#agent.failed', actions: 'failWithModelError' },
] as const;

/** The tool phases as Troupe's chart has them: validate → authorize (→ approve, gate) → execute → finalize. */
const phases = {
  initial: 'validating',
  states: {
    validating: {
      always: [
        { guard: and(['wasValidated', 'allDone']), target: 'finalizing' },
        { guard: 'wasValidated', target: 'authorizing', actions: 'requestAuthorization' },
      ],
      on: {
        VALIDATED: [
          { guard: 'allCallsInvalid', target: 'finalizing', actions: 'applyValidation' },
          { guard: and(['isAllowedBatch', 'anyInvalid']), target: 'executing', actions: 'applyValidation' },
          { guard: 'isAllowedBatch', target: 'executing' },
          { guard: 'anyInvalid', target: 'authorizing', actions: ['applyValidation', 'requestAuthorization'] },
          { guard: 'isCurrentBatch', target: 'authorizing', actions: 'requestAuthorization' },
        ],
      },
    },
    authorizing: {
      on: {
        AUTHORIZED: [
          { guard: 'anyAsks', target: 'awaitingApproval', actions: 'applyDecisions' },
          { guard: 'anyDenied', target: 'executing', actions: ['applyDecisions', 'requestExecution'] },
          { guard: 'isCurrentBatch', target: 'executing', actions: 'requestExecution' },
        ],
      },
    },
    awaitingApproval: {
      entry: 'announceApprovals',
      on: { APPROVE: { guard: 'isAwaiting', actions: 'approve' }, DENY: { guard: 'isAwaiting', actions: 'deny' } },
      always: { guard: 'noneAwaiting', target: 'executing', actions: 'requestExecution' },
    },
    gating: { on: { GATED: { guard: 'isCurrentBatch', target: 'executing', actions: 'applyGate' } } },
    executing: {
      on: {
        GATING: { guard: 'isCurrentBatch', target: 'gating' },
        TOOL_RESULTS: [
          { guard: 'completesBatch', target: 'finalizing', actions: 'takeToolResults' },
          { guard: 'answersOpenCalls', actions: 'takeToolResults' },
        ],
      },
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
} as const;

/** The same batch with no phases: the results end it, and the turn goes round on the same transition. */
const oneState = {
  on: {
    TOOL_RESULTS: [
      {
        guard: and(['completesBatch', 'stepLimitReached']),
        target: '#agent.running.nextTurn',
        actions: [
          'takeToolResults',
          'recordToolResults',
          { type: 'stopWith', params: { reason: 'max_steps' } },
          'endTurn',
        ],
      },
      {
        guard: 'completesBatch',
        target: '#agent.running.turn.step',
        reenter: true,
        actions: ['takeToolResults', 'recordToolResults'],
      },
      { guard: 'answersOpenCalls', actions: 'takeToolResults' },
    ],
  },
} as const;

export function agentShape(collapsed: boolean) {
  return shapeSetup.createMachine({
    id: 'agent',
    context: ({ input }) => ({
      agentId: input.agentId,
      parentId: undefined,
      maxSteps: input.maxSteps,
      maxOutputAttempts: 3,
      wakeOnNotification: true,
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
      DELEGATE: [
        { guard: 'isSupervising', actions: 'delegate' },
        { actions: ['spawnSupervisor', 'markSupervising', 'delegate'] },
      ],
      'xstate.error.actor.supervisor': { actions: 'supervisorFailed' },
    },
    initial: 'idle',
    states: {
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
        // As Troupe's: no worker actor (the requests are actions); leaving the run aborts what is in flight.
        exit: 'abortInFlight',
        initial: 'nextTurn',
        on: {
          PROMPT: { actions: 'enqueue' },
          STEER: { actions: 'inject' },
          NOTIFY: { actions: 'inject' },
          INTERRUPT: '#agent.interrupted',
          CANCEL_INPUT: [
            { guard: 'isQueuedInput', actions: ['settleDropped', 'dropInput'] },
            { guard: 'isCurrentInput', target: '#agent.interrupted' },
          ],
          STOP: { target: '#agent.interrupted', actions: ['settleDropped', 'dropQueue'] },
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
              between: { always: [...goRound] },
              step: {
                entry: [
                  { type: 'startStep', params: ({ context }) => ({ step: context.step + 1 }) },
                  'nextStep',
                  'requestModel',
                ],
                exit: 'endStep',
                initial: 'model',
                states: {
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
                      MODEL_DONE: modelAnswer(collapsed),
                      CONTEXT_FULL: { guard: 'isCurrentModelReply', target: 'compacting', actions: 'markCompaction' },
                      MODEL_ERROR: [
                        { guard: 'isCurrentOverflow', target: 'compacting', actions: 'markCompaction' },
                        { guard: 'isCurrentModelReply', target: '#agent.failed', actions: 'failWithModelError' },
                      ],
                    },
                  },
                  reviewing: { on: { MODEL_DONE: modelAnswer(collapsed), MODEL_ERROR: [...modelFailure] } },
                  compacting: {
                    invoke: {
                      id: 'compactor',
                      src: 'compactor',
                      input: ({ context }) => ({ agentId: context.agentId }),
                      onDone: { target: 'model', actions: 'requestModel' },
                      onError: { target: '#agent.failed', actions: 'failWithCompactionError' },
                    },
                  },
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
                  tools: collapsed ? oneState : phases,
                },
              },
            },
          },
        },
      },
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
      budgetExhausted: {
        entry: ['exhaustBudget', 'recordToolResults', 'announceBudgetExhausted', 'endTurn'],
        always: [
          { guard: 'hasQueuedInput', target: 'running' },
          { target: 'idle', actions: 'endRun' },
        ],
      },
      failed: {
        entry: 'endTurn',
        always: [
          { guard: 'hasQueuedInput', target: 'running' },
          { target: 'idle', actions: 'endRun' },
        ],
      },
    },
  });
}

let agents = 0;

/** One agent on its own (W1): a prompt, its turn to the end, then stopped; the turn's stop reason. */
export async function shapeRun(
  machine: ReturnType<typeof agentShape>,
  script: Script,
  maxSteps: number,
  inspect?: (event: InspectionEvent) => void,
) {
  const agentId = `agent-${++agents}`;
  const actor = createActor(machine, { input: { agentId, maxSteps }, ...(inspect ? { inspect } : {}) });
  const ended = new Promise<string>((resolve) => seats.set(agentId, { script, done: resolve }));
  actor.start();
  actor.send({ type: 'PROMPT', input: { inputId: 'in', expectsOutput: false } });
  const reason = await ended;
  actor.stop();
  seats.delete(agentId);
  return reason;
}
