import type { Message } from '../../protocol/index.js';
import type { JournalRecord } from '../../session/index.js';
import { AgentJournal } from './restore.js';

/**
 * The histories of a journaled tree's task agents, run by run. A run journals its messages from the length of the
 * history it started with: a task's first run from what its agent had (nothing, or the history of the finished
 * agent it resumes by id), a restart from that same base, a resumed run (the verdict `resume`) from everything its
 * agent had when it failed. Messages are numbered in the agent's history, so a run's records alone do not hold it:
 * what it started from is read from the records before it.
 */
export class AgentHistories {
  /** Each task agent's history length as journaled so far. */
  private readonly lengths = new Map<string, number>();
  /** The length each task's first run started from. */
  private readonly bases = new Map<string, number>();
  /** Each agent's last run: the index of its `started` record and the length it started from. */
  private readonly lastRuns = new Map<string, { at: number; from: number }>();
  /** Each agent's records, with their index in the session's. */
  private readonly own = new Map<string, Array<{ at: number; record: JournalRecord }>>();

  constructor(
    records: readonly JournalRecord[],
    /** Whether a task's run `attempt` was ordered as a resume. */
    resumed: (taskId: string, attempt: number) => boolean,
  ) {
    records.forEach((record, at) => {
      if (record.k === 'task' && record.ev === 'started') {
        const attempt = record.attempt ?? 0;
        const now = this.lengths.get(record.agentId) ?? 0;
        if (attempt === 0) this.bases.set(record.taskId, now);
        const from = attempt === 0 || resumed(record.taskId, attempt) ? now : (this.bases.get(record.taskId) ?? 0);
        this.lengths.set(record.agentId, from);
        this.lastRuns.set(record.agentId, { at, from });
      }
      if (!('a' in record)) return;
      if (record.k === 'msg' && this.lengths.has(record.a)) this.lengths.set(record.a, record.i + 1);
      let list = this.own.get(record.a);
      if (!list) {
        list = [];
        this.own.set(record.a, list);
      }
      list.push({ at, record });
    });
  }

  /** The agent's history as journaled: the messages of its last run and of those it went on from. */
  historyOf(agentId: string): Message[] {
    return this.before(agentId, Number.POSITIVE_INFINITY, this.lengths.get(agentId) ?? 0);
  }

  /** Where the agent's last run starts in the session's records (0 when none started). */
  lastRunAt(agentId: string): number {
    return this.lastRuns.get(agentId)?.at ?? 0;
  }

  /** The history the agent's last run started from (empty for one that started with none). */
  lastRunStart(agentId: string): Message[] {
    const run = this.lastRuns.get(agentId);
    return run ? this.before(agentId, run.at, run.from) : [];
  }

  /** What the task's first run started from: the history a restart goes back to (no run of it writes there). */
  baseOf(taskId: string, agentId: string): Message[] {
    return this.before(agentId, Number.POSITIVE_INFINITY, this.bases.get(taskId) ?? 0);
  }

  /** The agent's records before `at`. */
  private recordsOf(agentId: string, at: number): JournalRecord[] {
    return (this.own.get(agentId) ?? []).flatMap((entry) => (entry.at < at ? [entry.record] : []));
  }

  /** The first `length` messages of the agent's history as journaled before record `at`. */
  private before(agentId: string, at: number, length: number): Message[] {
    if (length === 0) return [];
    return new AgentJournal(agentId, this.recordsOf(agentId, at)).messages.slice(0, length);
  }
}
