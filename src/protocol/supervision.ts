import type { TurnStopReason } from './events.js';
import type { UserMessage } from './messages.js';
import type { StrategyOptions } from './strategy.js';

/**
 * What an agent and its supervisor say to each other, and how a child's result is wrapped for its parent's model.
 * Both machines (and the runtime that joins them) import these from here, so neither machine file imports the
 * other.
 */

/** One task as a supervisor sees it: plain data. */
export interface TaskSpec {
  taskId: string;
  agentId: string;
  prompt: string;
  /** The child's profile has an output schema: its answer is checked before the turn ends. */
  expectsOutput: boolean;
  /** Agent machine settings of the child, when its profile changes the defaults. */
  agent?: { maxSteps?: number; maxOutputAttempts?: number; wakeOnNotification?: boolean };
  /** Its run number when started again from a journal (default 0): restarts before a crash still count. */
  attempt?: number;
  /** The sibling (task id) whose failure restarted it last, when started again from a journal. */
  cause?: string;
  /** Started again from a journal, its run `attempt` is a resume: it goes on from its agent's history. */
  resume?: boolean;
  /**
   * Started again from a journal while the backoff before its run `attempt` was under way: what is left of it
   * (ms). The run starts after it, as it would have without the crash.
   */
  backoffMs?: number;
}

/**
 * When a swarm batch is done. `all` and `allSettled` wait for every task (`all` succeeds only if every task
 * completed); `first` succeeds as soon as `k` tasks completed and cancels the rest (`any` is `first` with k = 1);
 * `quorum` succeeds at `k` completed and fails as soon as `k` can no longer be reached, cancelling the rest either
 * way. Finished results are kept under every policy, each with its true status.
 */
export type JoinPolicy =
  | { kind: 'all' }
  | { kind: 'allSettled' }
  | { kind: 'first'; k: number }
  | { kind: 'quorum'; k: number };

export interface BatchSpec {
  batchId: string;
  background: boolean;
  concurrency: number;
  tasks: TaskSpec[];
  /** Default: `all`. */
  join?: JoinPolicy;
  /** How the batch answers a failed task (default: `oneForOne`, no intensity, {@link FAILURE_DEFAULTS}). */
  supervision?: StrategyOptions;
  /** Started again from a journal: when it restarted before (its intensity window goes on from them). */
  restarts?: number[];
}

/** `first(k)` is met: k tasks completed (the tasks left are not waited for). */
export function firstMet(join: JoinPolicy | undefined, completed: number): boolean {
  return join?.kind === 'first' && completed >= join.k;
}

/** `quorum(k)` is met: k tasks completed. */
export function quorumMet(join: JoinPolicy | undefined, completed: number): boolean {
  return join?.kind === 'quorum' && completed >= join.k;
}

/** `quorum(k)` can no longer be met: fewer than k would have completed even if every task left completes. */
export function quorumOutOfReach(join: JoinPolicy | undefined, size: number, completed: number, ended: number) {
  return join?.kind === 'quorum' && size - ended + completed < join.k;
}

/**
 * Whether a batch's policy is decided after `ended` of its `size` tasks settled, `completed` of them completed.
 * `all` and `allSettled` are decided only by every task settling.
 */
export function joinDecided(join: JoinPolicy | undefined, size: number, completed: number, ended: number): boolean {
  return firstMet(join, completed) || quorumMet(join, completed) || quorumOutOfReach(join, size, completed, ended);
}

/** Whether a settled batch met its policy. */
export function joinMet(join: JoinPolicy | undefined, size: number, completed: number): boolean {
  if (join?.kind === 'allSettled') return true;
  if (join?.kind === 'first' || join?.kind === 'quorum') return completed >= join.k;
  return completed === size;
}

/** Commands a supervisor takes from its owner (an agent forwards them as DELEGATE; a root takes them directly). */
export type SupervisorCommand =
  | { type: 'SPAWN'; batch: BatchSpec }
  /** `batchId` names the batch actor the task belongs to (the runtime knows it from the task's record). */
  | { type: 'CANCEL'; taskId: string; batchId: string }
  | { type: 'CANCEL_BATCH'; batchId: string }
  | { type: 'ADOPT'; agentId: string; agent?: TaskSpec['agent'] }
  | { type: 'RELEASE'; agentId: string }
  | { type: 'STOP' };

/**
 * What a task ended from outside reports, when nothing more particular is known: the hand-off text of a cancelled
 * task. Every host uses the same words, so that a model reads the same hand-off wherever its subagents ran.
 */
