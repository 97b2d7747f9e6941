import type { BatchSpec, FailureClass, TaskSpec } from '../../../src/protocol/index.js';
import type { TaskFailed, TaskSettings } from '../shared.js';
import type { TaskSettled } from '../task/setup.js';

/** The batch machine's types: its input, context and events (setup.ts implements it, chart.ts draws it). */

/**
 * A batch is spawned with its shape and size; its tasks come right after in a `QUEUE` message. XState keeps an
 * actor's input for the actor's whole life, and a settled batch lives on while its kept agents do: a queue passed
 * as input would pin every task spec of a 10,000-task swarm for as long as its last idle agent stays resumable.
 */
export interface BatchInput extends TaskSettings {
  batch: Omit<BatchSpec, 'tasks'> & { size: number };
}

export interface BatchContext extends TaskSettings, BatchSpec {
  /** How many tasks the batch has: its queue is emptied once every task has settled. */
  size: number;
  /** Index of the next task to start; tasks before it are started or were cancelled while queued. */
  next: number;
  /** Started and not yet settled (a task waiting out a restart keeps its slot). */
  running: number;
  /** Tasks settled so far, and how many of them completed: what the join policy is decided on. */
  ended: number;
  completed: number;
  /** Queued tasks cancelled before they started: skipped when their turn comes. */
  cancelled: string[];
  /** Pools alive, and those that may still be given a task. */
  pools: number[];
  unsealed: number[];
  /** When the batch restarted for a failure, within its intensity window (all of them without an intensity). */
  restarts: number[];
  /** Restarts and resumes the batch ordered, by task index: a failure of an earlier run is stale. */
  attempts: Record<number, number>;
  /** Tasks settled, by id: kept only under a strategy that restarts siblings (it must know who still runs). */
  done: string[];
  /** The failure that made the batch escalate, once it has. */
  escalation?: Escalation;
}

/** A failure a batch escalated: its task, why, and what its owner's turn ends with. */
export interface Escalation {
  batchId: string;
  taskId: string;
  agentId: string;
  failure: FailureClass;
  because: 'intensity' | FailureClass;
  text: string;
}

/**
 * A batch's verdict on the failed run in hand (the TASK.FAILED being handled), short of escalating: restart it (with
 * the siblings its strategy names), resume it, or stop it. The runtime journals it before the tasks hear it.
 */
export interface BatchVerdict {
  verdict: 'restart' | 'resume' | 'stop';
  /** The backoff before the restart or resume. */
  delayMs?: number;
  /** The siblings restarted with the failed task, in start order. */
  restarted?: string[];
}

export type BatchEvent =
  /** The batch's tasks, sent by the supervisor right after it spawned the batch (before anything else). */
  | { type: 'QUEUE'; tasks: TaskSpec[] }
  | { type: 'CANCEL'; taskId: string }
  | { type: 'CANCEL_BATCH' }
  | TaskSettled
  | TaskFailed
  | { type: `xstate.done.actor.pool.${string}` };

/** What the supervisor hears when every task of a batch has settled. */
export type BatchSettled = { type: 'BATCH.SETTLED'; batchId: string };
