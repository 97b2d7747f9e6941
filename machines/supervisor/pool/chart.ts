import { poolSetup } from './setup.js';

/**
 * A pool parents at most POOL_SIZE children of one batch: task actors (depth 0) or pools one level down. Every
 * spawn and every stop copies its parent's `children`, so a batch of thousands of tasks spawns them through a tree
 * of pools (POOL_DEPTH + 1 levels), no actor holding more than POOL_SIZE children. The batch decides what starts
 * and when; a pool spawns the child a task belongs in, seals the child pools that will get no more tasks, passes
 * cancellations down (a settled task tells its batch itself) and ends once the batch has sealed it and its children
 * are gone. A pool of depth 0 is also given tasks by its batch directly once it exists, and seals itself on its
 * last slot. A child pool that ended is stopped at once; finished task actors are not (a stop copies `children`
 * again, on V8's slow path): the pool's own end stops them together.
 */
export const poolMachine = poolSetup.createMachine({
  id: 'pool',
  context: ({ input }) => ({ ...input, open: [], unsealed: [], sealed: false }),
  initial: 'open',
  states: {
    open: {
      description: 'Its children are spawned here with their first task, run and end.',
      always: { guard: 'isDrained', target: 'drained' },
      on: {
        START: [
          { guard: 'isLastSlot', actions: ['spawnTask', 'openChild', 'seal'] },
          { guard: 'parentsTasks', actions: ['spawnTask', 'openChild'] },
          { guard: 'isNewChild', actions: ['spawnPool', 'passDown', 'sealPassed', 'openChild'] },
          { guard: 'isLastOfChild', actions: ['passDown', 'sealPassed', 'clearUnsealed'] },
          { actions: 'passDown' },
        ],
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
