import { readRecord } from './record-schema.js';
import {
  CorruptJournalError,
  encodeRecord,
  type HeaderRecord,
  JOURNAL_VERSION,
  type JournalRecord,
  JournalVersionError,
} from './records.js';
import type { Store, StoreWriter } from './store.js';
import { SessionSummary } from './summary.js';

/**
 * Bytes written after which the writer saves the session's index again: what a listing reads past it, at most.
 * Every 16 KB listed 200 sessions of 1 MB 4x faster than every 64 KB, but cost W1 6 % more CPU (see
 * bench/history.md).
 */
const INDEX_EVERY = 64 * 1024;

/**
 * When journal records reach the store (the OS, for files; a commit, for SQLite):
 * - `fact`: each record as it happens, one write each;
 * - `step` (default): the records of one tick of the event loop together, when the tick ends (before the process
 *   waits on anything: a model's answer, a timer), and at once a record that ends a turn or that a caller counts
 *   on, so a kill at any point loses at most the step in flight; a record that announces an effect (a tool about
 *   to run) is stored before the effect starts: at once, or with the tick's write when starts are grouped
 *   (`JournalWriter.groupEffects`); a loop of steps that never waits (a scripted model) writes once per step,
 *   with its tool's start;
 * - `never`: only when the buffer fills or the session closes (tests, throwaway runs).
 * Under `fact` and `step`, a promise that reports a fact (a turn's end, a swarm's results, a task's settle, an idle
 * session) resolves, and an event that reports one reaches its listeners, only once its records are in the store
 * (`JournalWriter.acknowledge`): a process that exits or is killed right after keeps them.
 */
export type Durability = 'fact' | 'step' | 'never';

export type WarningHandler = (message: string) => void;

const warnToConsole: WarningHandler = (message) => console.warn(`[troupe] ${message}`);

/** A journal read back: its records, in order, after dropping a torn last one. */
export interface ReadJournal {
  header: HeaderRecord;
  records: JournalRecord[];
  /** How many stored records were read (the torn one excluded): what a writer keeps. */
  count: number;
  /** A torn or corrupt last record was dropped. */
  dropped: boolean;
}

/**
 * Reads and checks a session's journal. A damaged last record is what a crash mid-write leaves: it is dropped with
 * a warning. A damaged record before it is not a crash's doing and is refused, never skipped, so nothing after it
 * is silently lost; so is a journal written by a newer version.
 */
export function readJournal(
  store: Store,
  id: string,
  onWarning: WarningHandler = warnToConsole,
): ReadJournal | undefined {
  const texts = store.read(id);
  const records: JournalRecord[] = [];
  let dropped = false;
  for (let i = 0; i < texts.length; i++) {
    const decoded = readRecord(texts[i] as string);
    if ('problem' in decoded) {
      if (!decoded.torn || i < texts.length - 1) throw new CorruptJournalError(id, i, decoded.problem);
      dropped = true;
      onWarning(`session "${id}": the last record was cut short by a crash and is dropped (${decoded.problem})`);
      continue;
    }
    const { record } = decoded;
    if (i === 0) {
      if (record.k !== 'session') throw new CorruptJournalError(id, 0, 'the first record is not the session header');
      // Before any other record is read: a newer version's records may not be of the shapes this build checks.
      if (record.v > JOURNAL_VERSION) throw new JournalVersionError(id, record.v);
    }
    records.push(record);
  }
  const header = records[0] as HeaderRecord | undefined;
  if (header === undefined) return undefined;
  return { header, records, count: records.length, dropped };
}

/**
 * A session's summary for listing: its store's index and the records written after it, or, without an index, its
 * whole journal. A damaged record after the index sends it to the whole journal, whose reader names its line (a
 * torn last record is a crash's, dropped as opening drops it). Undefined when there is no such session.
 */
