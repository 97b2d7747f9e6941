import { initialContext, poolSetup } from './setup.js';

/**
 * A pool parents at most POOL_SIZE children of one batch: task actors (depth 0) or pools one level down. Every
 * spawn and every stop copies its parent's `children`, so a batch of thousands of tasks spawns them through a tree
 * of pools (POOL_DEPTH + 1 levels), no actor holding more than POOL_SIZE children. The batch decides what starts
 * and when; a pool spawns the child a task belongs in, seals the child pools that will get no more tasks, passes
 * cancellations down (a settled task tells its batch itself) and ends once the batch has sealed it and its children
 * are gone. A pool of depth 0 is also given tasks by its batch directly once it exists, and seals itself on its
 * last slot. A pool its batch spawns in a fill gets all the tasks that fill starts in it in one message (FILL),
 * and spawns its children with them in one go, each child pool with its own tasks in its input (that pool is
 * created with its task actors): the bookkeeping of START by START, without a START per task through every level
 * (an event and a microstep each) or a copy of `children` per spawn. A child pool that ended is stopped at once;
 * finished task actors are not (a stop copies `children` again, on V8's slow path): the pool's own end stops them
 * together.
 */
export const poolMachine = poolSetup.createMachine({
  id: 'pool',
  context: ({ input, spawn }) => initialContext(input, spawn),
  initial: 'open',
  states: {
    open: {
      description:
        'Its children are spawned with their first task (here, or with the pool itself when it is created with its tasks), run and end.',
      always: { guard: 'isDrained', target: 'drained' },
      on: {
        START: [
          { guard: 'isLastSlot', actions: ['spawnTask', 'openChild', 'seal'] },
          { guard: 'parentsTasks', actions: ['spawnTask', 'openChild'] },
          { guard: 'isNewChild', actions: ['spawnPool', 'passDown', 'sealPassed', 'openChild'] },
          { guard: 'isLastOfChild', actions: ['passDown', 'sealPassed', 'clearUnsealed'] },
          { actions: 'passDown' },
        ],
        // Only from its batch, right after spawning it: the tasks it starts with, in one message.
        FILL: { actions: 'spawnFirst' },
        CANCEL: { guard: 'childAlive', actions: 'passDown' },
        CANCEL_ALL: [{ guard: 'parentsTasks', actions: 'cancelTasks' }, { actions: 'passDownAll' }],
        SEAL: { actions: ['sealChildren', 'seal'] },
        'xstate.done.actor.pool.*': { actions: ['stopPool', 'forgetChild'] },
        'xstate.done.actor.task.*': { actions: 'forgetChild' },
        // A task actor that fails is a bug of the runtime's effects; it must not take the pool (and the batch) down.
        'xstate.error.actor.task.*': { actions: 'forgetChild' },
      },
    },
    /** Sealed and empty: its parent stops it. */
    drained: { type: 'final' },
  },
});
