// What a session's recorders share: where records go (the journal writer, or a replay's list) and what the journal
// already holds of an agent, so that a fact re-announced while an agent catches up is not written twice.
import type { ToolResultPart } from '../../protocol/index.js';
import type { JournalRecord, Urgency } from '../../session/index.js';

/** Where records go: the session's journal writer, or a list (a replay). */
export interface RecordSink {
  add(record: JournalRecord, urgency?: Urgency): void;
  /** Settles once the `effect` records added so far are stored; undefined when they are (see JournalWriter). */
  durable?(): Promise<void> | undefined;
  /** Whether tool starts are written together at the end of the tick (set while subagents are at work). */
  groupEffects?: boolean;
  /**
   * Writes what is buffered, and runs `then` (which resolves a promise that reports a fact) once it is stored;
   * `now`: at once, before a listener hears of a fact (see JournalWriter.acknowledge).
   */
  acknowledge?(now?: boolean, then?: () => void): void;
}

/** What a journal already holds for one agent, so that facts re-announced while catching up are not written twice. */
export interface Journaled {
  /** Messages 0..messages-1 of the history are journaled. */
  messages: number;
  inputs: Set<string>;
  toolStarts: Set<string>;
  toolEnds: Map<string, ToolResultPart>;
  asked: Set<string>;
  approvals: Set<string>;
  turnStarts: Set<string>;
  turnEnds: Set<string>;
  /** Steers journaled (each `steer` record's `n` is its place among them). */
  steers: number;
  /** Approvals remembered for the session (`Permissions.rememberedRules`), as journaled. */
  remembered: Set<string>;
  /** Turn and step of the last snapshot, as `turn.step` (or `idle`). */
  lastSnapshot?: string;
  /** What the last run record said: an agent rebuilt in the middle of its run does not say it runs again. */
  running?: boolean;
}

export function nothingJournaled(): Journaled {
  return {
    messages: 0,
    inputs: new Set(),
    toolStarts: new Set(),
    toolEnds: new Map(),
    asked: new Set(),
    approvals: new Set(),
    turnStarts: new Set(),
    turnEnds: new Set(),
    steers: 0,
    remembered: new Set(),
  };
}

export function copyJournaled(journaled: Journaled): Journaled {
  return {
    ...journaled,
    inputs: new Set(journaled.inputs),
    toolStarts: new Set(journaled.toolStarts),
    toolEnds: new Map(journaled.toolEnds),
    asked: new Set(journaled.asked),
    approvals: new Set(journaled.approvals),
    turnStarts: new Set(journaled.turnStarts),
    turnEnds: new Set(journaled.turnEnds),
    remembered: new Set(journaled.remembered),
  };
}
