import { type AnyActorLogic, assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import type { RestartOptions, SupervisorCommand } from '../../src/protocol/index.js';
import type { BatchSettled } from './batch/types.js';
import { batchActorId, batchSystemId, type Composite, childId, type Tell } from './shared.js';

/** What a supervisor starts from: the agent (or root) it works for, and how its tasks restart. */
export interface SupervisorInput extends RestartOptions {
  /** The agent that owns this supervisor, or the id of a root supervisor. */
  ownerId: string;
  /** Background results go to the owner as NOTIFY; false for a root supervisor. */
  notifyOwner?: boolean;
}

/** A supervisor's working set: the batches it runs and the long-lived members it keeps. */
export interface SupervisorContext extends RestartOptions {
  ownerId: string;
  notifyOwner: boolean;
  /** Batches with tasks still to settle. */
  open: string[];
  /** Batch actors alive (settled ones may still hold kept agents). */
  batches: string[];
  /** Long-lived agents adopted by a root supervisor (`supervisor.agent()`): no task, never evicted. */
  members: string[];
  /** Members in the middle of a run: the supervisor is busy while they work, even with no task of its own. */
  working: string[];
}

/**
 * Every event a supervisor's machine handles: the commands it is sent (spawn, cancel, adopt, stop) and its batches' and
 * members' reports.
 */
export type SupervisorEvent =
  | SupervisorCommand
  | BatchSettled
  /** A member started a run, or went back to idle (sent by the runtime). */
  | { type: 'MEMBER.BUSY'; agentId: string }
  | { type: 'MEMBER.IDLE'; agentId: string };

/** The id at the end of an `xstate.*.actor.<prefix><id>` event (its wildcard transition guarantees the prefix). */
const suffixOf = (eventType: string, prefix: string): string =>
  eventType.slice(eventType.indexOf(prefix) + prefix.length);
type Ev<T extends SupervisorEvent['type']> = Extract<SupervisorEvent, { type: T }>;

/** The supervisor chart's implementations: chart.ts is the chart a reader opens first. */
export const supervisorSetup = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
  },
  actors: {
    /** The batch machine, provided by the runtime's composition. */
    batch: fromCallback(() => {}) as AnyActorLogic,
    /** A member agent: the runtime provides the agent machine joined to its workers. */
    subagent: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    // Effects, provided by the runtime; they read their params and never change context.
    /** An adopted member is about to be spawned. */
    prepareMember: (_, _params: { agentId: string }) => {},
    /** A member was stopped: its runtime is released. */
    releaseChild: (_, _params: { agentId: string }) => {},
    /**
     * The supervisor stops: every open task under it settles as interrupted (quietly: the owner is going too),
     * its agents are interrupted and their own subtrees stopped. XState then stops the actors themselves.
     */
    stopTasks: (_, _params: { ownerId: string }) => {},
    tell: sendTo(
      (_, params: Tell) => params.to,
      (_, params: Tell) => params.event,
    ),
    record: assign((_, changes: Partial<SupervisorContext>) => changes),
  },
  guards: {
    isQuiet: ({ context }) => context.open.length === 0 && context.working.length === 0,
    isMember: ({ context, event }) => context.members.includes((event as Ev<'MEMBER.BUSY'>).agentId),
  },
}).extend<
  Composite<
    | 'startBatch'
    | 'forwardCancel'
    | 'forwardCancelBatch'
    | 'batchSettled'
    | 'stopBatch'
    | 'adopt'
    | 'releaseMember'
    | 'memberBusy'
    | 'memberIdle'
    | 'stopAll'
  >
>({
  actions: {
    startBatch: enqueueActions(({ context, event, enqueue }) => {
      const { tasks, ...shape } = (event as Ev<'SPAWN'>).batch;
      const batch = { ...shape, size: tasks.length };
      enqueue.spawnChild('batch', {
        id: batchActorId(batch.batchId),
        systemId: batchSystemId(batch.batchId),
        input: {
          batch,
          ownerId: context.ownerId,
          notifyOwner: context.notifyOwner,
          maxRestarts: context.maxRestarts,
          restartDelayMs: context.restartDelayMs,
        },
      });
      // Its tasks as a message, not in its input, which the actor would keep for life (see BatchInput).
      enqueue({ type: 'tell', params: { to: batchActorId(batch.batchId), event: { type: 'QUEUE', tasks } } });
      const open = [...context.open, batch.batchId];
      enqueue({ type: 'record', params: { open, batches: [...context.batches, batch.batchId] } });
    }),
    forwardCancel: enqueueActions(({ context, event, enqueue }) => {
      const { taskId, batchId } = event as Ev<'CANCEL'>;
      if (context.batches.includes(batchId)) {
        enqueue({ type: 'tell', params: { to: batchActorId(batchId), event: { type: 'CANCEL', taskId } } });
      }
    }),
    forwardCancelBatch: enqueueActions(({ context, event, enqueue }) => {
      const { batchId } = event as Ev<'CANCEL_BATCH'>;
      const cancel = { type: 'CANCEL_BATCH' };
      if (context.open.includes(batchId))
        enqueue({ type: 'tell', params: { to: batchActorId(batchId), event: cancel } });
    }),
    batchSettled: assign({
      open: ({ context, event }) => context.open.filter((id) => id !== (event as BatchSettled).batchId),
    }),
    stopBatch: enqueueActions(({ context, event, enqueue }) => {
      const batchId = suffixOf(event.type, 'actor.batch.');
      if (!context.batches.includes(batchId)) return;
      enqueue.stopChild(batchActorId(batchId));
      enqueue({
        type: 'record',
        params: {
          open: context.open.filter((id) => id !== batchId),
          batches: context.batches.filter((id) => id !== batchId),
        },
      });
    }),
    adopt: enqueueActions(({ context, event, enqueue }) => {
      const { agentId, agent } = event as Ev<'ADOPT'>;
      enqueue({ type: 'record', params: { members: [...context.members, agentId] } });
      enqueue({ type: 'prepareMember', params: { agentId } });
      enqueue.spawnChild('subagent', {
        id: childId(agentId),
        input: { agentId, parentId: context.ownerId, ...agent },
      });
    }),
    /** Stops a member (RELEASE, or it crashed): it leaves the members and the working list. */
    releaseMember: enqueueActions(({ context, event, enqueue }) => {
      const agentId = event.type === 'RELEASE' ? (event as Ev<'RELEASE'>).agentId : suffixOf(event.type, 'subagent.');
      if (!context.members.includes(agentId)) return;
      enqueue({
        type: 'record',
        params: {
          members: context.members.filter((id) => id !== agentId),
          working: context.working.filter((id) => id !== agentId),
        },
      });
      enqueue.stopChild(childId(agentId));
      enqueue({ type: 'releaseChild', params: { agentId } });
    }),
    memberBusy: assign({
      working: ({ context, event }) => {
        const { agentId } = event as Ev<'MEMBER.BUSY'>;
        return context.working.includes(agentId) ? context.working : [...context.working, agentId];
      },
    }),
    memberIdle: assign({
      working: ({ context, event }) => context.working.filter((id) => id !== (event as Ev<'MEMBER.IDLE'>).agentId),
    }),
    stopAll: enqueueActions(({ context, enqueue }) => {
      enqueue({ type: 'stopTasks', params: { ownerId: context.ownerId } });
      for (const agentId of context.members) enqueue({ type: 'releaseChild', params: { agentId } });
      enqueue({ type: 'record', params: { open: [], batches: [], members: [], working: [] } });
    }),
  },
});
