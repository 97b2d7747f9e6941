import type { BudgetExhaustion } from './budget.js';
import type { CompactionReason, ContextRepair, ContextRetryReason } from './context.js';
import type { SerializedError } from './errors.js';
import type { JsonValue } from './json.js';
import type { AssistantMessage, Message, ToolResultPart, Usage } from './messages.js';

/** Where an event happened. `seq` increases across the whole system, so a log of many agents reads as one. */
export interface EventBase {
  seq: number;
  agentId: string;
  parentId?: string;
  turn: number;
  step: number;
  /** Milliseconds since the epoch. */
  time: number;
  /**
   * Set on an event that reports again what a session's journal already held before a restart: a resumed agent
   * replays the steps after its last snapshot, and those steps' events were published once already, before the
   * crash. A consumer that kept them (an exporter, a log) skips these; a fresh view can rebuild the turn from them.
   */
  replayed?: true;
}

/**
 * Why a turn ended. `guardrail_tripped`: a hook threw `GuardrailTripped` (its reason is the turn's error);
 * `budget_exhausted`: a token, cost or wall-time budget of the agent or of an ancestor ran out; `repetition`: the
 * model made the same tool call too often in one turn (the repetition ladder's last rung).
 */
export type TurnStopReason =
  | 'completed'
  | 'max_steps'
  | 'repetition'
  | 'interrupted'
  | 'error'
  | 'guardrail_tripped'
  | 'budget_exhausted';

/** A piece of the message being streamed. */
export type MessageDelta =
  | { type: 'text'; delta: string }
  | { type: 'reasoning'; delta: string }
  | { type: 'tool_call_start'; toolCallId: string; toolName: string }
  | { type: 'tool_call'; toolCallId: string; delta: string }
  | { type: 'tool_call_end'; toolCallId: string };

/** A tool call as events describe it. `args` are what the model sent (its `_intent` included, when it gave one). */
export interface ToolCallFacts {
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  /** The tool's human-readable `label`, when it declares one. */
  label?: string;
  /** Why the model made the call, in its words (agents with `toolIntent`). */
  intent?: string;
}

/**
 * Where a subagent's task stands: `running` until it ends `completed`, `failed`, `interrupted` (its turn was stopped)
 * or `cancelled` (its parent or a join policy called it off).
 */
export type TaskStatus = 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';

/** What an event says, without where it happened (`EventBase`): one member per `type`. */
export type AgentEventBody =
  | { type: 'agent_start' }
  | { type: 'agent_end' }
  | { type: 'turn_start'; inputId: string }
  | {
      type: 'turn_end';
      inputId: string;
      stopReason: TurnStopReason;
      usage: Usage;
      error?: SerializedError;
    }
  | { type: 'step_start' }
  | { type: 'step_end' }
  /** A model message begins streaming. */
  | { type: 'message_start'; role: 'assistant'; attempt: number }
  | { type: 'message_update'; delta: MessageDelta }
  /**
   * A message joins the history (user inputs, steers, notifications, assistant answers, tool results), or a
   * streamed attempt is thrown away: `discarded` says why, and the message is not in the history.
   */
  | { type: 'message_end'; message: Message; discarded?: 'retry' | 'interrupted' | 'error' }
  | { type: 'model_retry'; attempt: number; delayMs: number; error: SerializedError }
  /** A model answer's tokens; `cost` (US dollars) where the model's prices are known (see src/context's table). */
  | { type: 'usage'; usage: Usage; turnUsage: Usage; totalUsage: Usage; cost?: number }
  | ({ type: 'tool_execution_start' } & ToolCallFacts)
  | { type: 'tool_execution_update'; toolCallId: string; toolName: string; partial: JsonValue }
  | { type: 'tool_execution_end'; toolCallId: string; toolName: string; result: ToolResultPart; durationMs: number }
  | ({ type: 'approval_requested' } & ToolCallFacts)
  /**
   * A budget ended this agent's turn: which limit, whose account (this agent's, an ancestor's, or `batch <id>` for a
   * swarm's), its size and what was spent.
   */
  | ({ type: 'budget_exhausted' } & BudgetExhaustion)
  /** A call was refused before it ran (a deny rule, plan mode, a policy): a parent sees its subagents' too. */
  | ({ type: 'permission_denied'; reason?: string; rule?: string } & ToolCallFacts)
  | {
      type: 'notification';
      taskId: string;
      childId: string;
      batchId?: string;
      status: TaskStatus;
      text: string;
    }
  | {
      type: 'subagent_start';
      taskId: string;
      childId: string;
      batchId?: string;
      profile: string;
      background: boolean;
      /** Set when a failed task is restarted: 1 for the first restart. */
      attempt?: number;
      /** Set when its batch's strategy restarted it because a sibling failed: that sibling's task id. */
      restartedBy?: string;
    }
  | {
      type: 'subagent_end';
      taskId: string;
      childId: string;
      batchId?: string;
      status: TaskStatus;
      usage: Usage;
      error?: SerializedError;
    }
  /** The projection sent something other than the stored history: one event per repair (see ContextRepair). */
  | { type: 'context_repair'; repair: ContextRepair; strict: boolean }
  /** The provider refused a request for its history (400) or its size with media (413): sent once more, repaired. */
  | { type: 'context_retry'; reason: ContextRetryReason; error: SerializedError }
  | { type: 'compaction_start'; reason: CompactionReason; tokens: number; window: number }
  /** Something about the context worth a person's attention: project instructions past their budget, a failing system part. */
  | { type: 'context_warning'; message: string }
  /**
   * Older messages were summarised: `tokens` before and after (estimates), how many stored messages the summary
   * replaces, how many were dropped unsummarised by a fallback, and the note itself.
   */
  | {
      type: 'compaction_end';
      reason: CompactionReason;
      tokensBefore: number;
      tokensAfter: number;
      summarized: number;
      dropped: number;
      summary: string;
    }
  /** The same tool call (name and arguments) was made again: the note the model got, or the stop at the limit. */
  | {
      type: 'tool_repetition';
      toolCallId: string;
      toolName: string;
      count: number;
      level: 'note' | 'warn' | 'finish' | 'stop';
    }
  /**
   * A schedule restored from a session found runs that fell due while no process ran it: `count` of them, the
   * `first` and `last` due times (ms since the epoch). They are reported, never replayed.
   */
  | { type: 'schedule_missed'; scheduleId: string; cron: string; count: number; first: number; last: number };

/**
 * Everything an agent reports while it runs: turns, steps, streamed text, tool calls, approvals, subagents, context and
 * budget changes. Subscribe with `agent.subscribe`; a session journals them and a supervisor sees its subagents' too.
 */
export type AgentEvent = AgentEventBody & EventBase;
/** The `type` of an `AgentEvent`, for listening to some events only. */
export type AgentEventType = AgentEvent['type'];
/** The `AgentEvent` of one `type`, e.g. `AgentEventOf<'turn_end'>`, to type a listener of that event alone. */
export type AgentEventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>;

/** The final assistant message of a run of messages, if any. */
export function lastAssistant(messages: readonly Message[]): AssistantMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'assistant') return message;
  }
  return undefined;
}
