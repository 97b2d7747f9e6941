import * as restate from '@restatedev/restate-sdk';
import { type EscalatedFailure, escalationError, type SerializedError } from '../host/index.js';
import type { TaskResult } from '../index.js';
import {
  addSpent,
  type BatchStart,
  batchesName,
  CANCELLED,
  type Spent,
  startChildRun,
  tasksOfBatches,
} from './hand-off.js';
import { journalScope } from './journal.js';
import { runBatches } from './swarm.js';
import { type BookSettle, sendBook } from './task-book.js';

/**
 * Background batches on Restate: an object of their own (`<name>-batches`, keyed `<owner>/<first task>`), whose
 * `supervise` runs the batches one step of the owner started (one invocation for all of them: a step's several
 * background `agent` calls cost one, as one `swarm` does), each as a foreground batch is supervised in its owner's
 * turn (`runBatches`, each attempt started by `startChildRun`: the same strategy, intensity, per-class actions and
 * join, decided by the same pure `failureVerdict`), while its owner's turns go on. Each task's result goes to the
 * owner's task book as it settles (`settle`), which tells the owner; the failure the batch escalated goes with the failed task's result, and fails the
 * owner's turn that result reaches. The book cancels one task through an awakeable of the batch's (`cancels`), and
 * the whole batch by cancelling this invocation (its owner was cancelled).
 */

const _json = restate.serde.json;

/** The batch object of the agents hosted by the object named `agentObjectName` (served beside it). */
export function batchObject(agentObjectName: string) {
  return restate.object({
    name: batchesName(agentObjectName),
    handlers: {
      /** Runs background batches to their end: every task settled, cancelled, or its batch escalated. */
      supervise: async (ctx: restate.ObjectContext, start: BatchStart): Promise<null> => {
        const { ownerId, root, budget } = start;
        const tasks = tasksOfBatches(start.batches);
        // One awakeable per task, which its `task_cancel` resolves: the book learns them before anything settles.
        const cancels = tasks.map(() => ctx.awakeable<null>());
        const ids = tasks.map((task, i) => ({ taskId: task.taskId, cancel: cancels[i]?.id as string }));
        sendBook(ctx, agentObjectName, ownerId, 'cancels', { tasks: ids });
        /** What each task spent over its attempts (stale runs too): owed to the owner with its result. */
        const spent = new Map<string, Spent>();
        let escalation: SerializedError | undefined;
        /** Tasks whose end has gone to the book. */
        const told = new Set<string>();
        const settle = ({ taskId, status, text }: Pick<BookSettle, 'taskId' | 'status' | 'text'>) => {
          const owed = spent.get(taskId);
          const escalated = escalation;
          escalation = undefined;
          told.add(taskId);
          sendBook(ctx, agentObjectName, ownerId, 'settle', {
            taskId,
            status,
            text,
            ...(owed ? { spent: owed } : {}),
            ...(escalated ? { escalation: escalated } : {}),
          });
        };
        let first = 0;
        const batches = start.batches.map((batch) => {
          const own = cancels.slice(first, first + batch.tasks.length);
          first += batch.tasks.length;
          return {
            ...batch,
            cancels: own.map((cancel) => cancel.promise),
            escalate: (failure: EscalatedFailure) => {
              escalation = escalationError(failure);
            },
            settled: (_index: number, result: TaskResult) => settle(result),
            done: () => {},
          };
        });
        try {
          await runBatches(
            journalScope(ctx),
            startChildRun(ctx, agentObjectName, { parentId: ownerId, root, budget: () => budget }),
            batches,
            undefined,
            (owed, task) => spent.set(task.taskId, addSpent(spent.get(task.taskId), owed) as Spent),
          );
        } catch (error) {
          if (!(error instanceof restate.CancelledError)) throw error;
          // Cancelled (with its owner, whose book has settled every task already; or by an operator): Restate has
          // cancelled the runs it waited on, and each task not settled yet ends cancelled.
          for (const { taskId } of tasks) if (!told.has(taskId)) settle({ taskId, ...CANCELLED });
        }
        return null;
      },
    },
  });
}
