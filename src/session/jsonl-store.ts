import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  checkSessionId,
  processAlive,
  SessionLockedError,
  SessionStorageError,
  type Store,
  type StoreWriter,
} from './store.js';

const EXT = '.jsonl';
/** `<id>.index`: the journal's byte length when the index was saved, a line break, the index, a line break. */
const INDEX = '.index';

/**
 * Sessions as JSON Lines files in a directory, one file per session (`<id>.jsonl`), appended to and never
 * rewritten, so `tail -f` and `jq` read them as they grow. A writer holds `<id>.lock` (its pid): a lock whose
 * process has died (a crash) is taken over, a live one refuses the second writer. `<id>.index` holds the writer's
 * last index and the journal's length when it was saved: a listing reads it and the lines after that length.
 */
export class JsonlStore implements Store {
  constructor(readonly dir: string) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw new SessionStorageError(undefined, `create the sessions folder ${dir}`, error);
    }
  }

  list(): string[] {
    return readdirSync(this.dir)
      .filter((name) => name.endsWith(EXT))
      .map((name) => name.slice(0, -EXT.length));
  }

  read(id: string): string[] {
    const path = this.path(id);
    if (!existsSync(path)) return [];
    const text = readFileSync(path, 'utf8');
    if (text === '') return [];
    const lines = text.split('\n');
    // A file that ends with its newline splits into a last empty string; a torn one ends with the fragment.
    if (lines[lines.length - 1] === '') lines.pop();
    return lines;
  }

  acquire(id: string): StoreWriter {
    const lock = this.lockPath(id);
    const holder = this.holder(id);
    if (typeof holder === 'number' && processAlive(holder)) throw new SessionLockedError(id, `process ${holder}`);
    // The lock appears whole, pid and all, or not at all: written aside, then linked to its name, which fails if
    // another process linked first. So a lock that is empty or not a pid is no writer's, and is taken over.
    const aside = `${lock}.${process.pid}`;
    try {
      if (holder !== undefined) rmSync(lock, { force: true });
      writeFileSync(aside, String(process.pid));
      linkSync(aside, lock);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        // Another process took it between our check and our link.
        throw new SessionLockedError(id, `process ${this.holder(id) ?? 'unknown'}`);
      }
      throw new SessionStorageError(id, 'take its lock', error);
    } finally {
      rmSync(aside, { force: true });
    }
    try {
      return new JsonlWriter(id, this.path(id), lock, this.indexPath(id));
    } catch (error) {
      rmSync(lock, { force: true });
      throw new SessionStorageError(id, 'open its journal for writing', error);
    }
  }

  readIndexed(id: string): { index: string; tail: string[] } | undefined {
    let saved: string;
    try {
      saved = readFileSync(this.indexPath(id), 'utf8');
    } catch {
      return undefined;
    }
    // `<length>\n<index>\n` and nothing after it: a kill between the write and its truncation leaves more.
    const cut = saved.indexOf('\n');
    const end = saved.indexOf('\n', cut + 1);
    const at = Number(saved.slice(0, cut));
    if (cut < 0 || end !== saved.length - 1 || !Number.isSafeInteger(at) || at < 0) return undefined;
    let fd: number;
    try {
      fd = openSync(this.path(id), 'r');
    } catch {
      return undefined;
    }
    try {
      const size = fstatSync(fd).size;
      // Shorter than when the index was saved: cut since (a torn record dropped), the index may count too much.
      if (size < at) return undefined;
      const buffer = Buffer.alloc(size - at);
      readSync(fd, buffer, 0, buffer.length, at);
      const tail = buffer.length === 0 ? [] : buffer.toString('utf8').split('\n');
      if (tail[tail.length - 1] === '') tail.pop();
      return { index: saved.slice(cut + 1, end), tail };
    } finally {
      closeSync(fd);
    }
  }

  isLocked(id: string): boolean {
    const holder = this.holder(id);
    return typeof holder === 'number' && processAlive(holder);
  }

  remove(id: string): void {
    if (this.isLocked(id)) throw new SessionLockedError(id, `process ${this.holder(id)}`);
    rmSync(this.path(id), { force: true });
    rmSync(this.lockPath(id), { force: true });
    rmSync(this.indexPath(id), { force: true });
    rmSync(this.dirOf(id), { recursive: true, force: true });
  }

  /** `<dir>/<id>/`, next to the session's journal. */
  dirOf(id: string): string {
    return join(this.dir, checkSessionId(id));
  }

  /** The pid in the session's lock; `stale` for a lock that holds none (not a writer's: see acquire). */
  private holder(id: string): number | 'stale' | undefined {
    let text: string;
    try {
      text = readFileSync(this.lockPath(id), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new SessionStorageError(id, 'read its lock', error);
    }
    const pid = /^\d{1,10}$/.test(text) ? Number(text) : 0;
    return pid > 0 ? pid : 'stale';
  }

  private path(id: string): string {
    return join(this.dir, checkSessionId(id) + EXT);
  }

  private indexPath(id: string): string {
    return join(this.dir, checkSessionId(id) + INDEX);
  }

  private lockPath(id: string): string {
    return join(this.dir, `${checkSessionId(id)}.lock`);
  }
}

