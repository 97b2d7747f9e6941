import { Cron } from 'croner';

export interface ScheduleOptions {
  /** An IANA time zone the cron expression is read in (default: the process's). */
  timezone?: string;
  /**
   * When the schedule last ran, e.g. read back from a session after a restart. Runs that fell due between then and
   * now are reported (`missed`, `onMissed`), never replayed: a backlog of stale reports helps nobody.
   */
  since?: Date;
  onMissed?: (missed: MissedRuns) => void;
  /**
   * What to do when a run falls due while the previous one is still going: `skip` it (default; counted in
   * `skipped`), or `queue` it behind the running turn.
   */
  overlap?: 'skip' | 'queue';
  /** Called after every run that started, with its outcome (its result, or why it failed). */
  onRun?: (outcome: { at: Date; result?: unknown; error?: unknown }) => void;
}

export interface MissedRuns {
  count: number;
  first: Date;
  last: Date;
}

/** A recurring prompt; `stop()` ends it (stopping the agent ends all of its schedules). */
export interface Schedule {
  readonly cron: string;
  /** Runs started so far. */
  readonly runs: number;
  /** Runs that fell due while the previous one was still going (`overlap: 'skip'`). */
  readonly skipped: number;
  /** Runs that fell due during downtime (see `since`). */
  readonly missed: number;
  /** When the last run started. */
  readonly lastRunAt: Date | undefined;
  /** When the next run falls due, or undefined once stopped or exhausted. */
  next(): Date | undefined;
  stop(): void;
}

// setTimeout holds at most 2^31-1 ms (~24.8 days); a later run is reached by re-arming.
const MAX_TIMER_MS = 2 ** 31 - 1;
// Counting missed runs after a long downtime of a per-second schedule must stay bounded.
const MAX_MISSED_COUNTED = 100_000;

/**
 * Starts `run` at every time the cron expression names. croner (a well-kept parser) only computes the times; the
 * timer is ours, so that a run that falls due during the previous one can be skipped and the count of runs
 * missed during downtime can be taken from the same expression.
 */
export function startSchedule(cron: string, run: () => Promise<unknown>, options: ScheduleOptions = {}): Schedule {
  const pattern = new Cron(cron, { paused: true, ...(options.timezone ? { timezone: options.timezone } : {}) });
  const overlap = options.overlap ?? 'skip';
  let runs = 0;
  let skipped = 0;
  let missed = 0;
  let lastRunAt: Date | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let nextAt: Date | undefined;
  let stopped = false;
  let running = 0;

  if (options.since) {
    const report = countMissed(pattern, options.since, new Date());
    if (report) {
      missed = report.count;
      options.onMissed?.(report);
    }
  }

  const arm = (after: Date): void => {
    nextAt = pattern.nextRun(after) ?? undefined;
    if (stopped || !nextAt) return;
    const wait = Math.min(Math.max(0, nextAt.getTime() - Date.now()), MAX_TIMER_MS);
    timer = setTimeout(() => {
      const due = nextAt;
      if (!due) return;
      if (Date.now() < due.getTime()) return arm(new Date(Date.now() - 1)); // a re-arm step of a far run
      fire(due);
      arm(due);
    }, wait);
  };

  const fire = (at: Date): void => {
    if (running > 0 && overlap === 'skip') {
      skipped++;
      return;
    }
    runs++;
    running++;
    lastRunAt = at;
    run().then(
      (result) => {
        running--;
        options.onRun?.({ at, result });
      },
      (error: unknown) => {
        running--;
        options.onRun?.({ at, error });
      },
    );
  };

  arm(new Date());
  return {
    cron,
    get runs() {
      return runs;
    },
    get skipped() {
      return skipped;
    },
    get missed() {
      return missed;
    },
    get lastRunAt() {
      return lastRunAt;
    },
    next: () => (stopped ? undefined : nextAt),
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

function countMissed(pattern: Cron, since: Date, now: Date): MissedRuns | undefined {
  let first: Date | undefined;
  let last: Date | undefined;
  let count = 0;
  for (let at = pattern.nextRun(since); at && at <= now && count < MAX_MISSED_COUNTED; at = pattern.nextRun(at)) {
    first ??= at;
    last = at;
    count++;
  }
  return first && last ? { count, first, last } : undefined;
}