export function summarize(store: Store, id: string): SessionSummary | undefined {
  const indexed = store.readIndexed?.(id);
  const summary = indexed ? SessionSummary.parse(indexed.index) : undefined;
  if (indexed && summary) {
    const { tail } = indexed;
    const decoded = tail.map((text) => readRecord(text));
    const whole = decoded.every((d, i) => 'record' in d || (d.torn && i === tail.length - 1));
    if (whole) {
      for (const d of decoded) if ('record' in d) summary.take(d.record);
      return summary;
    }
  }
  const journal = readJournal(store, id, () => {});
  if (!journal) return undefined;
  return summaryOf(journal.header, journal.records);
}

/** The summary of records read whole (the header first). */
export function summaryOf(header: HeaderRecord, records: readonly JournalRecord[]): SessionSummary {
  const summary = new SessionSummary(header);
  for (let i = 1; i < records.length; i++) summary.take(records[i] as JournalRecord);
  return summary;
}

/** Write counts, for benchmarks and tests. */
export interface JournalStats {
  records: number;
  writes: number;
  bytes: number;
}

/**
 * How soon a record must be stored: `now` (an input before `prompt()` returns, a turn's end a program may exit on,
 * a person's answer), or `effect`: before the effect it announces starts (a tool about to run), which the effect's
 * runner waits for with {@link JournalWriter.durable}. Unmarked records go with the tick's write.
 */
export type Urgency = 'now' | 'effect';

/** The one writer of a session's journal: buffers records and hands them to the store as `durability` says. */
export class JournalWriter {
  readonly stats: JournalStats = { records: 0, writes: 0, bytes: 0 };
  /**
   * Set while many agents of the session may start effects in one tick (a tree with subagents at work): their
   * `effect` records are then written together at the end of the tick, one write for all the tools that start in
   * it, each tool waiting for it ({@link durable}); alone, an agent's tool start is written at once (no wait).
   */
  groupEffects = false;
  private buffer: string[] = [];
  private scheduled = false;
  private closed = false;
  /** The store's last write still waiting for its medium (see StoreWriter.append): later writes are behind it. */
  private waiting?: Promise<void>;
  /** Effect records buffered while grouping: their runners wait for the write. */
  private effects?: { stored: Promise<void>; resolve: () => void };
  /** Bytes written since the index was last saved. */
  private sinceIndex = 0;
  /**
   * The store's failure, once a write failed: the journal ends at its last whole record and nothing more is
   * recorded (records after a lost batch would describe a history the journal does not hold). Every record a
   * caller counts on (`now`) throws it from then on; the session goes on from the journal once reopened.
   */
  failure?: Error;
  private readonly flushSoon = () => {
    this.scheduled = false;
    this.flushQuietly();
  };
  /** Who waits for the acknowledged write (see acknowledge): told once it is stored. */
  private acknowledgers?: Array<() => void>;
  private readonly flushAcknowledged = () => {
    const waiters = this.acknowledgers ?? [];
    this.acknowledgers = undefined;
    this.flushQuietly();
    for (const then of waiters) this.afterWrites(then);
  };

  constructor(
    private readonly writer: StoreWriter,
    readonly durability: Durability = 'step',
    /** The summary of the records written so far, saved as the store's index now and then (when it keeps one). */
    private readonly summary?: SessionSummary,
    /** Told once when a write fails and the journal stops recording. */
    private readonly onFailure: WarningHandler = warnToConsole,
  ) {}

  /** Adds a record, stored as soon as `urgency` says (see {@link Urgency}; unmarked: with the tick's write). */
  add(record: JournalRecord, urgency?: Urgency): void {
    if (this.failure) {
      if (urgency === 'now') throw this.failure;
      return;
    }
    if (this.closed) return;
    this.buffer.push(encodeRecord(record));
    this.stats.records++;
    this.summary?.take(record);
    switch (this.durability) {
      case 'fact':
        this.flush();
        break;
      case 'step':
        if (urgency === 'now' || (urgency === 'effect' && !this.groupEffects)) this.flush();
        else {
          if (urgency === 'effect' && !this.effects) {
            let resolve = () => {};
            const stored = new Promise<void>((done) => {
              resolve = done;
            });
            this.effects = { stored, resolve };
          }
          if (!this.scheduled) {
            this.scheduled = true;
            setImmediate(this.flushSoon);
          }
        }
        break;
      case 'never':
        if (this.buffer.length >= 1024) this.flush();
        break;
    }
  }

