import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import type { TaskSpec } from '../../../src/protocol/index.js';
import type { LaneInput } from '../lane/setup.js';
import {
  type Cancellation,
  type Composite,
  indexOfChildEvent,
  LANE_SIZE,
  laneActorId,
  laneOf,
  slotOf,
  type Tell,
} from '../shared.js';

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

/** The group chart's implementations: chart.ts is the chart a reader opens first. */
export const groupSetup = setup({
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
}).extend<Composite<'startTask' | 'cancelOne' | 'cancelAll' | 'seal' | 'stopLane'>>({
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
      for (const lane of context.lanes) enqueue({ type: 'tell', params: { to: laneActorId(lane), event: cancelAll } });
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
});
