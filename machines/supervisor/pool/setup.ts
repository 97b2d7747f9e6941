import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup, stopChild } from 'xstate';
import type { TaskSpec } from '../../../src/protocol/index.js';
import {
  type Cancellation,
  type Composite,
  indexOfChildEvent,
  leafPoolOf,
  leafPoolSystemId,
  POOL_SIZE,
  poolActorId,
  type TaskSettings,
  type Tell,
  taskActorId,
} from '../shared.js';

export interface PoolInput extends TaskSettings {
  batchId: string;
  background: boolean;
  /** 0: its children are task actors; n: they are pools of depth n − 1. */
  depth: number;
}

export interface PoolContext extends PoolInput {
  /** Children alive, by their place in the pool (0 … POOL_SIZE − 1). */
  open: number[];
  /** Child pools that may still be given a task (a task actor is never sealed: it gets one task). */
  unsealed: number[];
  /** No more tasks will come (the batch moved past this pool, or stopped starting). */
  sealed: boolean;
}

/** A task to start: `index` is its place in its batch, from which every pool on its way reads its own child. */
export type PoolStart = { type: 'START'; task: TaskSpec; index: number };

export type PoolEvent =
  | PoolStart
  | ({ type: 'CANCEL'; index: number } & Cancellation)
  | ({ type: 'CANCEL_ALL' } & Cancellation)
  | { type: 'SEAL' }
  | { type: `xstate.done.actor.${'pool' | 'task'}.${string}` }
  | { type: `xstate.error.actor.task.${string}` };

type Ev<T extends PoolEvent['type']> = Extract<PoolEvent, { type: T }>;

/** How many of a batch's tasks one child of a pool of this depth holds (1: a child is a task actor). */
const spanOf = (depth: number): number => POOL_SIZE ** depth;
/** The child of the pool that runs the task at `index` of the batch. */
const childOf = (context: PoolContext, index: number): number => Math.floor(index / spanOf(context.depth)) % POOL_SIZE;
const childActorId = (context: PoolContext, child: number): string =>
  context.depth === 0 ? taskActorId(child) : poolActorId(child);
/** The task at `index` is the last its child holds: that child gets no more tasks. */
const isLast = (context: PoolContext, index: number): boolean => (index + 1) % spanOf(context.depth) === 0;
/**
 * The child pools that get no more tasks once the task at `index` has started: the batch starts tasks in order, so
 * no child after its child exists yet, and every other unsealed one is passed; its child too when the task is the
 * last it holds.
 */
function passedBy(context: PoolContext, index: number): number[] {
  const child = childOf(context, index);
  const passed = context.unsealed.filter((open) => open !== child);
  return isLast(context, index) ? [...passed, child] : passed;
}

const SEAL = { type: 'SEAL' } as const;

