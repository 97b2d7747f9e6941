import { taskSetup } from './setup.js';

/**
 * One task's life: `running ⇄ restarting → settled → released`. The task actor is its agent's parent: it spawns
 * the agent (`subagent.<agentId>`), prompts it, hears how its turn ended (CHILD.DONE, from the runtime), restarts a
 * failed one after a backoff, and settles exactly once. A settled task keeps its idle agent alive for a quick
 * resume until it is released (by the runtime's keep-finished window, or a resume elsewhere); a cancelled or
 * crashed one has no agent left and is released at once.
 */
export const taskMachine = taskSetup.createMachine({
  id: 'task',
  context: ({ input }) => ({ ...input, attempt: 0, alive: true }),
  initial: 'running',
  states: {
    /** Its agent works on the prompt. */
    running: {
      entry: 'startAgent',
      on: {
        'CHILD.DONE': [
          { guard: 'isCurrentFailure', target: 'restarting', actions: 'stopAgent' },
          { guard: 'isCurrent', target: 'settled', actions: 'recordOutcome' },
        ],
        // A crash of the agent is a failed run of the task, never the task actor's own error.
        'xstate.error.actor.subagent.*': [
          { guard: 'canRestart', target: 'restarting', actions: 'stopAgent' },
          { target: 'settled', actions: ['recordCrash', 'stopAgent'] },
        ],
        CANCEL: { target: 'settled', actions: ['recordCancel', 'interruptAgent', 'stopAgent'] },
      },
    },
    /** Its failed agent was stopped; a fresh one starts from the original prompt after the backoff. */
    restarting: {
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