export const CANCELLED_TEXT = 'The task was cancelled before it finished.';
/** The hand-off text of a task its batch's join policy cancelled (the batch was decided without it). */
export const JOINED_TEXT = "The task was cancelled: its batch's join policy was decided without it.";
/** The hand-off text of a task whose turn was interrupted before it finished. */
export const INTERRUPTED_TEXT = 'The task was interrupted before it finished.';

/**
 * Why a task is ended from outside: its batch's join policy was decided without it (`joined`), its owner's call was
 * interrupted (`interrupted`), `task_cancel` (`cancelled`), or its owner was stopped (`stopped`).
 */
export type TaskEndCause = 'joined' | 'interrupted' | 'cancelled' | 'stopped';

/** What a task ended from outside reports, queued or running: its status and the hand-off its parent reads. */
export interface TaskEnd {
  status: 'cancelled' | 'interrupted';
  text: string;
}

const TASK_ENDS: Record<TaskEndCause, TaskEnd> = {
  joined: { status: 'cancelled', text: JOINED_TEXT },
  interrupted: { status: 'interrupted', text: INTERRUPTED_TEXT },
  cancelled: { status: 'cancelled', text: CANCELLED_TEXT },
  stopped: { status: 'interrupted', text: INTERRUPTED_TEXT },
};

/** The end a task is given for `cause`: both hosts' supervisors settle the tasks they end with it. */
export function taskEnd(cause: TaskEndCause): TaskEnd {
  return TASK_ENDS[cause];
}

/** How a child's last turn ended: what its parent's hand-off is made from. */
export interface ChildTurnEnd {
  stopReason?: TurnStopReason;
  /** Why it failed or ran out, when it did. */
  error?: { message: string };
  /** Its last answer's text. */
  text: string;
  /** Its validated output, when its profile has an output schema. */
  output?: unknown;
}

/** What a finished child hands its parent: its last answer (or validated output), or why it did not finish. */
export function handOffOf(end: ChildTurnEnd): { status: 'completed' | 'failed' | 'interrupted'; text: string } {
  if (end.stopReason === 'error') {
    return { status: 'failed', text: `The subagent failed: ${end.error?.message ?? 'unknown error'}` };
  }
  if (end.stopReason === 'interrupted')
    return { status: 'interrupted', text: end.text || 'The subagent was interrupted.' };
  if (end.stopReason === 'budget_exhausted') {
    return { status: 'interrupted', text: `The subagent stopped: ${end.error?.message ?? 'budget spent'}` };
  }
  if (end.stopReason === 'guardrail_tripped') {
    return { status: 'failed', text: `A guardrail stopped the subagent: ${end.error?.message ?? ''}` };
  }
  if (end.output !== undefined) return { status: 'completed', text: JSON.stringify(end.output) };
  return { status: 'completed', text: end.text };
}

/**
 * Where a child's result goes, by the state of the agent it is for: into its running turn at the next step boundary
 * (`step`), a turn of its own that it opens (`wake`: idle, and it wakes for notifications), or held for its next
 * turn's first step (`hold`). The agent machine's NOTIFY decides by it, and the Restate host before it runs a turn
 * for one.
 */
export type NotificationDelivery = 'step' | 'wake' | 'hold';

/** Where a child's result goes for an agent that is `running` or not, and `wakes` for notifications or not. */
export function notificationDelivery(agent: { running: boolean; wakes: boolean }): NotificationDelivery {
  if (agent.running) return 'step';
  return agent.wakes ? 'wake' : 'hold';
}

/** Escapes text for the notification envelope, so that a child cannot close or forge it. */
export function escapeEnvelope(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttribute(text: string): string {
  return escapeEnvelope(text).replace(/"/g, '&quot;');
}

/** `<notification task_id="…" agent_id="…" status="…">escaped text</notification>` */
export function notificationText(taskId: string, agentId: string, status: string, text: string): string {
  return (
    `<notification task_id="${escapeAttribute(taskId)}" agent_id="${escapeAttribute(agentId)}" ` +
    `status="${escapeAttribute(status)}">${escapeEnvelope(text)}</notification>`
  );
}

const NOTIFIED_TASK = /<notification task_id="([^"]*)"/g;

/** The task ids of the results a notification message delivers (the envelopes `notificationText` writes). */
export function notifiedTaskIds(message: UserMessage): string[] {
  const ids: string[] = [];
  for (const part of message.content) {
    if (part.type !== 'text') continue;
    for (const match of part.text.matchAll(NOTIFIED_TASK)) ids.push(unescapeAttribute(match[1] as string));
  }
  return ids;
}

function unescapeAttribute(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** A child's result as the message its parent's model sees. */
export function notificationMessage(taskId: string, agentId: string, status: string, text: string): UserMessage {
  return {
    role: 'user',
    source: 'notification',
    content: [{ type: 'text', text: notificationText(taskId, agentId, status, text) }],
  };
}
