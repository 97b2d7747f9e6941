import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import { restartBackoffMs, restartDecision, type TaskSpec } from '../../../src/protocol/index.js';
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
  type TaskSettings,
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
  /** How it ended, once settled. */
  result?: { status: SettleParams['status']; text: string };
}

export type TaskEvent =
  | { type: 'CHILD.DONE'; agentId: string; taskId: string; outcome: ChildOutcome; text: string }
  | ({ type: 'CANCEL' } & Cancellation)
  | { type: 'RELEASE' };

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
    /** A restart is due after the backoff: the task's "restarted" fact. */
    announceRestart: (_, _params: { agentId: string; attempt: number }) => {},
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
  },
  guards: {
    /** A turn end of this task's current agent (a late one from a stopped attempt is stale). */
    isCurrent: ({ context, event }) => (event as { taskId?: string }).taskId === context.task.taskId,
    /** Restarts are left: `maxRestarts` bounds the runs after the first. */
    canRestart: ({ context }) => restartDecision(context.attempt, context).restart,
    /** This task's current agent failed its turn. */
    isCurrentFailure: ({ context, event }) => {
      const done = event as Extract<TaskEvent, { type: 'CHILD.DONE' }>;
      return done.taskId === context.task.taskId && done.outcome === 'failed';
    },
    agentGone: ({ context }) => !context.alive,
  },
  delays: {
    /** The backoff after the failed run (`attempt` already counts the restart). */
    backoff: ({ context }) => restartBackoffMs(context.attempt - 1, context),
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
    | 'settle'
  >
>({
  actions: {
    startAgent: enqueueActions(({ context, enqueue }) => {
      const { task } = context;
      enqueue({
        type: 'prepareTask',
        params: { task, batchId: context.batchId, background: context.background, attempt: context.attempt },
      });
      enqueue.spawnChild('subagent', {
        id: childId(task.agentId),
        input: { agentId: task.agentId, parentId: context.ownerId, ...task.agent },
      });
      enqueue({ type: 'tell', params: { to: childId(task.agentId), event: promptOf(task) } });
      // The context starts with its first agent alive (spawned here, on entry): only a restart's is recorded.
      if (!context.alive) enqueue({ type: 'record', params: { alive: true } });
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
      enqueue({ type: 'announceRestart', params: { agentId: context.task.agentId, attempt } });
    }),
    recordOutcome: assign({
      result: ({ event }) => {
        const done = event as Extract<TaskEvent, { type: 'CHILD.DONE' }>;
        return { status: done.outcome, text: done.text };
      },
    }),
    /** The run failed for good: its turn's text, or what crashed its agent (a crash is always a failure). */
    recordFailure: assign({
      result: ({ event }) => {
        const done = event as Extract<TaskEvent, { type: 'CHILD.DONE' }>;
        return { status: 'failed' as const, text: done.type === 'CHILD.DONE' ? done.text : crashText(event) };
      },
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
