import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import {
  type FailureVerdict,
  failureVerdict,
  firstMet,
  quorumMet,
  quorumOutOfReach,
  restartedWith,
  restartsWithin,
  type TaskEnd,
  type TaskSpec,
  taskEnd,
} from '../../../src/protocol/index.js';
import type { PoolStart } from '../pool/setup.js';
import {
  type Cancellation,
  type Composite,
  indexOfChildEvent,
  notifyOf,
  type OwnerNotify,
  poolActorId,
  poolOf,
  type SettleParams,
  type TaskFailed,
  type TaskVerdict,
  type Tell,
} from '../shared.js';
import { countOf, fillFrom, SEAL, withSettle } from './fill.js';
import type { BatchContext, BatchEvent, BatchInput, BatchSettled, BatchVerdict, Escalation } from './types.js';

/**
 * Where the task `taskId` stands: its index, and whether it is still queued (not started yet); undefined for a
 * task this batch does not know or has already dropped as cancelled.
 */
function placeOf(context: BatchContext, taskId: string): { index: number; queued: boolean } | undefined {
  const index = context.tasks.findIndex((task) => task.taskId === taskId);
  // An unknown task (−1) would pass as started and find no pool −1; this says it plainly.
  // Stryker disable next-line ConditionalExpression: equivalent, see above
  if (index < 0 || context.cancelled.includes(taskId)) return undefined;
  return { index, queued: index >= context.next };
}

function dropped(context: BatchContext, task: TaskSpec, { status, text }: TaskEnd): SettleParams {
  return {
    taskId: task.taskId,
    agentId: task.agentId,
    batchId: context.batchId,
    background: context.background,
    status,
    text,
    kept: false,
  };
}

/** Tasks started and not settled, by index, in start order. */
function activeOf(context: BatchContext): number[] {
  const active: number[] = [];
  for (let i = 0; i < context.next; i++) {
    const { taskId } = context.tasks[i] as TaskSpec;
    if (!context.done.includes(taskId) && !context.cancelled.includes(taskId)) active.push(i);
  }
  return active;
}

/** The failure in hand, with its task's place: undefined for a task the batch does not know. */
function failureOf(context: BatchContext, event: BatchEvent) {
  const failed = event as TaskFailed;
  const index = context.tasks.findIndex((task) => task.taskId === failed.taskId);
  return index < 0 ? undefined : { ...failed, index };
}

/** The batch's verdict on the failure in hand (written once: `failureVerdict`). */
function verdictOf(context: BatchContext, event: BatchEvent): FailureVerdict {
  const failed = failureOf(context, event) as TaskFailed & { index: number };
  const book = { active: activeOf(context), restarts: context.restarts };
  return failureVerdict(failed, book, { ...context, ...context.supervision });
}

/**
 * The batch's book once it restarted (or resumed) the tasks at `indexes` for a failure at `at`: each of them is one
 * attempt further (a failure of an earlier run is stale), and the restart counts once against the intensity.
 */
function bookAfter(context: BatchContext, indexes: number[], at: number): Partial<BatchContext> {
  const attempts = { ...context.attempts };
  for (const i of indexes) attempts[i] = (attempts[i] ?? 0) + 1;
  return { attempts, restarts: [...restartsWithin(context.restarts, at, context.supervision?.intensity), at] };
}

/**
 * What a restart does: the failed task and the siblings `strategy` names (restartedWith; none without one) start
 * again after the failed run's backoff, each told whose failure restarts it; the verdict is recorded first, once.
 */