class JsonlWriter implements StoreWriter {
  private fd: number | undefined;
  /** The journal's length in bytes, as written by this writer. */
  private size: number;

  constructor(
    private readonly id: string,
    path: string,
    private readonly lock: string,
    private readonly index: string,
  ) {
    this.fd = openSync(path, 'a+');
    this.size = fstatSync(this.fd).size;
  }

  append(records: readonly string[]): void {
    if (records.length === 0) return;
    const fd = this.open();
    // One write per batch: a kill can tear only the batch's last line, which the journal drops on opening.
    const data = Buffer.from(records.length === 1 ? `${records[0]}\n` : `${records.join('\n')}\n`);
    let written = 0;
    try {
      // A short write is how a disk that fills up mid-batch answers: the next write says why (ENOSPC, EFBIG).
      while (written < data.length) {
        const n = writeSync(fd, data, written);
        if (n === 0) throw new Error('the file system took none of the bytes written');
        written += n;
      }
    } catch (error) {
      // Cut back out, so that the journal ends at its last whole record: the batch is stored whole or not at all.
      throw this.failed(error);
    }
    this.size += written;
  }

  /** Cuts the journal back to its last whole record (what it was before the failed write). */
  private failed(error: unknown): SessionStorageError {
    try {
      ftruncateSync(this.open(), this.size);
    } catch {
      // Left torn: the torn record is then the journal's last, which opening drops as a crash's.
    }
    return new SessionStorageError(this.id, 'append to its journal', error);
  }

  saveIndex(index: string): void {
    this.open();
    // Overwritten in place through a descriptor kept open (a file written aside and renamed cost ~10 % of W1's
    // CPU under load): one write, and a truncation when it got shorter. A kill between the two leaves the end of
    // the old index after the new one, which does not parse: the listing then reads the journal whole.
    this.indexFd ??= openSync(this.index, constants.O_RDWR | constants.O_CREAT);
    const text = `${this.size}\n${index}\n`;
    const length = writeSync(this.indexFd, text, 0);
    if (length < this.indexLength) ftruncateSync(this.indexFd, length);
    this.indexLength = length;
  }

  private indexFd?: number;
  private indexLength = Number.POSITIVE_INFINITY;

  private closeIndex(): void {
    if (this.indexFd === undefined) return;
    closeSync(this.indexFd);
    this.indexFd = undefined;
    this.indexLength = Number.POSITIVE_INFINITY;
  }

  truncate(count: number): void {
    const fd = this.open();
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(size);
    readSync(fd, buffer, 0, size, 0);
    let offset = 0;
    for (let kept = 0; kept < count; kept++) {
      const end = buffer.indexOf(10, offset);
      if (end < 0) return; // fewer records than asked: nothing to drop
      offset = end + 1;
    }
    ftruncateSync(fd, offset);
    this.size = offset;
    // The index summed up what was just dropped (and the next records would land where it thinks its tail starts).
    this.closeIndex();
    rmSync(this.index, { force: true });
  }

  release(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    this.closeIndex();
    try {
      rmSync(this.lock, { force: true });
    } catch {
      // A folder turned read-only: the lock stays, and is stale once this process is gone.
    }
  }

  private open(): number {
    if (this.fd === undefined) throw new Error('This session writer was released');
    return this.fd;
  }
}
