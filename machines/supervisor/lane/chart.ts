import { laneSetup } from './setup.js';

/**
 * A lane parents up to LANE_SIZE task actors of one batch, so that no actor of a swarm holds thousands of children
 * (every spawn copies its parent's `children`). The batch decides what starts and when; a lane only spawns, passes
 * cancellations down (a settled task tells its batch itself), and ends once its group has sealed it and every task in it is released.
 * Finished task actors are not stopped one by one (a stop copies `children` again, on V8's slow path): the lane's
 * end stops them together.
 */
export const laneMachine = laneSetup.createMachine({
  id: 'lane',
  context: ({ input }) => ({ ...input, open: [], sealed: false }),
  initial: 'open',
  states: {
    /** Tasks are started here, run, settle and are released. */
    open: {
      always: { guard: 'isDrained', target: 'drained' },
      on: {
        START: { actions: 'startTask' },
        CANCEL: { actions: 'cancelOne' },
        CANCEL_ALL: { actions: 'cancelAll' },
        SEAL: { actions: 'seal' },
        'xstate.done.actor.task.*': { actions: 'forgetTask' },
        // A task actor that fails is a bug of the runtime's effects; it must not take the lane (and the batch) down.
        'xstate.error.actor.task.*': { actions: 'forgetTask' },
      },
    },
    /** Sealed and empty: the batch stops it. */
    drained: { type: 'final' },
  },
});
