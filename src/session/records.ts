import type {
  BudgetLimits,
  Message,
  SerializedError,
  StrategyOptions,
  ToolResultPart,
  TurnStopReason,
  Usage,
  UserContent,
  UserMessage,
} from '../protocol/index.js';

/**
 * The version of the journal format this build writes and the newest it reads. A journal's first record says
 * which version wrote it; a newer one is refused (its records may mean something this build cannot honour), an
 * older one would be migrated here when version 2 exists.
 */
export const JOURNAL_VERSION = 1;
/** The version of the agent machine's persisted snapshots; a snapshot of another version is not restored. */
export const SNAPSHOT_VERSION = 1;

/**
 * One fact of a session, as one JSON line (or row). Records are the durable form of the event bus's events: each
 * is written when its event is published, and carries the event's `seq`. Messages are stored once: a tool
 * message refers to results its `tool_end` records already hold, a turn's input message to its `input` record.
 * Keys are short because a long session writes many of them.
 */
export type JournalRecord =
  | HeaderRecord
  | InputRecord
  | DroppedRecord
  | MessageRecord
  | ToolStartRecord
  | ToolEndRecord
  | ApprovalAskedRecord
  | ApprovalRecord
  | TurnStartRecord
  | TurnEndRecord
  | RunRecord
  | SnapshotRecord
  | SteerRecord
  | BatchRecord
  | TaskRecord
  | VerdictRecord
  | NoticeRecord
  | CompactionRecord
  | ScheduleRecord
  | RememberRecord;

/** The first record of every journal. */
export interface HeaderRecord {
  k: 'session';
  /** {@link JOURNAL_VERSION} of the build that created the journal. */
  v: number;
  id: string;
  /** The root agent's id: a resumed agent keeps it. */
  agentId: string;
  title?: string;
  /** Milliseconds since the epoch. */
  t: number;
  /** The session this one was forked from, the last `seq` it kept, and what it changed there. */
  forkOf?: ForkPoint;
}

/** Where a fork comes from: its source session, the last `seq` it kept, and the edit made there first. */
export interface ForkPoint {
  id: string;
  atSeq: number;
  edit?: ForkEdit;
}

/**
 * What a fork changes at its moment: `toolResult` replaces the result of call `id` (one the moment holds, or one
 * still running there, which then never runs) of agent `agentId`; without `agentId`, the root agent's (the session
 * header's), and a call of no other agent: a call id is unique only within its agent. `input` replaces the text of
 * the prompt that waits at the moment (submitted, its turn not started). `system` replaces the root agent's system
 * prompt for the fork's life: the agent opened on the fork uses it instead of its configured one.
 */
export type ForkEdit =
  | { toolResult: { id: string; agentId?: string; text: string; isError?: boolean } }
  | { input: string }
  | { system: string };

/** An input submitted to an agent (a prompt), before its turn starts: queued prompts survive a crash. */
export interface InputRecord {
  k: 'input';
  a: string;
  inputId: string;
  messages: UserMessage[];
  expectsOutput: boolean;
  /** The prompt's own budget (`prompt(x, { budget })`): a turn resumed after a restart keeps it. */
  budget?: BudgetLimits;
}

/**
 * Input `inputId` left agent `a`'s queue without a turn (its caller's signal aborted, or the agent stopped): its
 * caller heard `interrupted`, so a resume, a replay or a fork never runs it.
 */
export interface DroppedRecord {
  k: 'dropped';
  a: string;
  inputId: string;
}

/** A stored message part that refers to a result held by a `tool_end` record. */
export interface ResultRef {
  ref: string;
}

/** A message joined agent `a`'s history at index `i`, during turn `turn`, step `step`. */
export interface MessageRecord {
  k: 'msg';
  s: number;
  a: string;
  i: number;
  turn: number;
  step: number;
  /** The message, or `{ input }` for a turn's opening message held by that input's record (`n`-th of it). */
  m: StoredMessage | { input: string; n: number };
}

