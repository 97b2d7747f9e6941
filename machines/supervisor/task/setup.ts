import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import type { FailureClass, TaskSpec } from '../../../src/protocol/index.js';
import {
  type Cancellation,
  type ChildOutcome,
  type Composite,
  childId,
  notifyOf,
  type OwnerNotify,
  type PrepareParams,
  promptOf,
  type SettleParams,
  type TaskFailed,
  type TaskSettings,
  type TaskVerdict,
  type Tell,
} from '../shared.js';

export interface TaskInput extends TaskSettings {
  task: TaskSpec;
  batchId: string;
  background: boolean;
}

export interface TaskContext extends TaskInput {
  /** 0 for the first run; each restart adds one. */
  attempt: number;
  /** Its agent actor exists (it is stopped on a restart, a cancel, a crash, and on release). */
  alive: boolean;
  /** How it ended, once settled; how its last run failed, while its batch decides. */
  result?: { status: SettleParams['status']; text: string };
  failure?: FailureClass;
  /** The backoff its batch gave for the restart under way. */
  delayMs: number;
  /** The restart under way was ordered by this sibling's failure (its task id). */
  cause?: string;
  /** The restart under way keeps the agent's history (a resume). */
  resume?: boolean;
}

export type TaskEvent =
  /** `failure`: the class of a turn that failed (a spent budget or a guardrail ends it without `failed`). */
  | { type: 'CHILD.DONE'; agentId: string; taskId: string; outcome: ChildOutcome; text: string; failure?: FailureClass }
  | ({ type: 'CANCEL' } & Cancellation)
  | { type: 'RELEASE' }
  | TaskVerdict;

/** What its batch hears when the task settles (straight from the task: its pools have nothing to add). */
export type TaskSettled = { type: 'TASK.SETTLED'; taskId: string; status: SettleParams['status'] };

type CrashEvent = { type: `xstate.error.actor.${string}`; error?: unknown };

function crashText(event: unknown): string {
  const error = (event as CrashEvent).error;
  const why = error instanceof Error ? error.message : String(error ?? 'unknown error');
  return `The subagent crashed: ${why}`;
}

function settleParams(context: TaskContext): SettleParams {
  // Stryker disable next-line all: `settled` is entered only with a result recorded (outcome, crash, cancel)
  const result = context.result ?? { status: 'failed' as const, text: 'The task ended without a result.' };
  return {
    taskId: context.task.taskId,
    agentId: context.task.agentId,
    batchId: context.batchId,
    background: context.background,
    status: result.status,
    text: result.text,
    kept: context.alive,
  };
}

/** The task chart's implementations: chart.ts is the chart a reader opens first. */
export const taskSetup = setup({
  types: {
    context: {} as TaskContext,
    events: {} as TaskEvent,
    input: {} as TaskInput,
  },
  actors: {
    /** The task's agent: the runtime provides the agent machine joined to its workers. */
    subagent: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    // Effects, provided by the runtime; they read their params and never change context.
    /** Builds (or rebuilds) the agent's runtime before it is spawned: the task's "started" fact. */
    prepareTask: (_, _params: PrepareParams) => {},
    /** Records the task's end (its result, events, the waiting caller): the task's "settled" fact. */
    settleTask: (_, _params: SettleParams) => {},
    /** The agent was stopped: its history is archived for a later resume and its runtime released. */
    releaseChild: (_, _params: { agentId: string }) => {},
    /** A restart is due after the backoff: the task's "restarted" fact, with the sibling that caused it. */
    announceRestart: (_, _params: { agentId: string; attempt: number; cause?: string }) => {},
    /** Tells its batch that a run failed and why; the runtime stamps when, and the batch answers with a verdict. */
    reportFailed: (_, _params: Omit<TaskFailed, 'at'>) => {},
    /** Delivers a background result to the task's owner (the agent that started it). */
    notifyOwner: (_, _params: OwnerNotify) => {},
    /**
     * Tells its batch that it settled, to be counted against the join policy. The runtime sends it straight to the
     * batch (registered under `batchSystemId`): relayed through its two pools, it cost two more macrosteps
     * per task.
     */
    reportSettled: (_, _params: TaskSettled) => {},
    tell: sendTo(
      (_, params: Tell) => params.to,
      (_, params: Tell) => params.event,
    ),
    record: assign((_, changes: Partial<TaskContext>) => changes),
    /**
     * A restart's agent is about to be spawned (startAgent, on entering `running`). The context starts with its first
     * one alive, so that a task's first start records nothing.
     */
    recordAlive: assign({ alive: true }),
  },
  guards: {
    /** A turn end of this task's current agent (a late one from a stopped attempt is stale). */
    isCurrent: ({ context, event }) => (event as { taskId?: string }).taskId === context.task.taskId,
    /** This task's current agent failed its turn (or ran out of budget, or tripped a guardrail). */
    isCurrentFailure: ({ context, event }) => {
      const done = event as Extract<TaskEvent, { type: 'CHILD.DONE' }>;
      return done.taskId === context.task.taskId && (done.outcome === 'failed' || done.failure !== undefined);
    },
    agentGone: ({ context }) => !context.alive,
    /**
     * In `running` without an agent: started again from a journal while its restart's backoff was under way
     * (TaskSpec.backoffMs). Every other way into `running` has its agent spawned (recordAlive).
     */
    inBackoff: ({ context }) => !context.alive,
  },
  delays: {
    /** The backoff its batch gave (failureVerdict: the failed run's `restartDelayMs · 2^attempt`). */
    backoff: ({ context }) => context.delayMs,
  },
}).extend<
  Composite<
    | 'startAgent'
    | 'interruptAgent'
    | 'stopAgent'
    | 'releaseAgent'
    | 'nextAttempt'
    | 'recordOutcome'
    | 'recordFailure'
    | 'recordCancel'
    | 'recordRestart'
    | 'recordResume'
    | 'reportFailure'
    | 'settle'
  >
