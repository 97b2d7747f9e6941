import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import type { TaskSpec } from '../../src/protocol/index.js';
import type { LaneInput } from './lane.js';
import {
  type Cancellation,
  type Composite,
  indexOfChildEvent,
  LANE_SIZE,
  laneActorId,
  laneOf,
  slotOf,
  type Tell,
} from './shared.js';

/**
 * A group parents up to GROUP_SIZE lanes of one batch, as a lane parents up to LANE_SIZE tasks: a batch of
 * thousands of tasks holds a few groups, each a few lanes, so that no lane's end (a stop, which copies its parent's
 * `children`) costs more than a copy of GROUP_SIZE entries. The batch decides what starts and when; a group spawns
 * the lane a task belongs in, seals the lanes that will get no more tasks, passes cancellations down, stops each
 * lane that ended (a settled task tells its batch itself), and ends once the batch has sealed it and its lanes are gone.
 */

export type GroupInput = LaneInput;

export interface GroupContext extends GroupInput {
  /** Lanes alive (by their place in the group), and those that may still be given a task. */
  lanes: number[];
  unsealed: number[];
  /** No more tasks will come (the batch moved past this group, or stopped starting). */
  sealed: boolean;
}

/** `index` is the task's place in its batch: it says which lane and slot it runs in. */
export type GroupEvent =
  | { type: 'START'; task: TaskSpec; index: number }
  | ({ type: 'CANCEL'; index: number } & Cancellation)
  | ({ type: 'CANCEL_ALL' } & Cancellation)
  | { type: 'SEAL' }
  | { type: `xstate.done.actor.lane.${string}` };

const SEAL = { type: 'SEAL' } as const;

export const groupMachine = setup({
  types: {
    context: {} as GroupContext,
    events: {} as GroupEvent,
    input: {} as GroupInput,
  },
  actors: {
    /** The lane machine, provided by the runtime's composition. */
    lane: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    tell: sendTo(
      (_, params: Tell) => params.to,
      (_, params: Tell) => params.event,
    ),
    record: assign((_, changes: Partial<GroupContext>) => changes),
  },
  guards: {
    isDrained: ({ context }) => context.sealed && context.lanes.length === 0,
  },
})
  .extend<Composite<'startTask' | 'cancelOne' | 'cancelAll' | 'seal' | 'stopLane'>>({
    actions: {
      /**
       * Starts a task in its lane (spawned with its first task). The batch starts tasks in order, so the lanes
       * before this one get no more, nor does this one once its last slot is given: they are sealed now.
       */
      startTask: enqueueActions(({ context, event, enqueue }) => {
        const { task, index } = event as Extract<GroupEvent, { type: 'START' }>;
        const lane = laneOf(index);
        let { lanes, unsealed } = context;
        if (!lanes.includes(lane)) {
          const { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs } = context;
          const input: GroupInput = { batchId, background, ownerId, notifyOwner, maxRestarts, restartDelayMs };
          enqueue.spawnChild('lane', { id: laneActorId(lane), input });
          lanes = [...lanes, lane];
          unsealed = [...unsealed, lane];
        }
        const slot = slotOf(index);
        enqueue({ type: 'tell', params: { to: laneActorId(lane), event: { type: 'START', task, slot } } });
        const last = slot === LANE_SIZE - 1;
        const sealing = unsealed.filter((open) => open < lane || (last && open === lane));
        for (const open of sealing) enqueue({ type: 'tell', params: { to: laneActorId(open), event: SEAL } });
        if (sealing.length) unsealed = unsealed.filter((open) => !sealing.includes(open));
        // Stryker disable next-line ConditionalExpression: `true` records unchanged values (the same state)
        if (lanes !== context.lanes || sealing.length) enqueue({ type: 'record', params: { lanes, unsealed } });
      }),
      cancelOne: enqueueActions(({ context, event, enqueue }) => {
        const { index, status, text } = event as Extract<GroupEvent, { type: 'CANCEL' }>;
        const lane = laneOf(index);
        const cancel = { type: 'CANCEL', slot: slotOf(index), status, text };
        if (context.lanes.includes(lane)) enqueue({ type: 'tell', params: { to: laneActorId(lane), event: cancel } });
      }),
      cancelAll: enqueueActions(({ context, event, enqueue }) => {
        const { status, text } = event as Extract<GroupEvent, { type: 'CANCEL_ALL' }>;
        const cancelAll = { type: 'CANCEL_ALL', status, text };
        for (const lane of context.lanes)
          enqueue({ type: 'tell', params: { to: laneActorId(lane), event: cancelAll } });
      }),
      seal: enqueueActions(({ context, enqueue }) => {
        for (const lane of context.unsealed) enqueue({ type: 'tell', params: { to: laneActorId(lane), event: SEAL } });
        enqueue({ type: 'record', params: { sealed: true, unsealed: [] } });
      }),
      stopLane: enqueueActions(({ context, event, enqueue }) => {
        const lane = indexOfChildEvent(event);
        enqueue.stopChild(laneActorId(lane));
        enqueue({ type: 'record', params: { lanes: context.lanes.filter((l) => l !== lane) } });
      }),
    },
  })
  .createMachine({
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
