import type { BudgetLimits, JoinPolicy, SerializedError, StrategyOptions } from '../../protocol/index.js';
import type { AgentEnv } from '../env/env.js';
import { type Journaling, unrecorded } from '../env/recording.js';
import type { Owner } from './nodes.js';
import type { TaskResult } from './subagent-tools.js';
import type { TaskRecord } from './tasks.js';
import type { VerdictFact } from './verdicts.js';

/**
 * Where task lifecycle facts happen, for whoever must keep them (a session journal): a batch opened, a task's
 * agent about to run it (each attempt), a task settled. `resumeBatch` lets a restored tree give a tool call that
 * runs again the tasks it had started before a restart instead of new ones. A tree is given its observer when it is
 * built ({@link unobserved} for a tree without a session) and keeps it for life.
 */
export interface TreeObserver {
  /** The journal of an agent of the tree about to be built (a task's, each attempt, or a member's). */
  agentJournal(): Journaling;
  batchOpened(owner: Owner, batch: OpenedBatch): void;
  taskStarted(env: AgentEnv, task: Readonly<TaskRecord>, attempt: number): void;
  taskSettled(task: Readonly<TaskRecord>, result: TaskResult, error?: SerializedError): void;
  /**
   * A batch's verdict on a failed run, once, before its tasks hear it: a restart with the siblings it takes along, a
   * resume, a stop, or an escalation.
   */
  verdict(verdict: VerdictFact): void;
  /**
   * Stores what it was told, and runs `then` (which resolves a promise about a fact) once it is stored; `now`: at
   * once (see JournalWriter.acknowledge).
   */
  acknowledge(now?: boolean, then?: () => void): void;
  resumeBatch(owner: Owner, callId: string, background: boolean): StartedBatch | undefined;
}

/** The observer of a tree without a session: nothing is kept, and a fact is acknowledged at once. */
export const unobserved: TreeObserver = {
  agentJournal: () => unrecorded,
  batchOpened: () => {},
  taskStarted: () => {},
  taskSettled: () => {},
  verdict: () => {},
  acknowledge: (_now, then) => then?.(),
  resumeBatch: () => undefined,
};

/** A batch as it was opened: what a journal needs to start its tasks again. */
export interface OpenedBatch {
  batchId: string;
  callId?: string;
  background: boolean;
  join?: JoinPolicy;
  budget?: BudgetLimits;
  /** Its supervision, where it is not the default (oneForOne, no intensity, the default failure actions). */
  supervision?: StrategyOptions;
  tasks: Array<{ taskId: string; agentId: string; profile: string; prompt: string }>;
}

export interface StartedBatch {
  batchId: string;
  taskIds: string[];
  done: Promise<TaskResult[]>;
}
