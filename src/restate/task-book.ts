import * as restate from '@restatedev/restate-sdk';
import { notificationMessage, type SerializedError, type TaskStatus, taskEnd } from '../host/index.js';
import type { TaskResult } from '../index.js';
import { releaseSlots } from './agent-slots.js';
import { offerResult, withdrawResult } from './control.js';
import { agentsFinished, claimResumes, forgetBook } from './finished-agents.js';
import { type BatchStart, batchesName, batchKey, type Spent, tasksOfBatches } from './hand-off.js';

/**
 * The background tasks of one hosted agent, as `task_status` and `task_cancel` see them: a small object keyed by
 * the parent's id (`<name>-tasks/<parentId>`). A child cannot write its parent's state, and the parent's object is
 * busy for as long as its turn runs, so a result that waited for the parent's `notify` would be invisible to the
 * turn that asks about it. Here it is visible at once: the book starts each task, hears its end, and
 * is the one that tells the parent (its `notify`), once; a cancel and the child's own end are serialized by the
 * book's key, so whichever comes first decides the status, and the other changes nothing.
 *
 * A cancelled task's subtree stops with it, and every task it had open settles as interrupted: the parent's book
 * tells the child's book to `stop`, which cancels each of the child's running tasks, records it `interrupted`,
 * gives its slot back and tells the child nothing (it is cancelled too), then tells each grandchild's book the same. Each step is a journaled message to a book whose key
 * serializes it with that task's own `settle`, so every task of the subtree settles once.
 */

/** The book's record of one task. */
export interface BookedTask {
  agentId: string;
  status: TaskStatus;
  /** The hand-off, once settled. */
  text?: string;
  /** A task of a background batch: the batch's invocation (batches.ts), cancelled when the owner is. */
  batch?: string;
  /** A task of a background batch: the batch's awakeable that cancels it alone (`task_cancel`). */
  cancelBy?: string;
  /** The parent's `notify` invocation that brings its end, for a cancel of the parent before it runs. */
  notifyId?: string;
  /** The tree's root, whose `maxAgents` slot the task holds (absent in records written before it was kept). */
  root?: string;
}

/** A child's end, as it tells the book (its hand-off). */
export interface BookSettle {
  taskId: string;
  status: Exclude<TaskStatus, 'running'>;
  text: string;
  /** What the child's task spent, when a budget covered it (told to the parent with the result). */
  spent?: Spent;
  /** The failure its batch escalated with this task's end: the owner's turn that hears it fails with it. */
  escalation?: SerializedError;
}

/** The background batches one step started, as its owner's turn asks the book to start them. */
export type BookBatch = Omit<BatchStart, 'ownerId'>;

/** The awakeables that cancel a batch's tasks one by one, as the batch tells its owner's book. */
export interface BookCancels {
  /** Each task's id, and the id of the awakeable that cancels it. */
  tasks: { taskId: string; cancel: string }[];
}

/** Foreground tasks that settled, as their parent's turn records them (`task_status` knows them once over). */
export interface BookRecord {
  tasks: (BookSettle & { agentId: string })[];
}

/** A foreground task's result as the book keeps it. */
export const bookedResult = ({ taskId, agentId, status, text }: TaskResult) => ({ taskId, agentId, status, text });

/** The book's object name for an agent object's name. */
export const taskBookName = (agentObjectName: string) => `${agentObjectName}-tasks`;

const json = restate.serde.json;
const TASK_PREFIX = 'task:';
const recordKey = (taskId: string) => `${TASK_PREFIX}${taskId}`;

/** The book's task records with their task ids, in its state's key order (one read each, in that order). */
async function* bookedTasks(ctx: restate.ObjectSharedContext): AsyncGenerator<[string, BookedTask]> {
  for (const key of await ctx.stateKeys()) {
    if (!key.startsWith(TASK_PREFIX)) continue;
    const record = await ctx.get<BookedTask>(key);
    if (record) yield [key.slice(TASK_PREFIX.length), record];
  }
}

