import { cpSync, existsSync } from 'node:fs';
import type { AgentEvent, Model, Usage } from '../protocol/index.js';
import { emptyUsage, ModelError, userMessage } from '../protocol/index.js';
import {
  cutAt,
  type Durability,
  decodeRecord,
  type ForkEdit,
  type ForkPoint,
  type HeaderRecord,
  type JournalRecord,
  JournalWriter,
  JsonlStore,
  readJournal,
  SessionSummary,
  type Store,
  type SummaryState,
  summarize,
  summaryOf,
  type WarningHandler,
} from '../session/index.js';
import { type AgentReplay, type ReplayConfig, replayAgents } from './replay-agents.js';
import { newHeader, Session, type SessionStatus } from './session/session.js';

/**
 * Where `sessions()` keeps sessions and how durably: a store (JSONL files by default, or SQLite) and when records reach
 * it.
 */
export interface SessionsOptions {
  /** Where sessions are kept; default: a {@link JsonlStore} in `dir`. */
  store?: Store;
  /** The JSONL store's directory when no `store` is given (default `.troupe/sessions`). */
  dir?: string;
  /** When records reach the store (default `step`: a kill at any point redoes at most the step in flight). */
  durability?: Durability;
  /** Where warnings go (a torn last record dropped); default `console.warn`. */
  onWarning?: WarningHandler;
}

/** A session as `list()` shows it. */
export interface SessionInfo {
  id: string;
  title?: string;
  /**
   * `open`: a live process holds it; `interrupted`: its process stopped mid-run (opening it resumes the run);
   * `damaged`: its journal cannot be read (see `damage`; opening it is refused with the same error).
   */
  status: SessionStatus | 'damaged';
  /** Why a `damaged` session cannot be read: the typed error's message, naming the damaged record. */
  damage?: string;
  /** Milliseconds since the epoch of its last turn or run event. */
  lastActivity: number;
  usage: Usage;
  messages: number;
  forkOf?: ForkPoint;
}

/** What a replay produced: the events its agents published and the journal they wrote (in memory), agent by agent. */
export interface ReplayResult {
  events: AgentEvent[];
  records: JournalRecord[];
  /** Each agent's own, the root's first. */
  agents: AgentReplay[];
}

/** Creates, opens, lists, forks, replays and deletes sessions kept in one store. */
export class SessionManager {
  readonly store: Store;
  private readonly durability: Durability;
  private readonly onWarning?: WarningHandler;

  constructor(options: SessionsOptions = {}) {
    this.store = options.store ?? new JsonlStore(options.dir ?? '.troupe/sessions');
    this.durability = options.durability ?? 'step';
    this.onWarning = options.onWarning;
  }

  /** A new session, held for writing. `agentId` names its agent (default: a fresh id). */
  create(options: { id?: string; title?: string; agentId?: string } = {}): Session {
    const header = newHeader(options.id, options.agentId, options.title);
    if (this.store.read(header.id).length > 0) throw new Error(`Session "${header.id}" already exists`);
    const writer = this.writerOf(header);
    writer.add(header);
    flushOrClose(writer);
    return new Session(header, [header], writer, undefined, this.store.dirOf?.(header.id));
  }

  /** Opens a session for writing (refused while another process holds it); a torn last record is dropped. */
  open(id: string): Session {
    const journal = readJournal(this.store, id, this.onWarning);
    if (!journal) throw new Error(`No session "${id}"`);
    const storeWriter = this.store.acquire(id);
    try {
      if (journal.dropped) storeWriter.truncate(journal.count);
      const summary = summaryOf(journal.header, journal.records);
      const writer = new JournalWriter(storeWriter, this.durability, summary, this.onWarning);
      return new Session(journal.header, journal.records, writer, undefined, this.store.dirOf?.(id));
    } catch (error) {
      // A journal its agent cannot be rebuilt from is refused, and left for another try (or a repair).
      storeWriter.release();
      throw error;
    }
  }

  /** The writer of a new session. */
  private writerOf(header: HeaderRecord): JournalWriter {
    return new JournalWriter(
      this.store.acquire(header.id),
      this.durability,
      new SessionSummary(header),
      this.onWarning,
    );
  }

