import type { ActorRefFrom } from 'xstate';
import { supervisorSetup } from './setup.js';

/**
 * The supervisor: one per agent that starts subagents (created when first needed), and one at the root of a
 * `createSupervisor()` tree. Each swarm batch is its own actor (`batch.<batchId>`: queue, cap, join policy), whose
 * pools parent pools, which parent the task actors, whose children are the agents: supervisor → batch → pool →
 * pool → task → agent. The supervisor itself only starts and forwards: it is `busy` while a batch has unsettled
 * tasks or a member works.
 * Members (`supervisor.agent()`) are its own children, `subagent.<agentId>`.
 */
export const supervisorMachine = supervisorSetup.createMachine({
  id: 'supervisor',
  context: ({ input }) => ({
    ownerId: input.ownerId,
    notifyOwner: input.notifyOwner ?? true,
    maxRestarts: input.maxRestarts,
    restartDelayMs: input.restartDelayMs,
    open: [],
    batches: [],
    members: [],
    working: [],
  }),
  initial: 'idle',
  on: {
    SPAWN: { target: '.busy', actions: 'startBatch' },
    CANCEL: { actions: 'forwardCancel' },
    CANCEL_BATCH: { actions: 'forwardCancelBatch' },
    'BATCH.SETTLED': { actions: 'batchSettled' },
    'xstate.done.actor.batch.*': { actions: 'stopBatch' },
    // A batch that fails is a bug of the runtime's effects; it must not put the supervisor (and its owner) in error.
    'xstate.error.actor.batch.*': { actions: 'stopBatch' },
    ADOPT: { actions: 'adopt' },
    RELEASE: { actions: 'releaseMember' },
    // A member at work makes the supervisor busy, so the inspector and the tree never show an idle root over
    // working agents.
    'MEMBER.BUSY': { guard: 'isMember', target: '.busy', actions: 'memberBusy' },
    'MEMBER.IDLE': { actions: 'memberIdle' },
    // A member's crash is its own end, never the supervisor's: it is stopped and forgotten.
    'xstate.error.actor.subagent.*': { actions: 'releaseMember' },
    'xstate.done.actor.subagent.*': { actions: 'releaseMember' },
    STOP: '.stopped',
  },
  states: {
    /** No batch has a task to settle, and no member is at work. */
    idle: {},
    /** A batch has tasks queued, running or waiting out a restart, or a member is in a run. */
    busy: {
      always: { guard: 'isQuiet', target: 'idle' },
    },
    /** Stopped by its owner or the runtime: open tasks are settled as interrupted, every child stopped. */
    stopped: {
      type: 'final',
      entry: 'stopAll',
    },
  },
});

export type SupervisorMachine = typeof supervisorMachine;
export type SupervisorActorRef = ActorRefFrom<SupervisorMachine>;