/** The agents of the book's tasks that `wanted` keeps (a shared read: it answers while the book is busy). */
async function agentsOf(ctx: restate.ObjectSharedContext, wanted: (task: BookedTask) => boolean): Promise<string[]> {
  const agents = new Set<string>();
  for await (const [, record] of bookedTasks(ctx)) if (wanted(record)) agents.add(record.agentId);
  return [...agents];
}
/** Set once the book's owner was cancelled: a `start` its last turn sent afterwards starts nothing. */
const STOPPED = 'stopped';
/** Finished task ids, oldest first: the most recent `keepHistory` keep their records. */
const FINISHED = 'finished';

/** Calls a handler of the parent's task book from the parent's turn (a journaled call, its answer read back). */
export function callBook<I, O>(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  method: 'status' | 'cancel' | 'resume',
  parameter: I,
): restate.InvocationPromise<O> {
  return ctx.genericCall<I, O>({
    service: taskBookName(agentObjectName),
    method,
    key: ctx.key,
    parameter,
    inputSerde: json,
    outputSerde: json,
  });
}

/** Sends a handler of a task book a message (journaled: delivered once). */
export function sendBook(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  parentId: string,
  method: 'batch' | 'cancels' | 'settle' | 'record',
  parameter: BookBatch | BookCancels | BookSettle | BookRecord,
): void {
  ctx.genericSend({ service: taskBookName(agentObjectName), method, key: parentId, parameter, inputSerde: json });
}

/**
 * Stops the background tasks of a cancelled agent, and theirs in turn (a journaled message to its book, so sent
 * once; stopping twice changes nothing).
 */
export function stopTasksOf(ctx: restate.ObjectContext, agentObjectName: string, ownerId: string): void {
  ctx.genericSend({
    service: taskBookName(agentObjectName),
    method: 'stop',
    key: ownerId,
    parameter: null,
    inputSerde: json,
  });
}

/** A cancelled agent resumed with a new task may start background tasks again. */
export function reopenTasksOf(ctx: restate.ObjectContext, agentObjectName: string, ownerId: string): void {
  ctx.genericSend({
    service: taskBookName(agentObjectName),
    method: 'reopen',
    key: ownerId,
    parameter: null,
    inputSerde: json,
  });
}

/**
 * The task book object of the agents hosted by the object named `agentObjectName` (served beside it). `counted`:
 * the tree counts its open tasks (`maxAgents`), and a settled task's slot is given back before the parent hears it.
 * `keepHistory`: how many finished tasks of the parent's keep their records; with `keepFinished`, which finished
 * children it may resume (finished-agents.ts).
 */
