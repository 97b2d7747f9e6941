import * as restate from '@restatedev/restate-sdk';
import { escalationError, type SerializedError } from '../host/index.js';
import { controlName } from './control.js';
import {
  addSpent,
  type BatchStart,
  batchesName,
  CANCELLED,
  type HandOff,
  type HostedTask,
  type RunAnswer,
  type RunRequest,
  type Spent,
} from './hand-off.js';
import { journalScope } from './journal.js';
import { runBatches } from './swarm.js';
import { type BookSettle, sendBook } from './task-book.js';

/**
 * A background batch on Restate: an object of its own (`<name>-batches`, keyed `<owner>/<first task>`), whose `supervise`
 * runs the batch as a foreground batch is supervised in its owner's turn (`runBatches`: the same strategy,
 * intensity, per-class actions and join, decided by the same pure `failureVerdict`), while its owner's turns go on.
 * Each task's result goes to the owner's task book as it settles (`settle`), which tells the owner, as the result of
 * a lone background task does; the failure the batch escalated goes with the failed task's result, and fails the
 * owner's turn that result reaches. The book cancels one task through an awakeable of the batch's (`cancels`), and
 * the whole batch by cancelling this invocation (its owner was cancelled).
 */

const json = restate.serde.json;

/** The batch object of the agents hosted by the object named `agentObjectName` (served beside it). */
export function batchObject(agentObjectName: string) {
  return restate.object({
    name: batchesName(agentObjectName),
    handlers: {
      /** Runs one background batch to its end: every task settled, cancelled, or the batch escalated. */
      supervise: async (ctx: restate.ObjectContext, batch: BatchStart): Promise<null> => {
        const { ownerId, tasks, root, budget } = batch;
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
        const call = (task: HostedTask, fresh: boolean) => {
          const handOff = ctx.awakeable<HandOff>();
          const request: RunRequest = {
            parentId: ownerId,
            taskId: task.taskId,
            prompt: task.prompt,
            root,
            ...(task.profiles ? { profiles: task.profiles } : {}),
            ...(fresh ? { fresh } : {}),
            ...(budget ? { budget } : {}),
            handOffTo: handOff.id,
          };
          const run = ctx.genericCall<RunRequest, RunAnswer>({
            service: agentObjectName,
            method: 'run',
            key: task.agentId,
            parameter: request,
            inputSerde: json,
            outputSerde: json,
          });
          const cancelWaiting = () =>
            ctx.genericSend({
              service: controlName(agentObjectName),
              method: 'cancel',
              key: task.agentId,
              parameter: { task: handOff.id },
              inputSerde: json,
            });
          return { call: run, handOff: handOff.promise, cancelWaiting };
        };
        try {
          await runBatches(
            journalScope(ctx),
            call,
            [
              {
                tasks,
                options: batch.options,
                cancels: cancels.map((cancel) => cancel.promise),
                escalate: (failure) => {
                  escalation = escalationError(failure);
                },
                settled: (_index, result) => settle(result),
                done: () => {},
              },
            ],
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
