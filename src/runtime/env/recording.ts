// What an agent's runtime asks of its journal, and the journal of an agent without a session. The session room
// (src/runtime/session) implements it; nothing else of the runtime knows about journals.
import type { TurnInput } from '../../../machines/agent/index.js';
import type {
  AgentEventBody,
  AssistantMessage,
  BudgetLimits,
  Message,
  ToolCallPart,
  ToolResultPart,
  UserMessage,
} from '../../protocol/index.js';
import type { RestoredSpend } from '../budget/ledger.js';

/**
 * Effects a resumed or replayed agent already has answers for (its session's journal): its workers take these
 * instead of calling the model or running the tool again. See src/runtime/session/restore.ts.
 */
export interface Recording {
  /** The model's recorded answer to step `step` of turn `turn`. */
  answer(turn: number, step: number): AssistantMessage | undefined;
  /** A call's recorded result, or the result a restart gives a call that was running; undefined: run it. */
  toolResult(call: ToolCallPart, safeToRepeat: boolean): ToolResultPart | undefined;
  /** A journaled turn's budget: its prompt's limits, what it had spent before the restart and since when it ran. */
  restoredTurn(turn: number, inputId: string): { budget?: BudgetLimits; spent?: RestoredSpend } | undefined;
  /** Whether a history of this length is still being rebuilt from the journal (its steps are facts, not choices). */
  replaying(historyLength: number): boolean;
  /**
   * Steers and notifications the journal has joining a history of this length at a step boundary: a replay that
   * reaches the boundary where they joined before the crash (an agent without a snapshot: a member, a subagent)
   * takes them in there again.
   */
  joinedAt(historyLength: number): UserMessage[] | undefined;
  /** Whether `joinedAt` gave this message back (it is journaled already). */
  gave(message: Message): boolean;
}

/** An agent without a journal: every effect runs live. */
export const nothingRecorded: Recording = {
  answer: () => undefined,
  toolResult: () => undefined,
  restoredTurn: () => undefined,
  replaying: () => false,
  joinedAt: () => undefined,
  gave: () => false,
};

/**
 * An agent's journal as its runtime sees it, given to its env at construction: its session's, or
 * {@link unrecorded}. Besides the answers a replay takes (`Recording`), it is told of the facts that must be stored
 * before the agent acts on them or a caller hears of them.
 */
export interface Journaling extends Recording {
  /**
   * A prompt was submitted: journaled before it reaches the actor, so a queued prompt survives a crash (throws when
   * the journal stopped recording: the prompt is refused). False when the journal holds it back, to send it itself
   * behind the prompts a restored session submits again.
   */
  input(input: TurnInput): boolean;
  /** A queued input was dropped without a turn: journaled before its caller hears `interrupted`. */
  dropped(inputId: string): void;
  /** Its caller withdrew input `inputId`: true when the journal held it back (see `input`) and let it go. */
  withdraw(inputId: string): boolean;
  /**
   * A promise when a tool's start, just announced, is not stored yet (a tree's starts are written together at the
   * end of the tick); the tool runs once it settles.
   */
  durable(): Promise<void> | undefined;
  /** Resolves a promise that reports a fact (a turn's end) with `value` once the fact is stored. */
  stored<T>(resolve: (value: T) => void, value: T): void;
  /**
   * A person answered one of the agent's calls waiting for approval (`approve()` / `deny()`): journaled before the
   * agent takes it in (a caller may exit as soon as they return). `askedAt`: the question's event `seq`.
   */
  answered(toolCallId: string, approved: boolean, reason?: string, askedAt?: number): void;
  /** Whether an event the agent publishes reports again what the journal holds (a resumed agent's replay). */
  replayed(body: AgentEventBody): boolean;
}

/** The journal of an agent without a session: nothing is stored, nothing waits, every effect runs live. */
export const unrecorded: Journaling = {
  ...nothingRecorded,
  input: () => true,
  dropped: () => {},
  withdraw: () => false,
  durable: () => undefined,
  stored: (resolve, value) => resolve(value),
  answered: () => {},
  replayed: () => false,
};