export function taskBookObject(
  agentObjectName: string,
  options: { counted: boolean; keepHistory: number; keepFinished: number },
) {
  const { counted, keepHistory } = options;
  /** Finished tasks join the kept ones; the oldest beyond `keepHistory` are forgotten. */
  const retire = async (ctx: restate.ObjectContext, taskIds: string[]) => {
    const finished = [...((await ctx.get<string[]>(FINISHED)) ?? []), ...taskIds];
    const forgotten = finished.splice(0, Math.max(0, finished.length - keepHistory));
    for (const taskId of forgotten) ctx.clear(recordKey(taskId));
    ctx.set(FINISHED, finished);
  };
  /**
   * A task's end, whoever decided it: recorded, its slot given back (before the parent hears it, so a parent that
   * starts more on hearing it finds the slot free), and told to the parent (`notify`) as a notification turn, once;
   * not when the parent itself was cancelled (`tell` false), as an embedded agent that is stopped hears nothing.
   */
  const conclude = async (
    ctx: restate.ObjectContext,
    taskId: string,
    settled: BookedTask,
    tell = true,
    told: Pick<BookSettle, 'spent' | 'escalation'> = {},
  ) => {
    if (counted) await releaseSlots(ctx, agentObjectName, settled.root ?? ctx.key, 1, true);
    // A cancelled child stops with its task (so does one whose owner was cancelled); any other stays resumable.
    const alive = tell && settled.status !== 'cancelled';
    await agentsFinished(ctx, agentObjectName, options, [{ agentId: settled.agentId, alive }]);
    if (!tell) {
      ctx.set(recordKey(taskId), settled);
      await retire(ctx, [taskId]);
      return;
    }
    const parameter = { taskId, agentId: settled.agentId, status: settled.status, text: settled.text ?? '' };
    // First to the parent's running turn, if any (control.ts), where it joins the next step; a call, so
    // it is there before the `notify` below exists, which withdraws it, or finds the turn that took it.
    const message = notificationMessage(taskId, settled.agentId, settled.status, parameter.text);
    const escalation = told.escalation ? { escalation: told.escalation } : {};
    const offered = await offerResult(ctx, agentObjectName, { taskId, message, ...escalation });
    const notify = ctx.genericSend({
      service: agentObjectName,
      method: 'notify',
      key: ctx.key,
      parameter: { ...parameter, ...(offered ? { offered } : {}), ...told },
      inputSerde: json,
    });
    ctx.set(recordKey(taskId), { ...settled, notifyId: await notify.invocationId });
    await retire(ctx, [taskId]);
  };
  /** A task stopped with its cancelled owner: its child cancelled, and the child's own tasks stopped in turn. */
  const stopTask = async (ctx: restate.ObjectContext, taskId: string, record: BookedTask) => {
    if (record.batch) ctx.invocation(record.batch as restate.InvocationId).cancel();
    await conclude(ctx, taskId, { ...record, ...taskEnd('stopped') }, false);
    stopTasksOf(ctx, agentObjectName, record.agentId);
  };
  return restate.object({
    name: taskBookName(agentObjectName),
    handlers: {
      /**
       * Starts background batches: their object's `supervise` (journaled, sent once, batches.ts), which supervises
       * their tasks and tells each end here (`settle`), and a `running` record for each.
       */
      batch: async (ctx: restate.ObjectContext, request: BookBatch): Promise<null> => {
        const { root } = request;
        const tasks = tasksOfBatches(request.batches);
        if (await ctx.get<BookedTask>(recordKey(tasks[0]?.taskId ?? ''))) return null;
        if (await ctx.get<boolean>(STOPPED)) {
          for (const { taskId, agentId } of tasks) {
            await conclude(ctx, taskId, { agentId, root, ...taskEnd('stopped') }, false);
          }
          return null;
        }
        const handle = ctx.genericSend({
          service: batchesName(agentObjectName),
          method: 'supervise',
          key: batchKey(ctx.key, tasks),
          parameter: { ...request, ownerId: ctx.key } satisfies BatchStart,
          inputSerde: json,
        });
        const batch = await handle.invocationId;
        for (const { taskId, agentId } of tasks) {
          ctx.set(recordKey(taskId), { agentId, root, status: 'running', batch } satisfies BookedTask);
        }
        return null;
      },
      /** A batch's awakeables that cancel its tasks: one cancelled before they came is cancelled now. */
      cancels: async (ctx: restate.ObjectContext, input: BookCancels): Promise<null> => {
        for (const { taskId, cancel } of input.tasks) {
          const record = await ctx.get<BookedTask>(recordKey(taskId));
          if (record?.status === 'running') ctx.set(recordKey(taskId), { ...record, cancelBy: cancel });
          else ctx.resolveAwakeable(cancel, null);
        }
        return null;
      },
      /** A child's end: recorded and told to the parent, unless the task was settled already (cancelled). */
      settle: async (ctx: restate.ObjectContext, end: BookSettle): Promise<null> => {
        const record = await ctx.get<BookedTask>(recordKey(end.taskId));
        if (record?.status !== 'running') return null;
        const { spent, escalation } = end;
        const told = { ...(spent ? { spent } : {}), ...(escalation ? { escalation } : {}) };
        await conclude(ctx, end.taskId, { ...record, status: end.status, text: end.text }, true, told);
        return null;
      },
      /**
       * `task_cancel`: a running task is cancelled through Restate (its turn is interrupted, its tools see the
       * abort, a restart's backoff ends) and reported `cancelled` to the parent now; what the child
       * says afterwards changes nothing.
       */
      cancel: async (
        ctx: restate.ObjectContext,
        input: { taskId: string },
      ): Promise<'cancelled' | 'finished' | 'unknown'> => {
        const record = await ctx.get<BookedTask>(recordKey(input.taskId));
        if (!record) return 'unknown';
        if (record.status !== 'running') return 'finished';
        // Its batch cancels it alone (a batch that has not said how yet is told by `cancels`).
        if (record.cancelBy) ctx.resolveAwakeable(record.cancelBy, null);
        await conclude(ctx, input.taskId, { ...record, ...taskEnd('cancelled') });
        // Its subtree stops with it (the child may have no turn running to hear its cancellation: it may be
        // waiting for its own background tasks).
        stopTasksOf(ctx, agentObjectName, record.agentId);
        return 'cancelled';
      },
      /**
       * The book's owner was cancelled: each of its running tasks is stopped (and theirs, by their books), and a
       * `notify` not yet run is cancelled (an embedded agent that is stopped hears no more results).
       */
      stop: async (ctx: restate.ObjectContext): Promise<null> => {
        ctx.set(STOPPED, true);
        for await (const [taskId, record] of bookedTasks(ctx)) {
          if (record.status === 'running') await stopTask(ctx, taskId, record);
          else if (record.notifyId) ctx.invocation(record.notifyId as restate.InvocationId).cancel();
        }
        // A result offered to a turn that took nothing more (it rang one that was ending) waits in the control
        // object for its `notify`, cancelled above: withdrawn too, or a turn of a resumed task would take it. A call,
        // so it is gone before anything this stop leads to runs.
        await withdrawResult(ctx, agentObjectName);
        return null;
      },
      /** The owner, cancelled before, was given a new task (a resume): it may start tasks again. */
      reopen: async (ctx: restate.ObjectContext): Promise<null> => {
        ctx.clear(STOPPED);
        return null;
      },
      /** Foreground tasks that settled (sent by the parent's turn once its batches are over). */
      record: async (ctx: restate.ObjectContext, input: BookRecord): Promise<null> => {
        for (const { taskId, ...result } of input.tasks) ctx.set(recordKey(taskId), result satisfies BookedTask);
        const finished = input.tasks.map(({ agentId, status }) => ({ agentId, alive: status !== 'cancelled' }));
        await agentsFinished(ctx, agentObjectName, options, finished);
        await retire(
          ctx,
          input.tasks.map((task) => task.taskId),
        );
        return null;
      },
      /**
       * The agents of the tasks running now. Shared, so it answers while the book is busy: with the parent's
       * `foreground` handler, what a client walks to find every subagent of a tree from the ingress alone.
       */
      running: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext): Promise<string[]> =>
          agentsOf(ctx, (task) => task.status === 'running'),
      ),
      /**
       * The agents of the settled tasks it keeps records of (`keepHistory`). Shared, like `running`: such a subagent
       * is idle unless something woke it since (a steer sent to it directly), which a client walking the tree asks
       * its own object (its `doorbell` is set while a turn runs).
       */
      settled: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext): Promise<string[]> =>
          agentsOf(ctx, (task) => task.status !== 'running'),
      ),
      /** A resume of finished children by id, refused for one still running or no longer kept (finished-agents.ts). */
      resume: async (ctx: restate.ObjectContext, input: { agentIds: string[] }) =>
        claimResumes(ctx, input.agentIds, await agentsOf(ctx, (task) => task.status === 'running')),
      /** The owner is forgotten (beyond its parent's `keepHistory`): the book and its finished children go too. */
      forget: async (ctx: restate.ObjectContext): Promise<null> => {
        await forgetBook(ctx, agentObjectName);
        return null;
      },
      /** `task_status`: exclusive, so it answers after a `start` the same turn sent before it. */
      status: async (ctx: restate.ObjectContext, input: { taskId: string }): Promise<BookedTask | null> =>
        (await ctx.get<BookedTask>(recordKey(input.taskId))) ?? null,
    },
  });
}
