import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { checkSessionId, processAlive, SessionLockedError, type Store, type StoreWriter } from './store.js';

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
    mkdirSync(dir, { recursive: true });
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
    if (holder !== undefined && processAlive(holder)) throw new SessionLockedError(id, `process ${holder}`);
    if (holder !== undefined) rmSync(lock, { force: true });
    let fd: number;
    try {
      fd = openSync(lock, 'wx');
    } catch {
      // Another process took it between our check and our open.
      throw new SessionLockedError(id, `process ${this.holder(id) ?? 'unknown'}`);
    }
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return new JsonlWriter(this.path(id), lock, this.indexPath(id));
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
    return holder !== undefined && processAlive(holder);
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

  private holder(id: string): number | undefined {
    try {
      const pid = Number.parseInt(readFileSync(this.lockPath(id), 'utf8'), 10);
      return Number.isInteger(pid) ? pid : 0;
    } catch {
      return undefined;
    }
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
    path: string,
    private readonly lock: string,
    private readonly index: string,
  ) {
    this.fd = openSync(path, 'a+');
    this.size = fstatSync(this.fd).size;
  }

  append(records: readonly string[]): void {
    if (records.length === 0) return;
    // One write per batch: a kill can tear only the batch's last line, which the journal drops on opening.
    this.size += writeSync(this.open(), records.length === 1 ? `${records[0]}\n` : `${records.join('\n')}\n`);
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
    rmSync(this.lock, { force: true });
  }

  private open(): number {
    if (this.fd === undefined) throw new Error('This session writer was released');
    return this.fd;
  }
}