function restartOf(context: BatchContext, event: BatchEvent, strategy?: 'oneForAll' | 'restForOne') {
  const { delayMs } = verdictOf(context, event) as Extract<FailureVerdict, { kind: 'restart' }>;
  const { taskId, at, index } = failureOf(context, event) as TaskFailed & { index: number };
  const indexes = restartedWith(index, activeOf(context), strategy);
  const restarted = indexes.slice(1).map((i) => (context.tasks[i] as TaskSpec).taskId);
  const verdict: BatchVerdict = { verdict: 'restart', delayMs, ...(restarted.length ? { restarted } : {}) };
  const tells = [taskId, ...restarted].map((sibling) => {
    const told: TaskVerdict = { type: 'RESTART', delayMs };
    if (sibling !== taskId) told.cause = taskId;
    return { taskId: sibling, event: told };
  });
  return { verdict, tells, changes: bookAfter(context, indexes, at) };
}

/** The batch chart's implementations: chart.ts is the chart a reader opens first. */
export const batchSetup = setup({
  types: {
    context: {} as BatchContext,
    events: {} as BatchEvent,
    input: {} as BatchInput,
  },
  actors: {
    /** The pool machine, provided by the runtime's composition. */
    pool: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    // Effects, provided by the runtime (the same ones the task machine names), for tasks that never started.
    settleTask: (_, _params: SettleParams) => {},
    notifyOwner: (_, _params: OwnerNotify) => {},
    /** Tells the supervisor (its parent) that every task settled; the runtime provides `sendParent`. */
    reportSettled: (_, _params: BatchSettled) => {},
    /**
     * Starts a task in the pool of depth 0 that holds it, which exists (leafAlive): the runtime finds it by its
     * system id (`leafPoolSystemId`), the batch does not parent it.
     */
    startInLeaf: (_, _params: { leaf: number; event: PoolStart }) => {},
    /** Sends a started task its verdict (the runtime knows its actor): the batch does not parent its tasks. */
    tellTask: (_, _params: { taskId: string; event: TaskVerdict }) => {},
    /** The verdict on the failed run in hand, once, before its tasks are told (the runtime journals it). */
    recordVerdict: (_, _params: BatchVerdict) => {},
    /** The batch escalated a failure: its owner's turn (or its caller) hears it once the batch has settled. */
    reportEscalation: (_, _params: Escalation) => {},
    tell: sendTo(
      (_, params: Tell) => params.to,
      (_, params: Tell) => params.event,
    ),
    record: assign((_, changes: Partial<BatchContext>) => changes),
    /**
     * Its tasks arrive. One started again from a journal goes on at its run number (TaskSpec.attempt): the batch
     * counts its attempts from there, so a failure of a run before the crash is stale.
     */
    queue: assign(({ event }) => {
      const { tasks } = event as Extract<BatchEvent, { type: 'QUEUE' }>;
      return {
        tasks,
        attempts: Object.fromEntries(tasks.flatMap((task, i) => (task.attempt ? [[i, task.attempt]] : []))),
      };
    }),
    /** Every task has settled: the specs are no longer needed (see BatchInput). */
    forgetQueue: assign({ tasks: [] }),
  },
  guards: {
    /** Every task has settled (or was dropped). */
    allEnded: ({ context }) => context.ended >= context.size,
    /** `first(k)`: this settle is the k-th completed task. */
    firstCompleted: ({ context, event }) => firstMet(context.join, withSettle(context, event).completed),
    /** `quorum(k)`: this settle is the k-th completed task. */
    quorumReached: ({ context, event }) => quorumMet(context.join, withSettle(context, event).completed),
    /** `quorum(k)`: with this settle (not a completion), too few tasks are left to reach k. */
    quorumOutOfReach: ({ context, event }) => {
      const { completed, ended } = withSettle(context, event);
      return quorumOutOfReach(context.join, context.size, completed, ended);
    },
    /** `quorum(k)`: cancelling this queued task leaves too few to reach k. */
    cancelPutsQuorumOutOfReach: ({ context, event }) => {
      const { taskId } = event as Extract<BatchEvent, { type: 'CANCEL' }>;
      if (!placeOf(context, taskId)?.queued) return false;
      return quorumOutOfReach(context.join, context.size, context.completed, context.ended + 1);
    },
    noPools: ({ context }) => context.pools.length === 0,
    /** A failure of a run the batch has already restarted (a sibling's restart overtook it), or of no task of it. */
    isStaleFailure: ({ context, event }) => {
      const failed = failureOf(context, event);
      return !failed || failed.attempt < (context.attempts[failed.index] ?? 0);
    },
    /** The failure's class says `escalate`. */
    escalatesClass: ({ context, event }) => {
      const verdict = verdictOf(context, event);
      return verdict.kind === 'escalate' && verdict.because !== 'intensity';
    },
    /**
     * One restart more would exceed `maxRestarts` within `withinMs`, counted across the batch: the verdict escalates,
     * and a class that escalates was taken above (escalatesClass), so the intensity is why.
     */
    exceedsIntensity: ({ context, event }) => verdictOf(context, event).kind === 'escalate',
    /** The failure's class says `stop`, or the task has used its own `maxRestarts`. */
    stopsTask: ({ context, event }) => verdictOf(context, event).kind === 'stop',
    /** The failure's class says `resume`: the task is asked again with its history. */
    resumesTask: ({ context, event }) => verdictOf(context, event).kind === 'resume',
    // The verdict is a restart once every outcome above is ruled out: the strategy alone says who restarts.
    /** `oneForAll`: every task still running restarts with the failed one. */
    restartsAll: ({ context }) => context.supervision?.strategy === 'oneForAll',
    /** `restForOne`: the tasks started after the failed one restart with it. */
    restartsRest: ({ context }) => context.supervision?.strategy === 'restForOne',
  },
}).extend<
  {
    dropTask: SettleParams;
    cancelRunning: Cancellation;
    dropQueued: Cancellation;
    recordEscalation: Pick<Escalation, 'because'>;
  } & Composite<
    | 'fill'
    | 'count'
    | 'countAndFill'
    | 'cancelTask'
    | 'stopPool'
    | 'restartAll'
    | 'restartRest'
    | 'restartOne'
    | 'resumeTask'
    | 'giveUp'
  >
