import { createRequire } from 'node:module';
import type { Cron } from 'croner';
import { nanoid } from 'nanoid';

let cronClass: typeof Cron | undefined;

/** croner, loaded when the first schedule starts: a process that schedules nothing does not pay its 2.5 MB. */
function croner(): typeof Cron {
  cronClass ??= (createRequire(import.meta.url)('croner') as typeof import('croner')).Cron;
  return cronClass;
}

export interface ScheduleOptions {
  /**
   * Names the schedule (default: a fresh id). With a session attached, code that declares its schedules at start-up
   * gives each an id: declaring one again finds the schedule the session restored, instead of adding a second.
   */
  id?: string;
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

/**
 * A recurring prompt; `stop()` cancels it (journaled, when a session is attached: it is not restored). Stopping the
 * agent ends all of its schedules without cancelling them: a session keeps them for the next process.
 */
export interface Schedule {
  readonly id: string;
  readonly cron: string;
  /** Runs started so far. */
  readonly runs: number;
  /** Runs that fell due while the previous one was still going (`overlap: 'skip'`). */
  readonly skipped: number;
  /** Runs that fell due during downtime (see `since`). */
  readonly missed: number;
  /** The report of those runs, when there were any. */
  readonly missedRuns: MissedRuns | undefined;
  /** When the last run started. */
  readonly lastRunAt: Date | undefined;
  /** When the next run falls due, or undefined once stopped or exhausted. */
  next(): Date | undefined;
  stop(): void;
}

/** What the agent's schedule book hears of a schedule, to journal it; not part of the public options. */
export interface ScheduleHooks {
  /** A due time was handled: a run started, or was skipped behind a running one. */
  onDue?(at: Date, outcome: 'ran' | 'skipped'): void;
  /** `stop()` was called on the handle (a cancel, as opposed to `halt()` when the agent stops). */
  onCancel?(): void;
}

/** The handle as the runtime holds it: `halt()` ends the timer without cancelling the schedule. */
export interface ScheduleTimer extends Schedule {
  halt(): void;
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
export function startSchedule(
  cron: string,
  run: () => Promise<unknown>,
  options: ScheduleOptions = {},
  hooks: ScheduleHooks = {},
): ScheduleTimer {
  const pattern = new (croner())(cron, { paused: true, ...(options.timezone ? { timezone: options.timezone } : {}) });
  const overlap = options.overlap ?? 'skip';
  let runs = 0;
  let skipped = 0;
  let missedRuns: MissedRuns | undefined;
  let lastRunAt: Date | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let nextAt: Date | undefined;
  let stopped = false;
  let running = 0;

  if (options.since) {
    missedRuns = countMissed(pattern, options.since, new Date());
    if (missedRuns) options.onMissed?.(missedRuns);
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
      hooks.onDue?.(at, 'skipped');
      return;
    }
    runs++;
    running++;
    lastRunAt = at;
    hooks.onDue?.(at, 'ran');
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

  const halt = () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  arm(new Date());
  return {
    id: options.id ?? `schedule_${nanoid(10)}`,
    cron,
    get runs() {
      return runs;
    },
    get skipped() {
      return skipped;
    },
    get missed() {
      return missedRuns?.count ?? 0;
    },
    get missedRuns() {
      return missedRuns;
    },
    get lastRunAt() {
      return lastRunAt;
    },
    next: () => (stopped ? undefined : nextAt),
    stop() {
      if (stopped) return;
      halt();
      hooks.onCancel?.();
    },
    halt,
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
