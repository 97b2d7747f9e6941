import { taskSetup } from './setup.js';

/**
 * One task's life: `running → failed → restarting → running`, or `running → settled → released`. The task actor is
 * its agent's parent: it spawns the agent (`subagent.<agentId>`), prompts it, hears how its turn ended (CHILD.DONE,
 * from the runtime), waits in `failed` for its batch's verdict on a failed run (restart, resume or settle), may be
 * restarted by a sibling's failure (its batch's strategy), and settles exactly once. A settled task keeps its idle agent alive for a quick resume until it is released (by the
 * runtime's keep-finished window, or a resume elsewhere); a cancelled or crashed one has no agent left and is
 * released at once.
 */
export const taskMachine = taskSetup.createMachine({
  id: 'task',
  // One literal, no spread of the input: on this V8 a spread takes a slow path, here once per task.
  context: ({ input }) => {
    const { task } = input;
    const waiting = task.backoffMs !== undefined;
    return {
      task,
      batchId: input.batchId,
      background: input.background,
      ownerId: input.ownerId,
      notifyOwner: input.notifyOwner,
      maxRestarts: input.maxRestarts,
      restartDelayMs: input.restartDelayMs,
      // Waiting out a backoff, it has no agent yet, and `restarting` counts the run it waits for on entry.
      attempt: (task.attempt ?? 0) - (waiting ? 1 : 0),
      alive: !waiting,
      delayMs: task.backoffMs ?? 0,
      cause: task.cause,
      resume: task.resume,
    };
  },
  // No eventless hop to choose where it starts (each is a microstep, once per subagent): `running` passes a task
  // restored in its backoff on.
  initial: 'running',
  states: {
    running: {
      description:
        "Its agent works on the prompt. Started again from a journal in the middle of its restart's backoff, it " +
        'has no agent yet (startAgent starts none) and waits out what is left of it in `restarting`.',
      entry: 'startAgent',
      always: { guard: 'inBackoff', target: 'restarting' },
      on: {
        'CHILD.DONE': [
          { guard: 'isCurrentFailure', target: 'failed', actions: 'recordFailure' },
          { guard: 'isCurrent', target: 'settled', actions: 'recordOutcome' },
        ],
        // A crash of the agent is a failed run of the task, never the task actor's own error.
        'xstate.error.actor.subagent.*': { target: 'failed', actions: ['recordFailure', 'stopAgent'] },
        CANCEL: { target: 'settled', actions: ['recordCancel', 'interruptAgent', 'stopAgent'] },
        // A sibling failed and the batch's strategy (oneForAll, restForOne) restarts this task with it.
        RESTART: { target: 'restarting', actions: ['recordRestart', 'stopAgent'] },
      },
    },
    failed: {
      description:
        'A run failed (its turn failed, or its agent crashed): its batch hears why (TASK.FAILED) and decides. ' +
        'RESTART stops its agent and restarts it; RESUME asks it again with its history; GIVE_UP settles it ' +
        'with its failure, a failed turn keeping its agent. A cancel now settles it with its failure too.',
      entry: 'reportFailure',
      on: {
        RESTART: { target: 'restarting', actions: ['recordRestart', 'stopAgent'] },
        RESUME: { target: 'restarting', actions: ['recordResume', 'stopAgent'] },
        GIVE_UP: 'settled',
        CANCEL: 'settled',
        // Its idle agent (a failed turn keeps it) crashed while the batch decides: the failure stands.
        'xstate.error.actor.subagent.*': { actions: 'stopAgent' },
      },
    },
    restarting: {
      description:
        'Its agent is stopped; after the backoff the batch gave, a fresh one starts from the original prompt (or, ' +
        'resumed, from its history). `cause` names the sibling whose failure restarted it. Another RESTART (a ' +
        'second sibling failed) counts one more attempt and waits again; a cancel settles it at once.',
      entry: 'nextAttempt',
      after: { backoff: { target: 'running', actions: 'recordAlive' } },
      on: {
        CANCEL: { target: 'settled', actions: 'recordCancel' },
        RESTART: { target: 'restarting', reenter: true, actions: 'recordRestart' },
      },
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
