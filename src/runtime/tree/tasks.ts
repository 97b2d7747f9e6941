import type { AnyActorRef } from 'xstate';
import type { Message, TaskStatus } from '../../protocol/index.js';
import type { Budget } from '../budget/budget.js';
import type { TaskResult } from './subagent-tools.js';

/** What the runtime knows of one task, from its start until it is forgotten. */
export interface TaskRecord {
  readonly taskId: string;
  readonly agentId: string;
  readonly ownerId: string;
  readonly batchId: string;
  /** Its place in its batch: results are reported in task order. */
  readonly index: number;
  readonly background: boolean;
  readonly profile: string;
  status: TaskStatus;
  attempt: number;
  /** For a resume: the history the task continues from (a restart goes back to it). */
  base?: readonly Message[];
  /**
   * Started again from a journal: the history its first run since goes on from when that run is a resume (the
   * archive a live resume reads went with the process).
   */
  history?: readonly Message[];
  /** The budget account its agent's turns open under: the starting turn's, or its swarm's. */
  budget?: Budget;
  result?: TaskResult;
  /** Its task actor, once started: where its batch's verdicts go (the batch does not parent its tasks). */
  actor?: AnyActorRef;
}

interface OpenBatch {
  results: TaskResult[];
  remaining: number;
  resolve(results: TaskResult[]): void;
}

/**
 * The task records of one tree: open tasks (counted for `maxAgents`), the batches waiting for their results, and
 * each owner's most recent `keepHistory` finished records (for `task_status` and `supervisor.result`). Counted per
 * owner, not per tree: what a parent can still ask about depends only on the tasks it started, never on how fast
 * other agents of the tree finish theirs, and a host that keeps each parent's book apart counts the same.
 */
export class TaskBook {
  private readonly records = new Map<string, TaskRecord>();
  private readonly batches = new Map<string, OpenBatch>();
  /** The open task of each agent that has one: an agent runs one task at a time. */
  private readonly openByAgent = new Map<string, string>();
  /** Each owner's finished task ids, oldest first (a Set keeps insertion order). */
  private readonly finished = new Map<string, Set<string>>();
  /** Tasks queued or running in the whole tree. */
  open = 0;

  constructor(private readonly keepHistory: number) {}

  get(taskId: string): TaskRecord | undefined {
    return this.records.get(taskId);
  }

  /** The open (queued or running) task of an agent, if it has one. */
  openTaskOf(agentId: string): string | undefined {
    return this.openByAgent.get(agentId);
  }

  /** The open (queued or running) tasks of a batch. */
  openIn(batchId: string): TaskRecord[] {
    return [...this.records.values()].filter((r) => r.batchId === batchId && r.status === 'running');
  }

  /** The open tasks an owner started (its supervisor is stopping). */
  openOf(ownerId: string): TaskRecord[] {
    const open: TaskRecord[] = [];
    for (const record of this.records.values()) {
      if (record.ownerId === ownerId && record.status === 'running') open.push(record);
    }
    return open;
  }

  /** Records a batch's tasks as open; `done` settles with their results in task order. */
  openBatch(batchId: string, records: readonly TaskRecord[]): Promise<TaskResult[]> {
    const done = new Promise<TaskResult[]>((resolve) => {
      this.batches.set(batchId, { results: new Array(records.length), remaining: records.length, resolve });
    });
    for (const record of records) {
      this.records.set(record.taskId, record);
      this.openByAgent.set(record.agentId, record.taskId);
    }
    this.open += records.length;
    return done;
  }

  /**
   * A task's end: its result joins its batch's, and its record is kept among the recent finished ones. True when
   * it was its batch's last, whose results are now resolved.
   */
  settle(record: TaskRecord, result: TaskResult): boolean {
    record.status = result.status;
    record.result = result;
    this.open--;
    if (this.openByAgent.get(record.agentId) === record.taskId) this.openByAgent.delete(record.agentId);
    const batch = this.batches.get(record.batchId);
    if (batch) {
      batch.results[record.index] = result;
      if (--batch.remaining === 0) {
        this.batches.delete(record.batchId);
        batch.resolve(batch.results);
        this.retire(record);
        return true;
      }
    }
    this.retire(record);
    return false;
  }

  /** Every waiting batch settles with what it has (the tree is shutting down). */
  closeAll(): void {
    for (const [batchId, batch] of this.batches) {
      this.batches.delete(batchId);
      batch.resolve(batch.results);
    }
  }

  private retire(record: TaskRecord): void {
    let owned = this.finished.get(record.ownerId);
    if (!owned) {
      owned = new Set();
      this.finished.set(record.ownerId, owned);
    }
    owned.add(record.taskId);
    for (const old of owned) {
      if (owned.size <= this.keepHistory) break;
      owned.delete(old);
      this.records.delete(old);
    }
    if (owned.size === 0) this.finished.delete(record.ownerId);
  }
}
