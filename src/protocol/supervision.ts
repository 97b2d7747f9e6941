import type { UserMessage } from './messages.js';

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
}

export interface BatchSpec {
  batchId: string;
  background: boolean;
  concurrency: number;
  tasks: TaskSpec[];
}

/** Commands a supervisor takes from its owner (an agent forwards them as DELEGATE; a root takes them directly). */
export type SupervisorCommand =
  | { type: 'SPAWN'; batch: BatchSpec }
  | { type: 'CANCEL'; taskId: string }
  | { type: 'CANCEL_BATCH'; batchId: string }
  | { type: 'ADOPT'; agentId: string; agent?: TaskSpec['agent'] }
  | { type: 'RELEASE'; agentId: string }
  | { type: 'STOP' };

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

/** A child's result as the message its parent's model sees. */
export function notificationMessage(taskId: string, agentId: string, status: string, text: string): UserMessage {
  return {
    role: 'user',
    source: 'notification',
    content: [{ type: 'text', text: notificationText(taskId, agentId, status, text) }],
  };
}