  /**
   * Settles once every `effect` record added so far is stored; undefined when they already are (the usual case:
   * an effect's start is written at once unless starts are grouped, or the store is waiting for its medium), so a
   * runner waits only when it must.
   */
  durable(): Promise<void> | undefined {
    return this.effects?.stored ?? this.waiting;
  }

  /** Stops recording at the store's first failure, and says so once. */
  private fail(error: unknown): Error {
    if (!this.failure) {
      this.failure = error instanceof Error ? error : new Error(String(error));
      this.onFailure(`${this.failure.message}; the session records nothing more until it is opened again`);
    }
    return this.failure;
  }

  /**
   * Called instead of resolving a promise that reports a fact this journal holds (a turn's end, a swarm's
   * results, a task's settle, an idle session); `then` resolves it. What is buffered is written by a microtask
   * queued now, which takes the records the same synchronous run adds after this call (the idle snapshot of the
   * turn that just ended), and `then` runs once that write is stored: at once when the store took it, later when
   * the store waits for its medium (another process holds the database), whether it was waiting already or the
   * write is the one that found it busy. `then` runs after a failed write too (the failure is reported as
   * {@link failure}). The tick's batch stays one write; it is only written earlier. `now`: written at once,
   * before a listener hears of the fact. Under `never`, nothing is promised: `then` runs at once.
   */
  acknowledge(now = false, then?: () => void): void {
    if (this.durability === 'never' || this.closed) {
      then?.();
      return;
    }
    if (now) {
      this.flushQuietly();
      if (then) this.afterWrites(then);
      return;
    }
    if (!this.acknowledgers) {
      this.acknowledgers = [];
      queueMicrotask(this.flushAcknowledged);
    }
    if (then) this.acknowledgers.push(then);
  }

  /** Runs `then` once every write handed to the store so far is stored (or failed). */
  private afterWrites(then: () => void): void {
    const waiting = this.waiting;
    if (waiting) void waiting.then(then, then);
    else then();
  }

  private flushQuietly(): void {
    try {
      this.flush();
    } catch {
      // Reported when it happened (onFailure), and thrown to the next caller that counts on a record.
    }
  }

  /** Hands what is buffered to the store; throws {@link failure} once a write has failed. */
  flush(): void {
    if (this.failure) throw this.failure;
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    const effects = this.effects;
    this.effects = undefined;
    let waiting: void | Promise<void> | undefined;
    try {
      waiting = this.writer.append(batch);
    } catch (error) {
      throw this.fail(error);
    } finally {
      // The runners go on even when the store failed: the failure is thrown where it happened, as before grouping.
      if (!waiting) effects?.resolve();
    }
    if (waiting) {
      // The store waits for its medium: what was added is stored when this settles, and effects wait for it.
      this.waiting = waiting;
      waiting.then(
        () => {
          if (this.waiting === waiting) this.waiting = undefined;
          effects?.resolve();
        },
        (error: unknown) => {
          this.fail(error);
          effects?.resolve();
        },
      );
    }
    this.stats.writes++;
    let bytes = 0;
    for (const text of batch) bytes += text.length + 1;
    this.stats.bytes += bytes;
    this.sinceIndex += bytes;
    if (this.sinceIndex >= INDEX_EVERY) this.saveIndex();
  }

  /** Saves the summary as the store's index: a listing then reads only what was written after this point. */
  private saveIndex(): void {
    if (!this.summary || !this.writer.saveIndex) return;
    this.sinceIndex = 0;
    try {
      this.writer.saveIndex(JSON.stringify(this.summary));
    } catch {
      // The index only spares a listing reading the journal whole: one not written leaves the last (still true of
      // the records it counted) or none.
    }
  }

  /** Writes what is buffered and releases the session for another writer (a failed journal too: see failure). */
  close(): void {
    if (this.closed) return;
    try {
      if (!this.failure) this.flush();
      if (!this.failure && this.sinceIndex > 0) this.saveIndex();
    } finally {
      this.closed = true;
      this.writer.release();
    }
  }
}
