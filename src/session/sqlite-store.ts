import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import { loadPeer } from '../protocol/peers.js';
import {
  checkSessionId,
  processAlive,
  SessionLockedError,
  SessionStorageError,
  type Store,
  type StoreWriter,
} from './store.js';
import { WriteQueue } from './write-queue.js';

type Db = InstanceType<typeof Database>;

/**
 * Sessions in one SQLite database (better-sqlite3, WAL): one row per record, keyed by session and position. A
 * committed row survives a crash of the process (`synchronous = NORMAL` under WAL); a writer holds a row of the
 * `locks` table with its pid, taken in a transaction so two processes cannot both take it. Reads never wait (WAL);
 * a write that finds another process holding the database waits in a queue, off the event loop (see WriteQueue):
 * `append` then returns a promise that settles when its records are stored.
 */
export class SqliteStore implements Store {
  private readonly db: Db;
  private readonly insert;
  private readonly selectAll;
  private readonly countRows;
  private readonly onWait: (message: string) => void;

  constructor(
    readonly path: string,
    options: {
      /** Told when writes start waiting for another process that holds the database, and when they are stored. */
      onWait?: (message: string) => void;
    } = {},
  ) {
    this.onWait = options.onWait ?? ((message) => console.warn(`[troupe] ${message}`));
    // better-sqlite3 is an optional peer (a native build): loaded here, synchronously, as it is CommonJS only.
    const Sqlite = loadPeer('better-sqlite3', 'SqliteStore', () =>
      createRequire(import.meta.url)('better-sqlite3'),
    ) as typeof Database;
    this.db = new Sqlite(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    // Creating the tables of a new database waits for another writer as SQLite does; every later write is
    // tried once and, when the database is busy, queued (WriteQueue): the event loop never sleeps on a lock.
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(
      `CREATE TABLE IF NOT EXISTS records (session TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL,
         PRIMARY KEY (session, n)) WITHOUT ROWID;
       CREATE TABLE IF NOT EXISTS locks (session TEXT PRIMARY KEY, pid INTEGER NOT NULL);
       CREATE TABLE IF NOT EXISTS indexes (session TEXT PRIMARY KEY, n INTEGER NOT NULL, body TEXT NOT NULL);`,
    );
    this.insert = this.db.prepare('INSERT INTO records (session, n, body) VALUES (?, ?, ?)');
    this.selectAll = this.db.prepare('SELECT body FROM records WHERE session = ? ORDER BY n').pluck();
    this.countRows = this.db.prepare('SELECT count(*) FROM records WHERE session = ?').pluck();
    this.db.pragma('busy_timeout = 0');
  }

  list(): string[] {
    return this.db.prepare('SELECT DISTINCT session FROM records').pluck().all() as string[];
  }

  read(id: string): string[] {
    return this.selectAll.all(checkSessionId(id)) as string[];
  }

  readIndexed(id: string): { index: string; tail: string[] } | undefined {
    const saved = this.db.prepare('SELECT n, body FROM indexes WHERE session = ?').get(checkSessionId(id)) as
      | { n: number; body: string }
      | undefined;
    if (!saved) return undefined;
    const tail = this.db
      .prepare('SELECT body FROM records WHERE session = ? AND n >= ? ORDER BY n')
      .pluck()
      .all(id, saved.n) as string[];
    return { index: saved.body, tail };
  }

  acquire(id: string): StoreWriter {
    checkSessionId(id);
    const holder = this.holder(id);
    if (holder !== undefined && processAlive(holder)) throw new SessionLockedError(id, `process ${holder}`);
    const queue = new WriteQueue(`Session "${id}"`, this.onWait);
    // Taken again inside the write: a process that took it since the check above wins, and this writer fails.
    const take = this.db.transaction(() => {
      const holder = this.holder(id);
      if (holder !== undefined && processAlive(holder)) throw new SessionLockedError(id, `process ${holder}`);
      this.db.prepare('INSERT OR REPLACE INTO locks (session, pid) VALUES (?, ?)').run(id, process.pid);
    });
    queue.run(() => take.immediate());
    let next = this.countRows.get(id) as number;
    // All or none: a failed transaction is rolled back, and the next batch takes the same positions.
    const append = this.db.transaction((records: readonly string[]) => {
      let n = next;
      for (const body of records) this.insert.run(id, n++, body);
      return n;
    });
    let released = false;
    const live = () => {
      if (released) throw new Error('This session writer was released');
    };
    return {
      append: (records) => {
        live();
        if (records.length === 0) return;
        return queue.run(() => {
          try {
            next = append(records);
          } catch (error) {
            throw new SessionStorageError(id, 'append to its journal', error);
          }
        });
      },
      truncate: (count) => {
        live();
        queue.run(() => {
          this.db.prepare('DELETE FROM records WHERE session = ? AND n >= ?').run(id, count);
          // An index that counted the records dropped no longer sums up the journal.
          this.db.prepare('DELETE FROM indexes WHERE session = ? AND n > ?').run(id, count);
          next = Math.min(next, count);
        });
      },
      saveIndex: (index) => {
        live();
        queue.run(() =>
          this.db.prepare('INSERT OR REPLACE INTO indexes (session, n, body) VALUES (?, ?, ?)').run(id, next, index),
        );
      },
      release: () => {
        if (released) return;
        released = true;
        const unlock = () => this.db.prepare('DELETE FROM locks WHERE session = ? AND pid = ?').run(id, process.pid);
        if (queue.failure) {
          try {
            unlock();
          } catch {
            // Left for the next writer: a lock whose process is gone is taken over.
          }
        } else queue.run(unlock);
      },
    };
  }

  isLocked(id: string): boolean {
    const holder = this.holder(checkSessionId(id));
    return holder !== undefined && processAlive(holder);
  }

  remove(id: string): void {
    if (this.isLocked(id)) throw new SessionLockedError(id, `process ${this.holder(id)}`);
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM records WHERE session = ?').run(id);
      this.db.prepare('DELETE FROM locks WHERE session = ?').run(id);
      this.db.prepare('DELETE FROM indexes WHERE session = ?').run(id);
    })();
  }

  /** Closes the database; writers taken from it stop working. */
  close(): void {
    this.db.close();
  }

  private holder(id: string): number | undefined {
    return this.db.prepare('SELECT pid FROM locks WHERE session = ?').pluck().get(id) as number | undefined;
  }
}
