import type { JournalRecord, VerdictRecord } from '../../session/index.js';

/**
 * Where the supervision of a journal's batches stood when it ends, read from their verdicts and their tasks' starts:
 * what a batch started again after a restart goes on from, so that a crash in the middle of restarts neither resets
 * the intensity window nor the attempts, nor forgets an escalation.
 */
export class BatchStanding {
  /** When each batch restarted or resumed a task: its intensity window is counted on these. */
  private readonly restarts = new Map<string, number[]>();
  /** Each task's restarts and resumes its batch ordered. */
  private readonly ordered = new Map<string, number>();
  /** The last run of each task the journal started. */
  private readonly started = new Map<string, number>();
  /** The sibling whose failure restarted a task last (none after its own failure restarted it). */
  private readonly causes = new Map<string, string>();
  /** The last verdict that ordered each task's next run: when, and after what backoff. */
  private readonly orders = new Map<string, { t: number; delayMs: number }>();
  /** The runs ordered as resumes (`<taskId>/<attempt>`): they go on from their agent's history. */
  private readonly resumes = new Set<string>();
  /** The batches that escalated, with the verdict. */
  private readonly escalations = new Map<string, VerdictRecord>();

  constructor(records: readonly JournalRecord[]) {
    for (const record of records) {
      if (record.k === 'task' && record.ev === 'started') {
        this.started.set(record.taskId, Math.max(record.attempt ?? 0, this.started.get(record.taskId) ?? 0));
      } else if (record.k === 'verdict') this.verdict(record);
    }
  }

  private verdict(record: VerdictRecord): void {
    if (record.v === 'escalate') {
      this.escalations.set(record.batchId, record);
      return;
    }
    if (record.v === 'stop') return;
    // A resume answers the failed run in hand: the next run is its own (a sibling's restart after it is another).
    if (record.v === 'resume') this.resumes.add(`${record.taskId}/${record.attempt + 1}`);
    this.restarts.set(record.batchId, [...(this.restarts.get(record.batchId) ?? []), record.t]);
    for (const taskId of [record.taskId, ...(record.restarted ?? [])]) {
      this.ordered.set(taskId, (this.ordered.get(taskId) ?? 0) + 1);
      this.orders.set(taskId, { t: record.t, delayMs: record.delayMs ?? 0 });
      if (taskId === record.taskId) this.causes.delete(taskId);
      else this.causes.set(taskId, record.taskId);
    }
  }

  restartsOf(batchId: string): number[] {
    return this.restarts.get(batchId) ?? [];
  }

  /** The run a task goes on with: the one its batch last ordered, or the last one started (a journal without verdicts). */
  attemptOf(taskId: string): number {
    return Math.max(this.ordered.get(taskId) ?? 0, this.started.get(taskId) ?? 0);
  }

  /** Whether the journal holds the start of the task's run `attempt` (it was under way: its agent replays it). */
  startedRun(taskId: string, attempt: number): boolean {
    return (this.started.get(taskId) ?? 0) === attempt;
  }

  /**
   * What is left at `now` of the backoff before the task's run `attempt`, when its batch ordered that run and it had
   * not started (undefined for a run under way or none ordered).
   */
  backoffLeft(taskId: string, attempt: number, now: number): number | undefined {
    const order = this.orders.get(taskId);
    if (!order || attempt === 0 || this.startedRun(taskId, attempt)) return undefined;
    return Math.max(0, order.delayMs - (now - order.t));
  }

  /** Whether the task's run `attempt` was ordered as a resume. */
  resumed(taskId: string, attempt: number): boolean {
    return this.resumes.has(`${taskId}/${attempt}`);
  }

  causeOf(taskId: string): string | undefined {
    return this.causes.get(taskId);
  }

  escalationOf(batchId: string): VerdictRecord | undefined {
    return this.escalations.get(batchId);
  }
}
