/**
 * Writes to a database that another process may hold for a while (an `EXCLUSIVE` transaction, a long import):
 * each write runs at once when the database is free; when it is busy, it and every write after it wait, in order,
 * and are retried from a timer with a growing pause. The event loop is never held (SQLite's own busy timeout would
 * sleep in the main thread), nothing fails for a lock that is only held, and each wait is reported when it starts
 * and when it ends.
 */
export class WriteQueue {
  private readonly waiting: Array<() => void> = [];
  private drained?: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void };
  private pause = 1;
  private since = 0;
  /** The error a waiting write failed with (not a busy database): nothing is written after it. */
  failure?: unknown;

  constructor(
    /** Who waits, in the reports: `Session "x"`. */
    private readonly who: string,
    private readonly onWait: (message: string) => void,
  ) {}

  /** Runs `write` now, or after the writes waiting: then the promise settles when it has run (or failed). */
  run(write: () => void): Promise<void> | undefined {
    if (this.failure) throw this.failure;
    if (this.drained) {
      this.waiting.push(write);
      return this.drained.promise;
    }
    try {
      write();
      return undefined;
    } catch (error) {
      if (!busy(error)) throw error;
    }
    this.waiting.push(write);
    let resolve = () => {};
    let reject: (error: unknown) => void = () => {};
    const promise = new Promise<void>((done, fail) => {
      resolve = done;
      reject = fail;
    });
    // Whoever waits on it handles the failure; a write nobody waits on must not become an unhandled rejection.
    promise.catch(() => {});
    this.drained = { promise, resolve, reject };
    this.since = Date.now();
    this.pause = 1;
    this.onWait(`${this.who}: another process holds the database; its writes wait for it`);
    this.later();
    return promise;
  }

  private later(): void {
    setTimeout(this.retry, this.pause);
    this.pause = Math.min(this.pause * 2, 100);
  }

  private readonly retry = () => {
    const drained = this.drained;
    if (!drained) return;
    for (let write = this.waiting[0]; write; write = this.waiting[0]) {
      try {
        write();
      } catch (error) {
        if (busy(error)) return this.later();
        this.failure = error;
        this.waiting.length = 0;
        this.drained = undefined;
        return drained.reject(error);
      }
      this.waiting.shift();
    }
    this.drained = undefined;
    this.onWait(
      `${this.who}: the database is free again; the writes that waited ${Date.now() - this.since} ms are stored`,
    );
    drained.resolve();
  };
}

/** SQLite's answer when another connection holds the lock a write needs. */
function busy(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}
