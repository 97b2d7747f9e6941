import { escalatedEnd, taskEnd } from '../../../src/protocol/index.js';
import type { TaskFailed } from '../shared.js';
import { batchSetup } from './setup.js';
import type { BatchContext, Escalation } from './types.js';

/** Why the tasks left end when the join policy is decided without them, and when the batch is cancelled. */
const JOINED = taskEnd('joined');
const CANCELLED = taskEnd('interrupted');
/** Why the tasks left end when a failure escalated: the failed task and the cause. */
const escalationCancel = (context: BatchContext) => {
  const { taskId, because } = context.escalation as Escalation;
  return escalatedEnd(taskId, because);
};

/**
 * A swarm batch: `running → joined | cancelled | escalated → settled → released`. It holds the queue, the concurrency cap and
 * the join counts; its tasks run in pools (bounded fan-out: POOL_SIZE children per pool).
 * `running` starts tasks up to the cap as slots free up. The settle that meets (or puts out of reach) the join
 * policy moves it to `joined`, CANCEL_BATCH to `cancelled`, a failure it escalates to `escalated`: each ends the tasks left, running ones through their
 * pools and queued ones here, without starting them. `settled` tells the supervisor once every task has settled;
 * `released` is reached when its pools are gone (a settled task may keep its idle agent alive for a while).
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
    pools: [],
    unsealed: [],
    restarts: input.batch.restarts ?? [],
    attempts: {},
    done: [],
  }),
  initial: 'running',
  on: {
    'xstate.done.actor.pool.*': { actions: 'stopPool' },
  },
  states: {
    running: {
      description: 'Tasks run, at most `concurrency` at once; each settle frees a slot for the next queued task.',
      entry: 'fill',
      always: { guard: 'allEnded', target: 'settled' },
      on: {
        QUEUE: { actions: ['queue', 'fill'] },
        // Each join policy's decision is its own guard; `all` and `allSettled` wait for every task (allEnded).
        'TASK.SETTLED': [
          { guard: 'firstCompleted', target: 'joined', actions: 'count' },
          { guard: 'quorumReached', target: 'joined', actions: 'count' },
          { guard: 'quorumOutOfReach', target: 'joined', actions: 'count' },
          { actions: 'countAndFill' },
        ],
        // A queued task is dropped here, a started one cancelled through its pool (cancelTask).
        CANCEL: [
          { guard: 'cancelPutsQuorumOutOfReach', target: 'joined', actions: 'cancelTask' },
          { actions: ['cancelTask', 'fill'] },
        ],
        CANCEL_BATCH: 'cancelled',
        // A failed run waits in its task for this verdict (failureVerdict): each outcome is its own guard.
        'TASK.FAILED': [
          { guard: 'isStaleFailure' },
          {
            guard: 'escalatesClass',
            target: 'escalated',
            actions: { type: 'recordEscalation', params: ({ event }) => ({ because: (event as TaskFailed).failure }) },
          },
          { guard: 'stopsTask', actions: 'giveUp' },
          {
            guard: 'exceedsIntensity',
            target: 'escalated',
            actions: { type: 'recordEscalation', params: { because: 'intensity' } },
          },
          { guard: 'resumesTask', actions: 'resumeTask' },
          { guard: 'restartsAll', actions: 'restartAll' },
          { guard: 'restartsRest', actions: 'restartRest' },
          { actions: 'restartOne' },
        ],
      },
    },
    joined: {
      description:
        'The join policy is decided (e.g. `first(1)`: one task completed), so nothing starts any more. Queued ' +
        'tasks are settled `cancelled` at once and never start (dropQueued); running ones are cancelled through ' +
        'their pools (cancelRunning) and their settlements awaited.',
      entry: [
        { type: 'cancelRunning', params: JOINED },
        { type: 'dropQueued', params: JOINED },
      ],
      always: { guard: 'allEnded', target: 'settled' },
      on: { 'TASK.SETTLED': { actions: 'count' } },
    },
    cancelled: {
      description:
        "The owner's call was interrupted (CANCEL_BATCH): queued tasks are settled `interrupted` at once and never " +
        'start (dropQueued); running ones are interrupted through their pools (cancelRunning) and awaited.',
      entry: [
        { type: 'cancelRunning', params: CANCELLED },
        { type: 'dropQueued', params: CANCELLED },
      ],
      always: { guard: 'allEnded', target: 'settled' },
      on: { 'TASK.SETTLED': { actions: 'count' } },
    },
    escalated: {
      description:
        'A failure escalated: its class says so (escalatesClass), or one restart more would exceed the intensity ' +
        '(exceedsIntensity). Like `cancelled`, every task left ends (the failed one with its failure, the others ' +
        '`cancelled` naming it), and the owner hears the cause (reportEscalation).',
      entry: [
        {
          type: 'cancelRunning',
          params: ({ context }) => escalationCancel(context),
        },
        { type: 'dropQueued', params: ({ context }) => escalationCancel(context) },
        { type: 'reportEscalation', params: ({ context }) => context.escalation as Escalation },
      ],
      always: { guard: 'allEnded', target: 'settled' },
      on: { 'TASK.SETTLED': { actions: 'count' } },
    },
    /** Every task has settled: the supervisor hears it. Pools with kept agents may still be alive. */
    settled: {
      entry: [
        { type: 'reportSettled', params: ({ context }) => ({ type: 'BATCH.SETTLED', batchId: context.batchId }) },
        'forgetQueue',
      ],
      always: { guard: 'noPools', target: 'released' },
    },
    /** Nothing of the batch is left: the supervisor stops it. */
    released: { type: 'final' },
  },
});
