import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import type { TaskSpec } from '../../../src/protocol/index.js';
import {
  type Cancellation,
  type Composite,
  indexOfChildEvent,
  type TaskSettings,
  type Tell,
  taskActorId,
} from '../shared.js';

export interface LaneInput extends TaskSettings {
  batchId: string;
  background: boolean;
}

export interface LaneContext extends LaneInput {
  /** Slots of the tasks started here whose actor has not ended yet. */
  open: number[];
  /** No more tasks will come (the batch moved past this lane, or stopped starting). */
  sealed: boolean;
}

export type LaneEvent =
  | { type: 'START'; task: TaskSpec; slot: number }
  | ({ type: 'CANCEL'; slot: number } & Cancellation)
  | ({ type: 'CANCEL_ALL' } & Cancellation)
  | { type: 'SEAL' };

/** The lane chart's implementations: chart.ts is the chart a reader opens first. */
export const laneSetup = setup({
  types: {
    context: {} as LaneContext,
    events: {} as LaneEvent,
    input: {} as LaneInput,
  },
  actors: {
    /** The task machine, provided by the runtime's composition. */
    task: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    tell: sendTo(
      (_, params: Tell) => params.to,
      (_, params: Tell) => params.event,
    ),
    record: assign((_, changes: Partial<LaneContext>) => changes),
    seal: assign({ sealed: true }),
    forgetTask: assign({
      open: ({ context, event }) => {
        const slot = indexOfChildEvent(event);
        return context.open.filter((open) => open !== slot);
      },
    }),
  },
  guards: {
    isDrained: ({ context }) => context.sealed && context.open.length === 0,
  },
}).extend<Composite<'startTask' | 'cancelOne' | 'cancelAll'>>({
  actions: {
    startTask: enqueueActions(({ context, event, enqueue }) => {
      const { task, slot } = event as Extract<LaneEvent, { type: 'START' }>;
      enqueue.spawnChild('task', {
        id: taskActorId(slot),
        input: {
          task,
          batchId: context.batchId,
          background: context.background,
          ownerId: context.ownerId,
          notifyOwner: context.notifyOwner,
          maxRestarts: context.maxRestarts,
          restartDelayMs: context.restartDelayMs,
        },
      });
      enqueue({ type: 'record', params: { open: [...context.open, slot] } });
    }),
    cancelOne: enqueueActions(({ context, event, enqueue }) => {
      const { slot, status, text } = event as Extract<LaneEvent, { type: 'CANCEL' }>;
      const cancel = { type: 'CANCEL', status, text };
      if (context.open.includes(slot)) enqueue({ type: 'tell', params: { to: taskActorId(slot), event: cancel } });
    }),
    cancelAll: enqueueActions(({ context, event, enqueue }) => {
      const { status, text } = event as Extract<LaneEvent, { type: 'CANCEL_ALL' }>;
      const cancel = { type: 'CANCEL', status, text };
      for (const slot of context.open) enqueue({ type: 'tell', params: { to: taskActorId(slot), event: cancel } });
    }),
  },
});
