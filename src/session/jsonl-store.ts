import {
  closeSync,
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

/**
 * Sessions as JSON Lines files in a directory, one file per session (`<id>.jsonl`), appended to and never
 * rewritten, so `tail -f` and `jq` read them as they grow. A writer holds `<id>.lock` (its pid): a lock whose
 * process has died (a crash) is taken over, a live one refuses the second writer.
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
    return new JsonlWriter(this.path(id), lock);
  }

  isLocked(id: string): boolean {
    const holder = this.holder(id);
    return holder !== undefined && processAlive(holder);
  }

  remove(id: string): void {
    if (this.isLocked(id)) throw new SessionLockedError(id, `process ${this.holder(id)}`);
    rmSync(this.path(id), { force: true });
    rmSync(this.lockPath(id), { force: true });
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

  private lockPath(id: string): string {
    return join(this.dir, `${checkSessionId(id)}.lock`);
  }
}

class JsonlWriter implements StoreWriter {
  private fd: number | undefined;

  constructor(
    path: string,
    private readonly lock: string,
  ) {
    this.fd = openSync(path, 'a+');
  }

  append(records: readonly string[]): void {
    if (records.length === 0) return;
    // One write per batch: a kill can tear only the batch's last line, which the journal drops on opening.
    writeSync(this.open(), records.length === 1 ? `${records[0]}\n` : `${records.join('\n')}\n`);
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
  }

  release(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    rmSync(this.lock, { force: true });
  }

  private open(): number {
    if (this.fd === undefined) throw new Error('This session writer was released');
    return this.fd;
  }
}