  /** The session with the most recent activity, opened (a damaged one is passed over); undefined when there is none. */
  latest(): Session | undefined {
    const [newest] = this.list()
      .filter((info) => info.status !== 'damaged')
      .sort((a, b) => b.lastActivity - a.lastActivity);
    return newest ? this.open(newest.id) : undefined;
  }

  /**
   * Every session of the store with its title, status, last activity and usage. Each is read from its index (a
   * summary its writer saves beside the journal now and then) and the records written after it, so listing many
   * long sessions does not read their journals whole; a session without an index is read whole. A session that
   * cannot be read is listed as `damaged`, with the reason (the damaged record's line): one bad journal never
   * hides the others.
   */
  list(): SessionInfo[] {
    return this.store.list().flatMap((id): SessionInfo[] => {
      let summary: SummaryState | undefined;
      try {
        summary = summarize(this.store, id)?.state;
      } catch (error) {
        return [damaged(this.store, id, error)];
      }
      if (!summary) return [];
      return [
        {
          id,
          ...(summary.title === undefined ? {} : { title: summary.title }),
          status: this.store.isLocked(id) ? 'open' : statusOf(summary),
          lastActivity: summary.lastActivity,
          usage: summary.usage,
          messages: summary.messages,
          ...(summary.forkOf ? { forkOf: summary.forkOf } : {}),
        },
      ];
    });
  }

  /** Removes a session and its journal from the store. */
  delete(id: string): void {
    this.store.remove(id);
  }

  /**
   * A new session holding the source's whole tree as it stood at event `atSeq` (the moment `momentAt` reads; the
   * source is only read, never written). Opening it continues from there like a resume, live: what the source did
   * after that point is not in it. An `edit` changes that moment first and is written into the fork's header, its
   * first fact: a tool call's result, or the text of a prompt whose turn had not started yet.
   */
  fork(id: string, options: { atSeq: number; id?: string; title?: string; edit?: ForkEdit }): Session {
    const source = readJournal(this.store, id, this.onWarning);
    if (!source) throw new Error(`No session "${id}"`);
    const cut = cutAt(source.records, options.atSeq);
    const kept = source.records.slice(1, cut + 1);
    const edited = options.edit ? applyEdit(kept, options.edit, id, options.atSeq, source.header.agentId) : kept;
    const header = {
      ...newHeader(options.id, source.header.agentId, options.title ?? source.header.title),
      forkOf: { id, atSeq: options.atSeq, ...(options.edit ? { edit: options.edit } : {}) },
    };
    if (this.store.read(header.id).length > 0) throw new Error(`Session "${header.id}" already exists`);
    const writer = this.writerOf(header);
    writer.add(header);
    for (const record of edited) writer.add(record);
    flushOrClose(writer);
    // The fork's history names results saved in the source's folder: it gets its own copy.
    const [from, to] = [this.store.dirOf?.(id), this.store.dirOf?.(header.id)];
    if (from && to && existsSync(from)) cpSync(from, to, { recursive: true });
    return new Session(header, [header, ...edited], writer, undefined, to);
  }

  /**
   * Runs the session's agents again, offline: every model answer and tool result comes from the journal, inputs,
   * steers, notifications and approvals are given as recorded. Give the agents' config (its model is never called;
   * a subagent or member replays with its tools, by the names it called). The replay's events and journal, kept in
   * memory, match the original's agent by agent: an incident becomes a deterministic test.
   */
  async replay(id: string, config: ReplayConfig): Promise<ReplayResult> {
    const source = readJournal(this.store, id, this.onWarning);
    if (!source) throw new Error(`No session "${id}"`);
    const agents = await replayAgents(source.header, source.records, config, offlineModel);
    return {
      events: agents.flatMap((agent) => agent.events),
      records: agents.flatMap((agent) => agent.records),
      agents,
    };
  }
}

/** A fork's edit cannot be made at its moment: nothing there to change. */
export class ForkEditError extends Error {
  override name = 'ForkEditError';
}

