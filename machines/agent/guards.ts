import { notificationDelivery } from '../../src/protocol/index.js';
import type { AgentCommand, AgentContext, AgentMachineEvent, TurnInput, WorkerReply } from './types.js';

/** The agent chart's guards (chart.ts names them): pure questions about the context and the event in hand. */

type Reply<T extends WorkerReply['type']> = Extract<WorkerReply, { type: T }>;
type Command<T extends AgentCommand['type']> = Extract<AgentCommand, { type: T }>;

/** The input of the turn in progress: `dequeueTurn` sets it before any step of the turn runs. */
export const turnInput = (context: AgentContext) => context.current as TurnInput;

function isCurrentModelReply(context: AgentContext, event: { turn: number; step: number }): boolean {
  return event.turn === context.turn && event.step === context.step;
}

export function compactedThisStep(context: AgentContext): boolean {
  return context.compactedAt?.turn === context.turn && context.compactedAt.step === context.step;
}

function hasToolCalls(event: Reply<'MODEL_DONE'>): boolean {
  return event.message.content.some((part) => part.type === 'tool_call');
}

// Guards and assigns read the event they are given directly. The narrowing below is what the transition they sit
// on guarantees; `params: ({ event }) => ({ event })` would say the same at the price of an object per evaluation,
// and these run several times per step.
export const reply = <T extends WorkerReply['type']>(event: AgentMachineEvent) => event as Reply<T>;
export const command = <T extends AgentCommand['type']>(event: AgentMachineEvent) => event as Command<T>;

/** A result is taken only for a call of the current batch that is still open (allowed and not yet answered). */
function isOpen(context: AgentContext, batch: number, toolCallId: string): boolean {
  return (
    batch === context.batch && context.calls.some((state) => state.call.id === toolCallId && state.status === 'open')
  );
}

interface GuardArgs {
  context: AgentContext;
  event: AgentMachineEvent;
}

export const agentGuards = {
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
  /** A tool answer whose calls the worker validated as it answered: nothing to request. */
  isCurrentValidatedToolAnswer: ({ context, event }) => {
    const done = reply<'MODEL_DONE'>(event);
    return done.validated !== undefined && isCurrentModelReply(context, done) && hasToolCalls(done);
  },
  /**
   * A tool answer validated as it came, and nothing can refuse its calls: the worker runs the valid ones as it
   * answers, so the batch is `executing` at once (one whose calls are all invalid leaves it at once, as a denied one).
   */
  isCurrentAllowedToolAnswer: ({ context, event }) => {
    const done = reply<'MODEL_DONE'>(event);
    return done.validated?.allowed === true && isCurrentModelReply(context, done) && hasToolCalls(done);
  },
  /** The current batch came validated with its answer (see `validation`). */
  wasValidated: ({ context }) => context.validation !== undefined,
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
  /** The worker validated this batch and nothing can refuse or hold its calls: it runs the valid ones unasked. */
  isAllowedBatch: ({ context, event }) => {
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
  isQueuedInput: ({ context, event }) => {
    const { inputId } = command<'CANCEL_INPUT'>(event);
    return context.queue.some((input) => input.inputId === inputId);
  },
  isCurrentInput: ({ context, event }) => turnInput(context).inputId === command<'CANCEL_INPUT'>(event).inputId,
  // Checked in `idle`: a running agent takes every notification at its next step boundary.
  wakesOnNotification: ({ context, event }) =>
    notificationDelivery({
      running: false,
      wakes: context.wakeOnNotification && command<'NOTIFY'>(event).wake !== false,
    }) === 'wake',
  isSupervising: ({ context }) => context.supervising,
} satisfies Record<string, (args: GuardArgs) => boolean>;
