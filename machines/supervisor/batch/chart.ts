import { batchSetup } from './setup.js';

/**
 * A swarm batch: `running → joining → settled → released`. It holds the queue, the concurrency cap and the join
 * counts; its tasks run in groups of lanes (bounded fan-out: GROUP_SIZE lanes of LANE_SIZE tasks each). `running`
 * starts tasks up to the cap as slots free up; the settle that decides the join policy (or CANCEL_BATCH) moves it to `joining`, which cancels
 * the tasks still running and drops the queued ones; `settled` tells the supervisor once every task has settled;
 * `released` is reached when its groups are gone (a settled task may keep its idle agent alive for a while).
 */
export const batchMachine = batchSetup.createMachine({
  id: 'batch',
  context: ({ input }) => ({
    ...input.batch,
    ownerId: input.ownerId,
    notifyOwner: input.notifyOwner,
    maxRestarts: input.maxRestarts,
    restartDelayMs: input.restartDelayMs,
    tasks: [],
    next: 0,
    running: 0,
    ended: 0,
    completed: 0,
    cancelled: [],
    groups: [],
    unsealed: [],
  }),
  initial: 'running',
  on: {
    'xstate.done.actor.group.*': { actions: 'stopGroup' },
  },
  states: {
    /** Tasks run, at most `concurrency` at once; each settle frees a slot for the next queued task. */
    running: {
      entry: 'fill',
      always: { guard: 'allEnded', target: 'settled' },
      on: {
        QUEUE: { actions: ['queue', 'fill'] },
        'TASK.SETTLED': [
          { guard: 'decidesJoin', target: 'joining', actions: ['count', 'joined'] },
          { actions: ['count', 'fill'] },
        ],
        CANCEL: [
          { guard: 'cancelDecidesJoin', target: 'joining', actions: ['cancelTask', 'joined'] },
          { actions: ['cancelTask', 'fill'] },
        ],
        CANCEL_BATCH: { target: 'joining', actions: 'interrupted' },
      },
    },
    /** The outcome is decided: the tasks left are cancelled, and their settlements awaited. */
    joining: {
      entry: 'stopRest',
      always: { guard: 'allEnded', target: 'settled' },
      on: {
        'TASK.SETTLED': { actions: 'count' },
      },
    },
    /** Every task has settled: the supervisor hears it. Groups with kept agents may still be alive. */
    settled: {
      entry: [
        { type: 'reportSettled', params: ({ context }) => ({ type: 'BATCH.SETTLED', batchId: context.batchId }) },
        'forgetQueue',
      ],
      always: { guard: 'noGroups', target: 'released' },
    },
    /** Nothing of the batch is left: the supervisor stops it. */
    released: { type: 'final' },
  },
});
