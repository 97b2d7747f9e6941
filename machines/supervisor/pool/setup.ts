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
import type { TaskInput } from '../task/setup.js';

/** What a pool keeps of its input: its batch, its tasks' settings and its depth. */
export interface PoolSettings extends TaskSettings {
  batchId: string;
  background: boolean;
  /** 0: its children are task actors; n: they are pools of depth n − 1. */
  depth: number;
}

export interface PoolInput extends PoolSettings {
  /**
   * The tasks it starts with, in index order, when the pool above it spawns it in a fill (see `firstChildren`): its
   * children are spawned with them as it is created. XState keeps an actor's input for its whole life; a pool of
   * depth 0 keeps task actors holding these same tasks as long as it lives (finished ones are stopped with it), so
   * they cost it nothing more. A pool of depth 1 or more would keep the tasks of child pools that already ended:
   * the batch gives its own pools (of depth POOL_DEPTH, 1) their tasks in a message (FILL) instead.
   */
  starts?: PoolStart[];
  /** The fill that spawned it moved past it or gave it its last task: no task will come later. */
  sealed?: boolean;
}

export interface PoolContext extends PoolSettings {
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
  /** The tasks a pool its batch has just spawned starts with, in index order: its first fill, in one message. */
  | { type: 'FILL'; starts: PoolStart[] }
  | ({ type: 'CANCEL'; index: number } & Cancellation)
  | ({ type: 'CANCEL_ALL' } & Cancellation)
  | { type: 'SEAL' }
  | { type: `xstate.done.actor.${'pool' | 'task'}.${string}` }
  | { type: `xstate.error.actor.task.${string}` };

type Ev<T extends PoolEvent['type']> = Extract<PoolEvent, { type: T }>;

/** How many of a batch's tasks one child of a pool of this depth holds (1: a child is a task actor). */
const spanOf = (depth: number): number => POOL_SIZE ** depth;
type Depth = Pick<PoolContext, 'depth'>;
/** The child of the pool that runs the task at `index` of the batch. */
const childOf = (context: Depth, index: number): number => Math.floor(index / spanOf(context.depth)) % POOL_SIZE;
const childActorId = (context: PoolContext, child: number): string =>
  context.depth === 0 ? taskActorId(child) : poolActorId(child);
/** The task at `index` is the last its child holds: that child gets no more tasks. */
const isLast = (context: Depth, index: number): boolean => (index + 1) % spanOf(context.depth) === 0;
/**
 * A pool of depth 0 given the task of its last slot seals itself: its batch starts tasks in it directly, and no pool
 * above it sees that task.
 */
const isLastSlot = (context: Depth, index: number): boolean => context.depth === 0 && (index + 1) % POOL_SIZE === 0;
/**
 * The child pools that get no more tasks once the task at `index` has started: the batch starts tasks in order, so
 * no child after its child exists yet, and every other unsealed one is passed; its child too when the task is the
 * last it holds.
 */
function passedBy(context: Pick<PoolContext, 'depth' | 'unsealed'>, index: number): number[] {
  const child = childOf(context, index);
  const passed = context.unsealed.filter((open) => open !== child);
  return isLast(context, index) ? [...passed, child] : passed;
}

/** What a child of this pool is spawned with: a task actor's input (its task's id travels in it). */
function taskInput(context: PoolSettings, task: TaskSpec): TaskInput {
  const { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs } = context;
  return { task, batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs };
}

/** What a child of this pool is spawned with: a pool's input, one level down. */
function poolInput(context: PoolSettings): PoolInput {
  const { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs } = context;
  return { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs, depth: context.depth - 1 };
}

/** How the child pool that holds the task at `index` is spawned: one of depth 0 is known to the system by its place. */
function childPool(context: PoolSettings, index: number, input: PoolInput) {
  const id = poolActorId(childOf(context, index));
  return context.depth === 1
    ? { id, systemId: leafPoolSystemId(context.batchId, leafPoolOf(index)), input }
    : { id, input };
}

/** XState's `spawn`, as a context factory and an `assign` are given it. */
type Spawn = (
  src: 'task' | 'pool',
  options: { id: string; systemId?: string; input: TaskInput | PoolInput },
) => unknown;

/**
 * A pool with no children yet given many tasks at once (its batch's FILL, or its input's `starts`) spawns its
 * children with them in one go: their `children` copied once, in one snapshot, with no START each through it. What it
 * does is what START by START would: each child is spawned with its tasks (a child pool gets them in its input,
 * sealed if this fill moved past it or gave it its last task: `passedBy` decides), in index order, so tasks start
 * in order; it is open; only the child still filling stays unsealed; a pool of depth 0 given its last slot seals
 * itself.
 */
function firstChildren(
  context: PoolContext,
  starts: PoolStart[],
  spawn: Spawn,
): Pick<PoolContext, 'open' | 'unsealed' | 'sealed'> {
  const groups: PoolStart[][] = [];
  const passed: number[] = [];
  let unsealed = context.unsealed;
  for (const start of starts) {
    const child = childOf(context, start.index);
    const group = groups.at(-1);
    if (group && childOf(context, (group[0] as PoolStart).index) === child) group.push(start);
    else groups.push([start]);
    passed.push(...passedBy({ depth: context.depth, unsealed }, start.index));
    unsealed = isLast(context, start.index) ? [] : [child];
  }
  const open = [...context.open];
  for (const group of groups) {
    const { task, index } = group[0] as PoolStart;
    const child = childOf(context, index);
    open.push(child);
    if (context.depth === 0) spawn('task', { id: taskActorId(child), input: taskInput(context, task) });
    else {
      spawn(
        'pool',
        childPool(context, index, { ...poolInput(context), starts: group, sealed: passed.includes(child) }),
      );
    }
  }
  const last = starts.at(-1);
  const sealed = context.sealed || (last !== undefined && isLastSlot(context, last.index));
  return { open, unsealed, sealed };
}

/** A pool's context as it is created: spawned with its tasks (`starts`), its children are spawned with it. */
export function initialContext(input: PoolInput, spawn: Spawn): PoolContext {
  const { starts, sealed = false, ...settings } = input;
  const context: PoolContext = { ...settings, open: [], unsealed: [], sealed };
  return starts?.length ? { ...context, ...firstChildren(context, starts, spawn) } : context;
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
    /** The tasks of its first fill: its children are spawned with them at once (see `firstChildren`). */
    spawnFirst: assign(({ context, event, spawn }) => firstChildren(context, (event as Ev<'FILL'>).starts, spawn)),
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
    /** A pool of depth 0 is given the task of its last slot (see `isLastSlot`). */
    isLastSlot: ({ context, event }) => isLastSlot(context, (event as Ev<'START'>).index),
    /** The child that holds this task is still alive (a cancel for a child that ended has nothing to reach). */
    childAlive: ({ context, event }) => context.open.includes(childOf(context, (event as Ev<'CANCEL'>).index)),
    isDrained: ({ context }) => context.sealed && context.open.length === 0,
  },
}).extend<Composite<'spawnTask' | 'spawnPool' | 'sealPassed' | 'cancelTasks' | 'passDownAll' | 'sealChildren'>>({
  actions: {
    /** A task actor in the task's slot; the task's id travels in its input. */
    spawnTask: enqueueActions(({ context, event, enqueue }) => {
      const { task, index } = event as Ev<'START'>;
      enqueue.spawnChild('task', { id: taskActorId(childOf(context, index)), input: taskInput(context, task) });
    }),
    /** A pool one level down, spawned with its first task; one of depth 0 is known to the system by its place. */
    spawnPool: enqueueActions(({ context, event, enqueue }) => {
      enqueue.spawnChild('pool', childPool(context, (event as Ev<'START'>).index, poolInput(context)));
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
