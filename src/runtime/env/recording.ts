import type {
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
