/**
 * What `troupe prompt`, `send`, `attach`, `steer`, `interrupt`, `approvals`, `approve`, `deny`, `history` and
 * `usage` reach: the sessions of a folder, whose agents run in this process, or agents hosted behind a Restate
 * ingress (`--restate`). Each verb is written once over this interface (verbs.ts); a verb a target cannot do is
 * left out, and the target says why in one line.
 */
import type { Message, Usage } from '../index.js';
import type { PendingCall, StartedTurn } from './target.js';
import type { View } from './views.js';

/** The calls of an agent's tree that wait for approval, and why some may be missing from them. */
export interface Listed {
  calls: PendingCall[];
  unlisted?: string;
}

/** A person's answer to a waiting call, as `approve` and `deny` give it. */
export interface CallAnswer {
  toolCallId: string;
  approve: boolean;
  reason?: string;
}

/** The verbs that take a target, with what each takes after the agent (or session) id. */
export const VERBS = {
  prompt: ['text'],
  send: ['text'],
  attach: ['invocation'],
  steer: ['text'],
  interrupt: [],
  approvals: [],
  approve: ['call'],
  deny: ['call'],
  history: [],
  usage: [],
} as const satisfies Record<string, readonly string[]>;

export type Verb = keyof typeof VERBS;

export interface AgentTarget {
  /** Starts a turn of `agentId` on `text`; what it says on the way goes through `view`. */
  prompt(agentId: string, text: string, view: View, idempotencyKey?: string): Promise<StartedTurn>;
  /** Waits for a turn sent earlier. */
  attach?(agentId: string, invocationId: string): StartedTurn;
  /** Sends a prompt without waiting; resolves with the turn's invocation id. */
  send?(agentId: string, text: string, idempotencyKey?: string): Promise<string>;
  steer?(agentId: string, text: string, idempotencyKey?: string): Promise<string>;
  interrupt?(agentId: string, idempotencyKey?: string): Promise<string>;
  approvals(agentId: string): Promise<Listed>;
  /** Whether the call was waiting (and is answered now). */
  approve?(agentId: string, answer: CallAnswer): Promise<boolean>;
  /** The agent's conversation, as stored. */
  history(agentId: string): Promise<Message[]>;
  /** Tokens over all of the agent's own turns. */
  usage(agentId: string): Promise<Usage>;
  /** Why `verb`, which this target leaves out, cannot be done here: one line. */
  cannot(verb: Verb): string;
  /** The line an error of the target's own (an ingress that refused) is told with, exit 1; undefined: not one. */
  refused(error: unknown): string | undefined;
}
