import { nanoid } from 'nanoid';
import type { AgentEventBody, UserContent } from '../../protocol/index.js';
import type { JournalRecord, ScheduleRecord } from '../../session/index.js';
import { type MissedRuns, type Schedule, type ScheduleOptions, type ScheduleTimer, startSchedule } from './schedule.js';

type ScheduledInput = string | UserContent[];

/** Where an agent's schedules are journaled: its session's records (to restore from) and its writer. */
export interface ScheduleJournal {
  readonly records: readonly JournalRecord[];
  add(record: ScheduleRecord): void;
}

/** One schedule as `agent.getState()` shows it; times are ms since the epoch. */
export interface ScheduleState {
  id: string;
  cron: string;
  next?: number;
  lastRunAt?: number;
  runs: number;
  skipped: number;
  /** Runs that fell due while no process ran the schedule (reported, not replayed). */
  missed?: { count: number; first: number; last: number };
}

/** A schedule as its journal describes it: what restarts it, and the due time misses are counted from. */
interface JournaledSchedule {
  id: string;
  cron: string;
  prompt: ScheduledInput;
  timezone?: string;
  overlap?: 'skip' | 'queue';
  since: number;
}

interface Entry {
  timer: ScheduleTimer;
  cron: string;
  prompt: ScheduledInput;
  /** The declaring call's options; a declaration again (same id) replaces its callbacks. */
  declared: { options: ScheduleOptions };
}

/**
 * An agent's schedules. With a session, each one's life is journaled (created, each due time, misses, a cancel), and
 * an agent opened from the session restarts those not cancelled: runs that fell due meanwhile are reported as a
 * `schedule_missed` event and on the handle, never replayed (a backlog of stale reports helps nobody).
 */
export class ScheduleBook {
  private readonly live = new Map<string, Entry>();

  constructor(
    private readonly agentId: string,
    private readonly run: (input: ScheduledInput) => Promise<unknown>,
    private readonly publish: (body: AgentEventBody) => void,
    private readonly journal?: ScheduleJournal,
  ) {}

  /** `agent.schedule`: a declaration with the id of a live schedule finds it if it says the same, else replaces it. */
  add(cron: string, prompt: ScheduledInput, options: ScheduleOptions = {}): Schedule {
    const existing = options.id === undefined ? undefined : this.live.get(options.id);
    if (existing && sameDeclaration(existing, cron, prompt, options)) {
      existing.declared.options = options;
      const missed = existing.timer.missedRuns;
      if (missed) options.onMissed?.(missed);
      return existing.timer;
    }
    existing?.timer.stop();
    const id = options.id ?? `schedule_${nanoid(10)}`;
    const { timezone, overlap } = options;
    const created = Date.now();
    // Journaled before its timer starts, so that no due time is written before the schedule it belongs to.
    this.journal?.add({
      k: 'schedule',
      a: this.agentId,
      id,
      ev: 'created',
      t: created,
      cron,
      prompt,
      ...(timezone === undefined ? {} : { timezone }),
      ...(overlap === undefined ? {} : { overlap }),
    });
    return this.start(id, cron, prompt, options);
  }

  /** Restarts the journaled schedules; misses are published on the next macrotask, when listeners are attached. */
  restore(): void {
    if (!this.journal) return;
    const missed: AgentEventBody[] = [];
    for (const saved of journaledSchedules(this.journal.records, this.agentId)) {
      const { id, cron, prompt, timezone, overlap } = saved;
      const timer = this.start(id, cron, prompt, {
        id,
        since: new Date(saved.since),
        ...(timezone === undefined ? {} : { timezone }),
        ...(overlap === undefined ? {} : { overlap }),
      });
      const report = timer.missedRuns;
      if (!report) continue;
      const first = report.first.getTime();
      const last = report.last.getTime();
      this.journal.add({ k: 'schedule', a: this.agentId, id, ev: 'missed', t: last, count: report.count, first });
      missed.push({ type: 'schedule_missed', scheduleId: id, cron, count: report.count, first, last });
    }
    if (missed.length > 0) setImmediate(() => missed.forEach(this.publish));
  }

  list(): Schedule[] {
    return [...this.live.values()].map((entry) => entry.timer);
  }

  state(): ScheduleState[] {
    return this.list().map((schedule) => ({
      id: schedule.id,
      cron: schedule.cron,
      ...(schedule.next() ? { next: schedule.next()?.getTime() } : {}),
      ...(schedule.lastRunAt ? { lastRunAt: schedule.lastRunAt.getTime() } : {}),
      runs: schedule.runs,
      skipped: schedule.skipped,
      ...(schedule.missedRuns ? { missed: plainMissed(schedule.missedRuns) } : {}),
    }));
  }

  /** The agent stops: timers end, schedules stay in the journal for the next process. */
  haltAll(): void {
    for (const entry of this.live.values()) entry.timer.halt();
    this.live.clear();
  }

  private start(id: string, cron: string, prompt: ScheduledInput, options: ScheduleOptions): ScheduleTimer {
    const declared = { options };
    const journal = this.journal;
    const fact = (ev: ScheduleRecord['ev'], t: number) => journal?.add({ k: 'schedule', a: this.agentId, id, ev, t });
    const timer = startSchedule(
      cron,
      () => this.run(prompt),
      {
        ...options,
        id,
        onRun: (outcome) => declared.options.onRun?.(outcome),
        onMissed: (missed) => declared.options.onMissed?.(missed),
      },
      {
        onDue: (at, outcome) => fact(outcome, at.getTime()),
        onCancel: () => {
          this.live.delete(id);
          fact('cancelled', Date.now());
        },
      },
    );
    this.live.set(id, { timer, cron, prompt, declared });
    return timer;
  }
}

function sameDeclaration(entry: Entry, cron: string, prompt: ScheduledInput, options: ScheduleOptions): boolean {
  const was = entry.declared.options;
  return (
    entry.cron === cron &&
    JSON.stringify(entry.prompt) === JSON.stringify(prompt) &&
    was.timezone === options.timezone &&
    (was.overlap ?? 'skip') === (options.overlap ?? 'skip')
  );
}

function plainMissed(missed: MissedRuns): NonNullable<ScheduleState['missed']> {
  return { count: missed.count, first: missed.first.getTime(), last: missed.last.getTime() };
}

/** The agent's schedules not cancelled, each with the latest due time its journal handled. */
function journaledSchedules(records: readonly JournalRecord[], agentId: string): JournaledSchedule[] {
  const schedules = new Map<string, JournaledSchedule>();
  for (const record of records) {
    if (record.k !== 'schedule' || record.a !== agentId) continue;
    if (record.ev === 'created') {
      if (record.cron === undefined || record.prompt === undefined) continue;
      schedules.set(record.id, {
        id: record.id,
        cron: record.cron,
        prompt: record.prompt,
        since: record.t,
        ...(record.timezone === undefined ? {} : { timezone: record.timezone }),
        ...(record.overlap === undefined ? {} : { overlap: record.overlap }),
      });
    } else if (record.ev === 'cancelled') schedules.delete(record.id);
    else {
      const schedule = schedules.get(record.id);
      if (schedule && record.t > schedule.since) schedule.since = record.t;
    }
  }
  return [...schedules.values()];
}