/** A message as stored: a tool message's results may be references to `tool_end` records. */
export type StoredMessage =
  | Exclude<Message, { role: 'tool' }>
  | { role: 'tool'; content: Array<ToolResultPart | ResultRef> };

/** A tool began executing: if no `tool_end` follows, it was running when the process stopped. */
export interface ToolStartRecord {
  k: 'tool_start';
  s: number;
  a: string;
  id: string;
  name: string;
}

/** A tool's result, by call id: a journaled result is never produced again. */
export interface ToolEndRecord {
  k: 'tool_end';
  s: number;
  a: string;
  id: string;
  result: ToolResultPart;
}

export interface ApprovalAskedRecord {
  k: 'asked';
  s: number;
  a: string;
  id: string;
}

/** A person's answer to a call that waited for approval. */
export interface ApprovalRecord {
  k: 'approval';
  a: string;
  id: string;
  approved: boolean;
  reason?: string;
}

export interface TurnStartRecord {
  k: 'turn_start';
  s: number;
  a: string;
  turn: number;
  inputId: string;
  t: number;
  /** The digest of the prompt parts the code sets, when they differ from the agent's previous turn's (or it has none). */
  p?: PromptDigest;
}

/**
 * Digests (never the text) of the prompt parts an agent's code sets: the system prompt's static parts, and each
 * tool's description and JSON schema by its name. A replay of the current build compares them with the recording's.
 */
export interface PromptDigest {
  system?: string;
  tools: Record<string, { d: string; s: string }>;
}

export interface TurnEndRecord {
  k: 'turn_end';
  s: number;
  a: string;
  turn: number;
  inputId: string;
  stopReason: TurnStopReason;
  usage: Usage;
  /** Why the turn ended in error (a model call that failed, a hook): a replay fails where the original did. */
  error?: SerializedError;
  t: number;
}

/** A run began (`running`) or the agent went back to idle: a journal whose last run record says `running` crashed. */
export interface RunRecord {
  k: 'run';
  s: number;
  a: string;
  running: boolean;
  t: number;
}

/**
 * The agent machine's persisted snapshot (XState's `getPersistedSnapshot`) at the start of a step, when the
 * history held `n` messages. Inputs in its context are stored as references to their `input` records.
 */
export interface SnapshotRecord {
  k: 'snapshot';
  a: string;
  /** {@link SNAPSHOT_VERSION}. */
  v: number;
  n: number;
  snapshot: unknown;
}

/** A steer submitted to agent `a`: journaled before the actor sees it, so one waiting for a step boundary survives. */
export interface SteerRecord {
  k: 'steer';
  a: string;
  /** Its place among the agent's steers: a steer is delivered when its message joins the history. */
  n: number;
  message: UserMessage;
}

/** One task of a {@link BatchRecord}. */
export interface BatchTask {
  taskId: string;
  agentId: string;
  profile: string;
  prompt: string;
}

/**
 * A batch of subagent tasks started by agent `a` (its owner), from tool call `call` when a tool started it: a
 * resume re-attaches the same call to the same tasks instead of starting new ones.
 */
export interface BatchRecord {
  k: 'batch';
  a: string;
  batchId: string;
  call?: string;
  background: boolean;
  /** The join policy, when not `all`. */
  join?: { kind: string; k?: number };
  /** What the batch may spend, all its tasks together: a batch started again after a restart keeps it. */
  budget?: BudgetLimits;
  /** Its supervision, where it is not the tree's default: a batch started again after a restart keeps it. */
  supervision?: StrategyOptions;
  tasks: BatchTask[];
}

/**
 * A task's life: `started` (attempt 0) or restarted (attempt > 0) when its agent is about to run it, `settled` with
 * its result. A background task's settle is also its notification falling due; `a` is the task's owner.
 */
