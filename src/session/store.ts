/**
 * Where sessions are kept. Small on purpose, so that a third party can put sessions in their own database: a
 * store keeps, per session id, an ordered list of records (opaque JSON texts; the journal encodes, decodes and
 * validates them), refuses a second writer, and lists and removes sessions. It is synchronous because a record
 * must reach the store before the effect it announces starts (a tool's start before the tool runs); only an append
 * that must wait for its medium (a database another process holds) returns a promise, which the effect waits for.
 * A store over the network would keep a local write-ahead file and ship it.
 */
export interface Store {
  /** The ids of the sessions it holds, in no particular order. */
  list(): string[];
  /**
   * Every record of a session, in the order written. A record torn by a crash mid-write is returned as it is
   * (the journal detects it); an unknown id gives an empty list.
   */
  read(id: string): string[];
  /** Takes a session for writing, creating it if new. Throws {@link SessionLockedError} if a live writer holds it. */
  acquire(id: string): StoreWriter;
  /** Whether a live writer (this process or another) holds the session. */
  isLocked(id: string): boolean;
  /** Deletes a session and its records; refused while a writer holds it. */
  remove(id: string): void;
  /**
   * A folder for the session's own files (tool results too long to send), when the store keeps files; without it,
   * such files go to a temporary folder and do not outlive the process.
   */
  dirOf?(id: string): string;
  /**
   * The index last saved with `StoreWriter.saveIndex` and the records appended after it (the last one may be
   * torn); undefined when there is none (then the whole journal is read). Optional: it makes listing many long
   * sessions cost what their indexes and short tails cost, not their whole journals.
   */
  readIndexed?(id: string): { index: string; tail: string[] } | undefined;
}

/** The one writer of a session. */
export interface StoreWriter {
  /**
   * Appends records, each one JSON text without a line break, and hands them to the OS before returning. All or
   * none: a failed append throws `SessionStorageError` and leaves the session's records as they were. A store
   * that must wait for its medium (a database another process holds) returns a promise instead of blocking: the
   * records are stored, in order with every later call, when it resolves, and it rejects with the failure.
   */
  append(records: readonly string[]): void | Promise<void>;
  /** Keeps the first `count` records and drops the rest: a torn last record found on opening. */
  truncate(count: number): void;
  /** Lets another writer take the session. */
  release(): void;
  /** Saves a small text that sums up the records appended so far (see {@link Store.readIndexed}). */
  saveIndex?(index: string): void;
}

/** Another writer holds the session: two writers would interleave one journal. */
export class SessionLockedError extends Error {
  override name = 'SessionLockedError';
  constructor(
    readonly sessionId: string,
    readonly holder: string,
  ) {
    super(`Session "${sessionId}" is open for writing by ${holder}; close it there first`);
  }
}

/** Why a store could not read or write: what the program can do about it differs, so each has its words. */
export type StorageProblem = 'read-only' | 'permission denied' | 'no space' | 'failed';

const PROBLEMS: Record<string, StorageProblem> = {
  EROFS: 'read-only',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOSPC: 'no space',
  EDQUOT: 'no space',
  EFBIG: 'no space',
  SQLITE_READONLY: 'read-only',
  SQLITE_PERM: 'permission denied',
  SQLITE_FULL: 'no space',
};

/**
 * The store's medium refused a read or a write (a read-only or full disk, a folder the process may not write).
 * A failed append leaves the journal as it was before it (no torn record), and its writer records nothing more:
 * reopen the session once the cause is fixed, and it goes on from the last whole record.
 */
export class SessionStorageError extends Error {
  override name = 'SessionStorageError';
  readonly problem: StorageProblem;
  /** The system's error code (`EROFS`, `ENOSPC`, ...), when it gave one. */
  readonly code?: string;

  constructor(
    readonly sessionId: string | undefined,
    doing: string,
    cause: unknown,
  ) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    // SQLite's extended codes carry a suffix (SQLITE_READONLY_DBMOVED): its primary code decides.
    const problem = (code && (PROBLEMS[code] ?? PROBLEMS[code.split('_', 2).join('_')])) || 'failed';
    const why =
      problem === 'failed' ? (cause instanceof Error ? cause.message : String(cause)) : `${problem} (${code})`;
    super(`${sessionId === undefined ? 'Sessions' : `Session "${sessionId}"`}: could not ${doing}: ${why}`, { cause });
    this.problem = problem;
    if (code) this.code = code;
  }
}

/** Whether process `pid` of this machine is alive: a lock left by a process killed with SIGKILL is stale. */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, we may just not signal it.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Session ids become file names and keys: letters, digits, `_`, `-` and `.` only, no leading dot. */
export function checkSessionId(id: string): string {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/.test(id)) {
    throw new TypeError(`Invalid session id ${JSON.stringify(id)}: use letters, digits, "_", "-" and "."`);
  }
  return id;
}