>({
  actions: {
    /** Not while it waits out a restored backoff (inBackoff): its agent starts after it. */
    startAgent: enqueueActions(({ context, enqueue }) => {
      if (!context.alive) return;
      const { task } = context;
      enqueue({
        type: 'prepareTask',
        params: {
          task,
          batchId: context.batchId,
          background: context.background,
          attempt: context.attempt,
          ...(context.resume ? { resume: true } : {}),
          cause: context.cause,
        },
      });
      enqueue.spawnChild('subagent', {
        id: childId(task.agentId),
        input: { agentId: task.agentId, parentId: context.ownerId, ...task.agent },
      });
      enqueue({ type: 'tell', params: { to: childId(task.agentId), event: promptOf(task) } });
    }),
    /** Only from `running`, where its agent is alive. */
    interruptAgent: enqueueActions(({ context, enqueue }) => {
      enqueue({ type: 'tell', params: { to: childId(context.task.agentId), event: { type: 'INTERRUPT' } } });
    }),
    /**
     * Its agent ends as the task ends: XState stops a finished actor's children, so only the runtime hears it
     * (no stop of its own, no context to record: each is a snapshot copy, see docs/architecture/xstate.md).
     */
    releaseAgent: enqueueActions(({ context, enqueue }) => {
      if (context.alive) enqueue({ type: 'releaseChild', params: { agentId: context.task.agentId } });
    }),
    stopAgent: enqueueActions(({ context, enqueue }) => {
      if (!context.alive) return;
      enqueue.stopChild(childId(context.task.agentId));
      enqueue({ type: 'releaseChild', params: { agentId: context.task.agentId } });
      enqueue({ type: 'record', params: { alive: false } });
    }),
    nextAttempt: enqueueActions(({ context, enqueue }) => {
      const attempt = context.attempt + 1;
      enqueue({ type: 'record', params: { attempt } });
      enqueue({ type: 'announceRestart', params: { agentId: context.task.agentId, attempt, cause: context.cause } });
    }),
    /** Why the restart under way happens: its own failure, or a sibling's (`cause`), and after what backoff. */
    recordRestart: assign(({ event }) => {
      const restart = event as Extract<TaskVerdict, { type: 'RESTART' }>;
      return { delayMs: restart.delayMs, cause: restart.cause, resume: false, failure: undefined, result: undefined };
    }),
    recordResume: assign(({ event }) => ({
      delayMs: (event as Extract<TaskVerdict, { type: 'RESUME' }>).delayMs,
      cause: undefined,
      resume: true,
      failure: undefined,
      result: undefined,
    })),
    recordOutcome: assign({
      result: ({ event }) => {
        const done = event as Extract<TaskEvent, { type: 'CHILD.DONE' }>;
        return { status: done.outcome, text: done.text };
      },
    }),
    /**
     * How the run failed, what the task settles with if its batch gives up: its turn's outcome and text (a spent
     * budget ends `interrupted`), or what crashed its agent (a crash is a `tool` failure).
     */
    recordFailure: assign(({ event }) => {
      const done = event as Extract<TaskEvent, { type: 'CHILD.DONE' }>;
      if (done.type !== 'CHILD.DONE') return { result: { status: 'failed', text: crashText(event) }, failure: 'tool' };
      const status = done.outcome === 'interrupted' ? 'interrupted' : 'failed';
      return { result: { status, text: done.text }, failure: done.failure ?? 'tool' };
    }),
    reportFailure: enqueueActions(({ context, enqueue }) => {
      enqueue({
        type: 'reportFailed',
        params: {
          type: 'TASK.FAILED',
          taskId: context.task.taskId,
          attempt: context.attempt,
          // Entered only through recordFailure, which sets both.
          failure: context.failure as FailureClass,
          text: (context.result as { text: string }).text,
        },
      });
    }),
    recordCancel: assign({
      result: ({ event }) => {
        const cancel = event as Extract<TaskEvent, { type: 'CANCEL' }>;
        return { status: cancel.status, text: cancel.text };
      },
    }),
    settle: enqueueActions(({ context, enqueue }) => {
      const params = settleParams(context);
      enqueue({ type: 'settleTask', params });
      if (params.background && context.notifyOwner) enqueue({ type: 'notifyOwner', params: notifyOf(params) });
      enqueue({
        type: 'reportSettled',
        params: { type: 'TASK.SETTLED', taskId: params.taskId, status: params.status },
      });
    }),
  },
});
