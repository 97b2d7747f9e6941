import { groupSetup } from './setup.js';

/**
 * A group parents up to GROUP_SIZE lanes of one batch, as a lane parents up to LANE_SIZE tasks: a batch of
 * thousands of tasks holds a few groups, each a few lanes, so that no lane's end (a stop, which copies its parent's
 * `children`) costs more than a copy of GROUP_SIZE entries. The batch decides what starts and when; a group spawns
 * the lane a task belongs in, seals the lanes that will get no more tasks, passes cancellations down, stops each
 * lane that ended (a settled task tells its batch itself), and ends once the batch has sealed it and its lanes are gone.
 */
export const groupMachine = groupSetup.createMachine({
  id: 'group',
  context: ({ input }) => ({ ...input, lanes: [], unsealed: [], sealed: false }),
  initial: 'open',
  states: {
    /** Its lanes are started here, run and end. */
    open: {
      always: { guard: 'isDrained', target: 'drained' },
      on: {
        START: { actions: 'startTask' },
        CANCEL: { actions: 'cancelOne' },
        CANCEL_ALL: { actions: 'cancelAll' },
        SEAL: { actions: 'seal' },
        'xstate.done.actor.lane.*': { actions: 'stopLane' },
      },
    },
    /** Sealed and empty: the batch stops it. */
    drained: { type: 'final' },
  },
});