export interface TaskRecord {
  k: 'task';
  a: string;
  taskId: string;
  agentId: string;
  ev: 'started' | 'settled';
  attempt?: number;
  status?: string;
  text?: string;
  output?: unknown;
  /** Why a failed task's last attempt failed, as its `subagent_end` said. */
  error?: SerializedError;
}

/**
 * What batch `batchId` of owner `a` decided about run `attempt` of its task `taskId`, which failed at `t` (ms since
 * the epoch, the time its intensity window counts) with a `failure` of that class: `restart` it after `delayMs` with
 * the siblings its strategy names (`restarted`, in start order), `resume` it, `stop` it, or `escalate` (`because`:
 * `intensity` or the class; `text`: the failure). A restore rebuilds from these the batch's restart window, each
 * task's attempt and the sibling that restarted it, and an escalation not yet delivered.
 */
export interface VerdictRecord {
  k: 'verdict';
  a: string;
  batchId: string;
  taskId: string;
  attempt: number;
  failure: string;
  v: 'restart' | 'resume' | 'stop' | 'escalate';
  restarted?: string[];
  delayMs?: number;
  because?: string;
  text?: string;
  t: number;
}

/** A background task's notification joined its owner `a`'s history: delivered, never to be sent again. */
export interface NoticeRecord {
  k: 'notice';
  a: string;
  taskId: string;
}

/**
 * A compaction of agent `a`'s context: what is sent from now on replaces stored messages before `base` by the first
 * prompt (stored index `first`, when kept) and the `note`. The stored history itself is never rewritten.
 */
export interface CompactionRecord {
  k: 'compaction';
  s: number;
  a: string;
  base: number;
  first?: number;
  note: UserMessage;
}

/**
 * A scheduled prompt of agent `a` (`agent.schedule`): `created` with what restarts it, then each due time it handled
 * (`ran`, or `skipped` behind a running turn), the runs a restart found missed during downtime (`missed`: `count`,
 * `first`, and `t` the last; reported, never replayed), and `cancelled` by its handle. An agent opened from the
 * session restarts every schedule not cancelled, counting misses from the latest `t`. Times: ms since the epoch.
 */
export interface ScheduleRecord {
  k: 'schedule';
  a: string;
  id: string;
  ev: 'created' | 'ran' | 'skipped' | 'missed' | 'cancelled';
  t: number;
  /** On `created`. */
  cron?: string;
  prompt?: string | UserContent[];
  timezone?: string;
  overlap?: 'skip' | 'queue';
  /** On `missed`. */
  count?: number;
  first?: number;
}

/**
 * A person approved call `id` of agent `a` and asked to remember it ("allow always"): `rules` are what the
 * session's permissions remembered with it (a rule as written, or the call as `tool(argument)`).
 */
export interface RememberRecord {
  k: 'remember';
  a: string;
  id: string;
  rules: string[];
}

/**
 * A session's journal cannot be used: the base of the errors a store or a reader throws for a damaged, locked or too
 * new journal.
 */
export class JournalError extends Error {
  override name = 'JournalError';
}

/** The journal was written by a newer Troupe: its records may mean something this build cannot honour. */
export class JournalVersionError extends JournalError {
  override name = 'JournalVersionError';
  constructor(
    readonly sessionId: string,
    readonly version: number,
  ) {
    super(
      `Session "${sessionId}" was written with journal version ${version}, but this Troupe reads versions up to ` +
        `${JOURNAL_VERSION}: upgrade Troupe to open it`,
    );
  }
}

/**
 * A record is damaged (not whole JSON before the last line, or of the wrong shape anywhere): refusing is better than
 * silently losing what follows it or reading a shorter history.
 */
export class CorruptJournalError extends JournalError {
  override name = 'CorruptJournalError';
  constructor(
    readonly sessionId: string,
    readonly index: number,
    why: string,
  ) {
    super(`Session "${sessionId}": record ${index + 1} is corrupt (${why}); the records after it were not read`);
  }
}

export function encodeRecord(record: JournalRecord): string {
  return JSON.stringify(record);
}
