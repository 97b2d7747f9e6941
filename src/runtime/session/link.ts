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
import { type Journaling, nothingRecorded, type Recording } from '../env/recording.js';
import type { SessionRecorder } from './recorder.js';

/**
 * A session's side of one agent's {@link Journaling}: made before the agent's env, which is given it at
 * construction, and told as the session attaches, resumes, replays and closes what records the agent (its
 * recorder), what answers it (its journal, while it resumes or replays) and which of its events are replayed.
 */
export class JournalLink implements Journaling {
  /** Its recorder, while the session records the agent. */
  private recorder?: SessionRecorder;
  /** Whether a prompt given to its handle is journaled (a task's agent takes its prompt from its batch record). */
  private inputs = false;
  /** Its journal's answers while it resumes or replays; nothing recorded once it is live. */
  private recording: Recording = nothingRecorded;
  /** Which events a resumed agent publishes again, until it has caught up (see markReplayed). */
  private marks?: (body: AgentEventBody) => boolean;
  /**
   * Prompts given while a restored session has yet to submit again the prompts its journal holds unanswered (on the
   * next macrotask, once the caller's listeners are on): they wait here, behind them, so a prompt sent before a
   * crash still runs before one sent after it.
   */
  private held?: TurnInput[];

  /** The session records the agent with `recorder`; `inputs`: prompts given to its handle too. */
  record(recorder: SessionRecorder, inputs: boolean): void {
    this.recorder = recorder;
    this.inputs = inputs;
  }

  /** Its answers come from `recording` (a journal while it resumes or replays). */
  answerFrom(recording: Recording): void {
    this.recording = recording;
  }

  /** Marks the events `marks` says are replayed; returns the way to stop. */
  markReplayed(marks: (body: AgentEventBody) => boolean): () => void {
    this.marks = marks;
    return () => {
      if (this.marks === marks) this.marks = undefined;
    };
  }

  /** Holds prompts until {@link release}: a restored session submits the journal's first. */
  hold(): void {
    this.held = [];
  }

  /** The prompts held since {@link hold}, in order; from now on prompts go straight to the actor. */
  release(): TurnInput[] {
    const held = this.held ?? [];
    this.held = undefined;
    return held;
  }

  /** The session lets go of the agent: nothing more is recorded, and every effect runs live. */
  close(): void {
    this.recorder = undefined;
    this.inputs = false;
    this.recording = nothingRecorded;
  }

  input(input: TurnInput): boolean {
    if (this.inputs) this.recorder?.input(input.inputId, input.messages, input.expectsOutput);
    if (!this.held) return true;
    this.held.push(input);
    return false;
  }

  dropped(inputId: string): void {
    if (this.inputs) this.recorder?.dropped(inputId);
  }

  withdraw(inputId: string): boolean {
    const at = this.held?.findIndex((input) => input.inputId === inputId) ?? -1;
    if (at >= 0) this.held?.splice(at, 1);
    return at >= 0;
  }

  durable(): Promise<void> | undefined {
    return this.recorder?.durable();
  }

  stored<T>(resolve: (value: T) => void, value: T): void {
    if (this.recorder) this.recorder.stored(resolve, value);
    else resolve(value);
  }

  answered(toolCallId: string, approved: boolean, reason?: string, askedAt?: number): void {
    this.recorder?.answered(toolCallId, approved, reason, askedAt);
  }

  replayed(body: AgentEventBody): boolean {
    return this.marks?.(body) === true;
  }

  answer(turn: number, step: number): AssistantMessage | undefined {
    return this.recording.answer(turn, step);
  }

  toolResult(call: ToolCallPart, safeToRepeat: boolean): ToolResultPart | undefined {
    return this.recording.toolResult(call, safeToRepeat);
  }

  restoredTurn(turn: number, inputId: string): { budget?: BudgetLimits; spent?: RestoredSpend } | undefined {
    return this.recording.restoredTurn(turn, inputId);
  }

  replaying(historyLength: number): boolean {
    return this.recording.replaying(historyLength);
  }

  joinedAt(historyLength: number): UserMessage[] | undefined {
    return this.recording.joinedAt(historyLength);
  }

  gave(message: Message): boolean {
    return this.recording.gave(message);
  }
}