>({
  actions: {
    /** A task that never started is settled here, with the same facts a task actor reports. */
    dropTask: enqueueActions(({ context, enqueue }, params: SettleParams) => {
      enqueue({ type: 'settleTask', params });
      if (params.background && context.notifyOwner) enqueue({ type: 'notifyOwner', params: notifyOf(params) });
    }),
    /** Starts queued tasks up to the cap, each in its pool, and seals the pools it has moved past. */
    fill: enqueueActions(({ context, enqueue }) => fillFrom(context, enqueue)),
    /** A task settled: its slot is free, and the join counts move. */
    count: assign(({ context, event }) => countOf(context, event)),
    /** `count`, then `fill` from the counts, recorded in one assign (each is a snapshot copy, once per task). */
    countAndFill: enqueueActions(({ context, event, enqueue }) => fillFrom(context, enqueue, countOf(context, event))),
    /** The failed task and every sibling still running restart (`oneForAll`). */
    restartAll: enqueueActions(({ context, event, enqueue }) => {
      const { verdict, tells, changes } = restartOf(context, event, 'oneForAll');
      enqueue({ type: 'recordVerdict', params: verdict });
      for (const params of tells) enqueue({ type: 'tellTask', params });
      enqueue({ type: 'record', params: changes });
    }),
    /** The failed task and the siblings started after it restart (`restForOne`). */
    restartRest: enqueueActions(({ context, event, enqueue }) => {
      const { verdict, tells, changes } = restartOf(context, event, 'restForOne');
      enqueue({ type: 'recordVerdict', params: verdict });
      for (const params of tells) enqueue({ type: 'tellTask', params });
      enqueue({ type: 'record', params: changes });
    }),
    /** The failed task alone restarts (`oneForOne`). */
    restartOne: enqueueActions(({ context, event, enqueue }) => {
      const { verdict, tells, changes } = restartOf(context, event);
      enqueue({ type: 'recordVerdict', params: verdict });
      for (const params of tells) enqueue({ type: 'tellTask', params });
      enqueue({ type: 'record', params: changes });
    }),
    /** The failed task is asked again, with its history; it counts against the intensity as a restart does. */
    resumeTask: enqueueActions(({ context, event, enqueue }) => {
      const verdict = verdictOf(context, event) as Extract<FailureVerdict, { kind: 'resume' }>;
      const { taskId, at, index } = failureOf(context, event) as TaskFailed & { index: number };
      enqueue({ type: 'recordVerdict', params: { verdict: 'resume', delayMs: verdict.delayMs } });
      enqueue({ type: 'tellTask', params: { taskId, event: { type: 'RESUME', delayMs: verdict.delayMs } } });
      enqueue({ type: 'record', params: bookAfter(context, [index], at) });
    }),
    /** The failed task settles with its failure. */
    giveUp: enqueueActions(({ event, enqueue }) => {
      enqueue({ type: 'recordVerdict', params: { verdict: 'stop' } });
      enqueue({ type: 'tellTask', params: { taskId: (event as TaskFailed).taskId, event: { type: 'GIVE_UP' } } });
    }),
    /** The failure escalates `because` of its class or of the intensity (each escalating branch says which). */
    recordEscalation: enqueueActions(({ context, event, enqueue }, { because }: Pick<Escalation, 'because'>) => {
      const { taskId, failure, text, index } = failureOf(context, event) as TaskFailed & { index: number };
      const { agentId } = context.tasks[index] as TaskSpec;
      const escalation: Escalation = { batchId: context.batchId, taskId, agentId, failure, because, text };
      enqueue({ type: 'record', params: { escalation } });
    }),
    /** Tells every pool to end its tasks still running, with why (they settle and report as they end). */
    cancelRunning: enqueueActions(({ context, enqueue }, stopping: Cancellation) => {
      const cancelAll = { type: 'CANCEL_ALL', ...stopping };
      for (const pool of context.pools) enqueue({ type: 'tell', params: { to: poolActorId(pool), event: cancelAll } });
    }),
    /**
     * Settles every queued task here, with why, without starting it (its agent never exists), and seals the
     * pools: nothing starts any more.
     */
    dropQueued: enqueueActions(({ context, enqueue }, stopping: Cancellation) => {
      let ended = context.ended;
      for (let i = context.next; i < context.size; i++) {
        const task = context.tasks[i] as TaskSpec;
        if (context.cancelled.includes(task.taskId)) continue;
        enqueue({ type: 'dropTask', params: dropped(context, task, stopping) });
        ended++;
      }
      for (const pool of context.unsealed) enqueue({ type: 'tell', params: { to: poolActorId(pool), event: SEAL } });
      enqueue({ type: 'record', params: { next: context.size, ended, unsealed: [] } });
    }),
    /** One task cancelled: a queued one is dropped here and counted; a started one is cancelled in its pool. */
    cancelTask: enqueueActions(({ context, event, enqueue }) => {
      const { taskId } = event as Extract<BatchEvent, { type: 'CANCEL' }>;
      const place = placeOf(context, taskId);
      if (!place) return;
      const { index } = place;
      if (!place.queued) {
        const pool = poolOf(index);
        if (context.pools.includes(pool)) {
          const cancel = { type: 'CANCEL', index, ...taskEnd('cancelled') } as const;
          enqueue({ type: 'tell', params: { to: poolActorId(pool), event: cancel } });
        }
        return;
      }
      enqueue({
        type: 'dropTask',
        params: dropped(context, context.tasks[index] as TaskSpec, taskEnd('cancelled')),
      });
      enqueue({ type: 'record', params: { cancelled: [...context.cancelled, taskId], ended: context.ended + 1 } });
    }),
    stopPool: enqueueActions(({ context, event, enqueue }) => {
      const pool = indexOfChildEvent(event);
      enqueue.stopChild(poolActorId(pool));
      enqueue({ type: 'record', params: { pools: context.pools.filter((p) => p !== pool) } });
    }),
  },
});