/** The moment's records with `edit` made: a copy, the source's records untouched. */
function applyEdit(
  kept: readonly JournalRecord[],
  edit: ForkEdit,
  id: string,
  atSeq: number,
  root: string,
): JournalRecord[] {
  const records = [...kept];
  if ('toolResult' in edit) {
    const { id: callId, agentId, text, isError } = edit.toolResult;
    const agents = new Set(
      records.flatMap((r) => ((r.k === 'tool_start' || r.k === 'tool_end') && r.id === callId ? [r.a] : [])),
    );
    // A call id is unique only within an agent: without `agentId`, the root's call, and one no other agent shares.
    if (agentId === undefined && [...agents].some((a) => a !== root))
      throw new ForkEditError(
        `Session "${id}" has tool call "${callId}" in agents ${[...agents].map((a) => `"${a}"`).join(', ')} at seq ${atSeq}: name its agentId`,
      );
    const owner = agentId ?? root;
    const at = records.findIndex((r) => r.k === 'tool_end' && r.a === owner && r.id === callId);
    const started = records.find((r) => r.k === 'tool_start' && r.a === owner && r.id === callId);
    const old = records[at];
    const content = [{ type: 'text' as const, text }];
    if (old?.k === 'tool_end') records[at] = { ...old, result: { ...old.result, content, isError: isError ?? false } };
    else if (started?.k === 'tool_start') {
      const result = { type: 'tool_result' as const, toolCallId: callId, toolName: started.name, content };
      // Written last, so it takes the last kept seq: seqs stay non-decreasing (`cutAt` reads them in order).
      const last = records.findLast((r) => 's' in r);
      records.push({
        k: 'tool_end',
        s: last && 's' in last ? last.s : started.s,
        a: started.a,
        id: callId,
        result: { ...result, isError: isError ?? false },
      });
    } else throw new ForkEditError(`Session "${id}" has no tool call "${callId}" at seq ${atSeq}`);
    return records;
  }
  // The system prompt is no record: the header keeps it, and the agent opened on the fork reads it there.
  if ('system' in edit) return records;
  // A prompt waits until its turn starts or it is dropped from the queue.
  const gone = new Set(records.flatMap((r) => (r.k === 'turn_start' || r.k === 'dropped' ? [r.inputId] : [])));
  const at = records.findLastIndex((r) => r.k === 'input' && !gone.has(r.inputId));
  const waiting = records[at];
  if (waiting?.k !== 'input') throw new ForkEditError(`Session "${id}" has no prompt waiting at seq ${atSeq}`);
  records[at] = { ...waiting, messages: [userMessage(edit.input)] };
  return records;
}

/** The model of a replay: asked only when the replay has gone off its recording. */
export const offlineModel: Model = {
  id: 'replay',
  provider: 'replay',
  // biome-ignore lint/correctness/useYield: it fails before its first answer, by design.
  async *stream() {
    throw new ModelError({
      code: 'invalid_request',
      message: 'Replay: the journal holds no answer for this model call (the replay went off its recording)',
    });
  },
};

/** Writes a new session's first records; one that cannot be written is not left holding its lock. */
function flushOrClose(writer: JournalWriter): void {
  try {
    writer.flush();
  } catch (error) {
    writer.close();
    throw error;
  }
}

/** A session whose journal cannot be read, as `list()` shows it: what its header says, if that much is readable. */
function damaged(store: Store, id: string, error: unknown): SessionInfo {
  let header: JournalRecord | undefined;
  try {
    header = decodeRecord(store.read(id)[0] ?? '');
  } catch {
    header = undefined;
  }
  const known = header?.k === 'session' ? header : undefined;
  return {
    id,
    ...(known?.title === undefined ? {} : { title: known.title }),
    status: 'damaged',
    damage: error instanceof Error ? error.message : String(error),
    lastActivity: known?.t ?? 0,
    usage: emptyUsage(),
    messages: 0,
  };
}

/** Where a session stands by its summary (see Session.status, which says the same from the journal). */
function statusOf(summary: SummaryState): SessionStatus {
  // A supervisor's session has no root agent, only batches: interrupted while a task had not settled.
  if (!summary.agent) return summary.tasks === 0 ? 'new' : summary.settled < summary.tasks ? 'interrupted' : 'idle';
  return summary.running ? 'interrupted' : 'idle';
}

/**
 * The sessions of a store: `sessions({ dir })` (JSONL files, the default) or `sessions({ store })`. An agent given a
 * session journals every fact as it happens; opened again after a crash, it resumes where the journal ends.
 *
 * @example
 * ```ts
 * const store = sessions({ dir: '.troupe/sessions' });
 * const session = store.latest() ?? store.create({ title: 'trip planning' });
 * const agent = createAgent({ model, session });
 * ```
 */
export function sessions(options: SessionsOptions = {}): SessionManager {
  return new SessionManager(options);
}
