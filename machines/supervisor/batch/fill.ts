// How a batch counts its settles and starts its queue: the batch chart's `count`, `fill` and `countAndFill`.
import type { TaskSpec } from '../../../src/protocol/index.js';
import type { PoolInput, PoolStart } from '../pool/setup.js';
import { leafPoolOf, POOL_DEPTH, POOL_SIZE, POOL_TASKS, poolActorId, poolOf, type Tell } from '../shared.js';
import type { TaskSettled } from '../task/setup.js';
import type { BatchContext, BatchEvent } from './types.js';

export const SEAL = { type: 'SEAL' } as const;

/** The join counts with the settle in hand counted: what the join guards decide on. */
export function withSettle(context: BatchContext, event: BatchEvent): { completed: number; ended: number } {
  return {
    completed: context.completed + ((event as TaskSettled).status === 'completed' ? 1 : 0),
    ended: context.ended + 1,
  };
}

/**
 * The pool of depth 0 that runs the task at `index` was given a task in an earlier macrostep: it exists and is
 * unsealed (tasks start in order, so nothing has moved past it), and the task can start in it directly. One that
 * gets its first task now is spawned on the way down: its START goes through the pools above it, or, if its batch
 * spawns the pool above it in this fill, it is spawned with its tasks (FILL). The cursor skips a task cancelled
 * while queued only on its way to one it starts (or to the end), so a pool it has entered holds a started task.
 */
const leafAlive = (context: BatchContext, index: number): boolean => leafPoolOf(index) * POOL_SIZE < context.next;

/** Whether the batch restarts siblings, so it must know which tasks still run. */
const restartsSiblings = (context: BatchContext) => {
  const strategy = context.supervision?.strategy;
  return strategy === 'oneForAll' || strategy === 'restForOne';
};

/** The counts once the settle in hand is counted: its slot is free, and the join counts move. */
export function countOf(context: BatchContext, event: BatchEvent): Partial<BatchContext> {
  const { completed, ended } = withSettle(context, event);
  const counted: Partial<BatchContext> = { running: context.running - 1, completed, ended };
  if (restartsSiblings(context)) counted.done = [...context.done, (event as TaskSettled).taskId];
  return counted;
}

/** Tells the pool spawned in this fill the tasks it starts with. */
function tellFill(enqueue: FillQueue, pool: number, starts: PoolStart[]): void {
  enqueue({ type: 'tell', params: { to: poolActorId(pool), event: { type: 'FILL', starts } } });
}

/** What `fill` enqueues: starts, seals, spawned pools, and its `record`. */
interface FillQueue {
  (action: { type: 'tell'; params: Tell } | { type: 'startInLeaf'; params: { leaf: number; event: PoolStart } }): void;
  (action: { type: 'record'; params: Partial<BatchContext> }): void;
  spawnChild(src: 'pool', options: { id: string; input: PoolInput }): void;
}

/**
 * Starts queued tasks up to the cap, each in its pool, and seals the pools it has moved past; `counted`, the counts
 * a settle moved, are recorded with what it moves. A pool spawned here is given its tasks of this fill in one FILL,
 * not a START each relayed down to child pools that do not exist yet; in a message, not in its input, which XState
 * keeps as long as the pool lives. Tasks still start in order: those of pools that exist come first (the cursor is
 * past them), and each pool spawned here is told its FILL before the next one is spawned.
 */
export function fillFrom(context: BatchContext, enqueue: FillQueue, counted?: Partial<BatchContext>): void {
  let { next, pools, unsealed } = context;
  let running = counted?.running ?? context.running;
  const size = context.tasks.length;
  // The pool spawned in this fill that the cursor is in, and its tasks so far.
  let spawned = -1;
  let starts: PoolStart[] = [];
  while (running < context.concurrency && next < size) {
    const index = next++;
    const task = context.tasks[index] as TaskSpec;
    if (context.cancelled.includes(task.taskId)) continue;
    const pool = poolOf(index);
    const start: PoolStart = { type: 'START', task, index };
    running++;
    if (pool === spawned) starts.push(start);
    else if (!pools.includes(pool)) {
      if (starts.length) tellFill(enqueue, spawned, starts);
      enqueue.spawnChild('pool', {
        id: poolActorId(pool),
        input: {
          batchId: context.batchId,
          background: context.background,
          ownerId: context.ownerId,
          notifyOwner: context.notifyOwner,
          maxRestarts: context.maxRestarts,
          restartDelayMs: context.restartDelayMs,
          depth: POOL_DEPTH,
        },
      });
      pools = [...pools, pool];
      unsealed = [...unsealed, pool];
      spawned = pool;
      starts = [start];
    } else if (leafAlive(context, index))
      enqueue({ type: 'startInLeaf', params: { leaf: leafPoolOf(index), event: start } });
    else enqueue({ type: 'tell', params: { to: poolActorId(pool), event: start } });
  }
  if (starts.length) tellFill(enqueue, spawned, starts);
  // Pools the cursor has moved past get no more tasks; the others stay unsealed (`open`, made at the first sealed).
  // A loop, not filter's callbacks: a closure made per settle dies with it, and a collection drops its code.
  let open: number[] | undefined;
  for (let i = 0; i < unsealed.length; i++) {
    const pool = unsealed[i] as number;
    if (next >= size || (pool + 1) * POOL_TASKS <= next) {
      enqueue({ type: 'tell', params: { to: poolActorId(pool), event: SEAL } });
      open ??= unsealed.slice(0, i);
    } else open?.push(pool);
  }
  if (open) unsealed = open;
  // Only save a context copy when something moved (a task started only by moving the cursor, a pool spawned only
  // for a started task): recording unchanged values is the same state.
  // Stryker disable next-line ConditionalExpression: `true` records unchanged values (the same state)
  if (counted || next !== context.next || open) {
    const changes = counted ?? {};
    changes.next = next;
    changes.running = running;
    changes.pools = pools;
    changes.unsealed = unsealed;
    enqueue({ type: 'record', params: changes });
  }
}
