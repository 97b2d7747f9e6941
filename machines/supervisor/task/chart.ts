import { taskSetup } from './setup.js';

/**
 * One task's life: `running → failed → restarting → running`, or `running → settled → released`. The task actor is
 * its agent's parent: it spawns the agent (`subagent.<agentId>`), prompts it, hears how its turn ended (CHILD.DONE,
 * from the runtime), decides in `failed` whether a failed run is restarted (after a backoff) or settles, and
 * settles exactly once. A settled task keeps its idle agent alive for a quick resume until it is released (by the
 * runtime's keep-finished window, or a resume elsewhere); a cancelled or crashed one has no agent left and is
 * released at once.
 */
export const taskMachine = taskSetup.createMachine({
  id: 'task',
  context: ({ input }) => ({ ...input, attempt: 0, alive: true }),
  initial: 'running',
  states: {
    running: {
      description: 'Its agent works on the prompt.',
      entry: 'startAgent',
      on: {
        'CHILD.DONE': [
          { guard: 'isCurrentFailure', target: 'failed' },
          { guard: 'isCurrent', target: 'settled', actions: 'recordOutcome' },
        ],
        // A crash of the agent is a failed run of the task, never the task actor's own error.
        'xstate.error.actor.subagent.*': { target: 'failed', actions: 'stopAgent' },
        CANCEL: { target: 'settled', actions: ['recordCancel', 'interruptAgent', 'stopAgent'] },
      },
    },
    // The restart decision, in one place: a supervision strategy (which siblings restart with it, how many
    // restarts in how long) adds its guards here.
    failed: {
      description:
        'A run failed (its turn failed, or its agent crashed). While restarts are left (canRestart) its agent is ' +
        'stopped and it restarts after the backoff; otherwise it settles failed, a failed turn keeping its agent.',
      always: [
        { guard: 'canRestart', target: 'restarting', actions: 'stopAgent' },
        { target: 'settled', actions: 'recordFailure' },
      ],
    },
    restarting: {
      description:
        'Its failed agent is stopped; after the backoff (restartDelayMs doubled with each attempt) a fresh one ' +
        'starts from the original prompt. A cancel settles it at once.',
      entry: 'nextAttempt',
      after: { backoff: 'running' },
      on: { CANCEL: { target: 'settled', actions: 'recordCancel' } },
    },
    /** Its result is recorded and reported; its idle agent stays alive for a resume until released. */
    settled: {
      entry: 'settle',
      always: { guard: 'agentGone', target: 'released' },
      on: {
        RELEASE: 'released',
        'xstate.error.actor.subagent.*': 'released',
      },
    },
    /** Done with: its agent (if still alive) is stopped with it and its history archived. */
    released: { type: 'final', entry: 'releaseAgent' },
  },
});