/** The pool chart's implementations: chart.ts is the chart a reader opens first. */
export const poolSetup = setup({
  types: {
    context: {} as PoolContext,
    events: {} as PoolEvent,
    input: {} as PoolInput,
  },
  actors: {
    /** The task machine, provided by the runtime's composition. */
    task: fromCallback(() => {}) as AnyActorLogic,
    /** The pool machine itself, one level down, provided by the runtime's composition. */
    pool: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    tell: sendTo(
      (_, params: Tell) => params.to,
      (_, params: Tell) => params.event,
    ),
    /** The task's START (or CANCEL) goes on to the child that holds it, as it is. */
    passDown: sendTo(
      ({ context, event }) => childActorId(context, childOf(context, (event as Ev<'START'>).index)),
      ({ event }) => event,
    ),
    /**
     * A new child is alive; only it may still be given tasks, unless this task is its last (a task actor's one
     * task always is: it is never unsealed).
     */
    openChild: assign(({ context, event }) => {
      const { index } = event as Ev<'START'>;
      const child = childOf(context, index);
      return { open: [...context.open, child], unsealed: isLast(context, index) ? [] : [child] };
    }),
    /** The child given its last task is sealed, and it was the only one unsealed. */
    clearUnsealed: assign({ unsealed: [] }),
    /** A child that ended is gone; a pool of depth 0 may have sealed itself and ended while still unsealed here. */
    forgetChild: assign(({ context, event }) => {
      const child = indexOfChildEvent(event);
      return {
        open: context.open.filter((open) => open !== child),
        unsealed: context.unsealed.filter((open) => open !== child),
      };
    }),
    seal: assign({ sealed: true, unsealed: [] }),
    /** A child pool that ended is stopped at once (it may have held POOL_SIZE task actors). */
    stopPool: stopChild(({ event }) => poolActorId(indexOfChildEvent(event))),
  },
  guards: {
    /** Its children are task actors (depth 0), not pools. */
    parentsTasks: ({ context }) => context.depth === 0,
    /** The child that holds this task is not alive yet: the task is its first. */
    isNewChild: ({ context, event }) => !context.open.includes(childOf(context, (event as Ev<'START'>).index)),
    /** The task is the last its child holds (its last slot, or the last task of a child pool's span). */
    isLastOfChild: ({ context, event }) => isLast(context, (event as Ev<'START'>).index),
    /**
     * A pool of depth 0 is given the task of its last slot: it seals itself, since its batch starts tasks in it
     * directly and no pool above it sees that task.
     */
    isLastSlot: ({ context, event }) => context.depth === 0 && ((event as Ev<'START'>).index + 1) % POOL_SIZE === 0,
    /** The child that holds this task is still alive (a cancel for a child that ended has nothing to reach). */
    childAlive: ({ context, event }) => context.open.includes(childOf(context, (event as Ev<'CANCEL'>).index)),
    isDrained: ({ context }) => context.sealed && context.open.length === 0,
  },
}).extend<Composite<'spawnTask' | 'spawnPool' | 'sealPassed' | 'cancelTasks' | 'passDownAll' | 'sealChildren'>>({
  actions: {
    /** A task actor in the task's slot; the task's id travels in its input. */
    spawnTask: enqueueActions(({ context, event, enqueue }) => {
      const { task, index } = event as Ev<'START'>;
      const { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs } = context;
      enqueue.spawnChild('task', {
        id: taskActorId(childOf(context, index)),
        input: { task, batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs },
      });
    }),
    /** A pool one level down, spawned with its first task; one of depth 0 is known to the system by its place. */
    spawnPool: enqueueActions(({ context, event, enqueue }) => {
      const { index } = event as Ev<'START'>;
      const { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs } = context;
      const input: PoolInput = {
        batchId,
        background,
        ownerId,
        notifyOwner,
        maxRestarts,
        restartDelayMs,
        depth: context.depth - 1,
      };
      const id = poolActorId(childOf(context, index));
      if (input.depth === 0)
        enqueue.spawnChild('pool', { id, systemId: leafPoolSystemId(batchId, leafPoolOf(index)), input });
      else enqueue.spawnChild('pool', { id, input });
    }),
    sealPassed: enqueueActions(({ context, event, enqueue }) => {
      for (const child of passedBy(context, (event as Ev<'START'>).index))
        enqueue({ type: 'tell', params: { to: poolActorId(child), event: SEAL } });
    }),
    /** A task actor is cancelled with the reason (CANCEL); it has no tasks of its own to cancel. */
    cancelTasks: enqueueActions(({ context, event, enqueue }) => {
      const { status, text } = event as Ev<'CANCEL_ALL'>;
      const cancel = { type: 'CANCEL', status, text };
      for (const slot of context.open) enqueue({ type: 'tell', params: { to: taskActorId(slot), event: cancel } });
    }),
    passDownAll: enqueueActions(({ context, event, enqueue }) => {
      const { status, text } = event as Ev<'CANCEL_ALL'>;
      const cancelAll = { type: 'CANCEL_ALL', status, text };
      for (const child of context.open) enqueue({ type: 'tell', params: { to: poolActorId(child), event: cancelAll } });
    }),
    sealChildren: enqueueActions(({ context, enqueue }) => {
      for (const child of context.unsealed) enqueue({ type: 'tell', params: { to: poolActorId(child), event: SEAL } });
    }),
  },
});
