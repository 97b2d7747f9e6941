import * as restate from '@restatedev/restate-sdk';
import { notificationDelivery, notificationMessage, type SerializedError } from '../host/index.js';
import type { Message, RunResult, UserMessage } from '../index.js';
import { withdrawResult } from './control.js';
import {
  addSpent,
  CANCELLED,
  type HandOff,
  type HostedBudget,
  type RunAnswer,
  type RunRequest,
  type Spent,
  WAITING,
} from './hand-off.js';
import type { HostedSupervision } from './subagents.js';
import { stopTasksOf } from './task-book.js';

/**
 * How a hosted subagent runs its task and hands off: the agent object's `run` (a task of a batch, foreground or
 * background) and `notify` (a child's result) handlers. A task is finished once its agent's turn has ended with none
 * of its own background children open; so the hand-off may come from a later turn than the task's first, the one
 * the last of their results woke.
 */

/**
 * A child's result, sent to its parent's `notify` by the parent's task book as a Restate message (journaled:
 * delivered once, in order per parent).
 */
export interface ChildNotification {
  taskId: string;
  agentId: string;
  status: HandOff['status'];
  text: string;
  /** A turn of the parent ran when it came, and may have taken it (control.ts); else no turn has seen it. */
  offered?: boolean;
  /** What the child's task spent, when a budget covered it: its parent's task owes it to its own parent. */
  spent?: Spent;
  /** The failure the child's background batch escalated with this end: the parent's next turn fails with it. */
  escalation?: SerializedError;
}

/**
 * A failure a background batch of this agent escalated (`SerializedError`): its next turn fails with it at its
 * first step, as an embedded agent's turn does at its next step.
 */
export const ESCALATION = 'escalation';
/** Background children started and not yet reported. */
export const OPEN_CHILDREN = 'openChildren';
/** On a subagent: the profiles it is built from, its parent's first (see `RunRequest.profiles`). */
export const PROFILES = 'profiles';
/** On a subagent: the root of its tree (see `RunRequest.root`). */
export const ROOT = 'root';
/** On a subagent: whose task it runs, and whether its result has gone to the parent. */
export const TASK = 'task';
/**
 * Notifications kept for the agent's next turn (`UserMessage[]`): an agent that does not wake for them
 * (`wakeOnNotification: false`) runs no turn when one comes.
 */
export const NOTES = 'notes';
/**
 * Background results that a running turn took and its stored history holds (`string[]`, task ids), written with
 * that turn: their `notify`, which runs after it, finds its id here (and removes it) and delivers nothing more.
 */
export const TAKEN = 'taken';

export interface TaskRecord {
  parentId: string;
  taskId: string;
  reported: boolean;
  /** The awakeable of the batch that runs the task, resolved with the hand-off (its `run` answered `waiting`). */
  handOffTo: string;
  /**
   * The hand-off of the task's last turn, while it waits for its background children: an agent that does not wake
   * for their results runs no later turn, so its task is finished with this one once the last has come (embedded,
   * the hand-off of its last turn too).
   */
  handOff?: HandOff;
  /**
   * What the task spent besides the turn it reports: its earlier turns and its background children. Its hand-off
   * carries the sum, so the parent's account is charged the task's whole subtree, as an embedded child's chain is.
   */
  spent?: Spent;
}

const plus = addSpent;

/** A task that waits with this hand-off: what its turn spent moves to the task's account of what it owes. */
function owing(task: TaskRecord, { spent, ...handOff }: HandOff): TaskRecord {
  const owed = plus(task.spent, spent);
  return { ...task, handOff, ...(owed ? { spent: owed } : {}) };
}

/** A hosted turn's answer to its caller, and its hand-off to a parent waiting for it. */
export interface HostedTurn<Outcome> {
  outcome: Outcome;
  handOff: HandOff;
}

/** What the task handlers need of the agent object. */
export interface TaskHost<Outcome> {
  /** The agent object's name (its task books are `<name>-tasks`). */
  name: string;
  supervision: HostedSupervision;
  /**
   * One hosted turn of the invocation's agent, opened by a prompt's text or by a notification (the
   * machine's `NOTIFY`, so it is stored as `source: 'notification'`); `budget`: the prompt's (see `RunRequest`).
   */
  turn(ctx: restate.ObjectContext, input: string | UserMessage, budget?: HostedBudget): Promise<HostedTurn<Outcome>>;
  /** Whether the invocation's agent wakes for a notification (its config's `wakeOnNotification`, profiles applied). */
  wakes(ctx: restate.ObjectContext): Promise<boolean>;
  /** Drops the agent's stored turns: a restarted task begins again from its prompt alone. */
  clearHistory(ctx: restate.ObjectContext): Promise<void>;
  /** What a background child spent: it counts against the agent's lifetime account (`totalBudget`). */
  spentBelow(ctx: restate.ObjectContext, spent: Spent): Promise<void>;
}

/**
 * Results the turn took that its stored history holds, or that its agent's machine still holds for the next turn
 * (`left`: the turn was interrupted before their step; the host keeps them in `NOTES`), recorded with it for their
 * `notify` (`TAKEN`), which then runs no turn. One taken and neither stored nor held is left to its `notify`, which
 * delivers it. A held one's escalation waits with it: the next turn fails with it at its first step.
 */
export async function recordTaken(
  ctx: restate.ObjectContext,
  taken: readonly { taskId: string; message: UserMessage; escalation?: SerializedError }[],
  results: readonly RunResult[],
  left: readonly Message[] = [],
): Promise<void> {
  if (taken.length === 0) return;
  const text = (message: Message) => (message.role === 'user' ? JSON.stringify(message.content) : undefined);
  const held = new Set(left.map(text));
  const stored = new Set([...results.flatMap((result) => result.messages).map(text), ...held]);
  const joined = taken.filter(({ message }) => stored.has(text(message)));
  if (joined.length > 0) {
    ctx.set(TAKEN, [...((await ctx.get<string[]>(TAKEN)) ?? []), ...joined.map(({ taskId }) => taskId)]);
  }
  const escalated = joined.find(({ message, escalation }) => escalation && held.has(text(message)));
  if (escalated?.escalation) ctx.set(ESCALATION, escalated.escalation);
}

/** The handlers, and the report the agent object's other turns make too (a `steered` one may be the last). */
export function subagentTasks<Outcome>(host: TaskHost<Outcome>) {
  /**
   * A cancelled agent's background subtree stops with it (its book cancels them, and tells it nothing more), so none
   * of them is open for it any more: a task it is resumed with later waits only for the children that task starts.
   */
  function stopSubtree(ctx: restate.ObjectContext): void {
    stopTasksOf(ctx, host.name, ctx.key);
    ctx.clear(OPEN_CHILDREN);
  }

  /**
   * A new task (a resume) ends the one this agent has not handed off, if any: its parent stopped waiting for it (a
   * foreground task whose parent was interrupted) or cancelled it, the agent idle (a `task_cancel` of a background
   * one waiting for its children, whose book stopped them and tells it nothing). None of those children is open for
   * the new task. A new child learns here its line of profiles and its tree's root, which its later turns build from.
   */
  async function beginTask(ctx: restate.ObjectContext, request: Pick<RunRequest, 'profiles' | 'root'>): Promise<void> {
    const previous = await ctx.get<TaskRecord>(TASK);
    if (previous) {
      if (!previous.reported) ctx.clear(OPEN_CHILDREN);
      ctx.clear(TASK);
    }
    if (request.profiles) ctx.set(PROFILES, request.profiles);
    if (request.root) ctx.set(ROOT, request.root);
  }

  /**
   * A subagent with no open children of its own (or a cancelled one) reports its last turn to the awakeable its
   * batch waits on, once per task.
   */
  async function reportIfSettled(ctx: restate.ObjectContext, handOff: HandOff): Promise<void> {
    const task = await ctx.get<TaskRecord>(TASK);
    if (task && handOff.status === 'cancelled') stopSubtree(ctx);
    if (!task || task.reported) return;
    if (handOff.status !== 'cancelled' && ((await ctx.get<number>(OPEN_CHILDREN)) ?? 0) > 0) {
      // Owed once they have all reported: kept for an agent that will run no turn when the last one does.
      ctx.set(TASK, owing(task, handOff));
      return;
    }
    const spent = plus(task.spent, handOff.spent);
    ctx.resolveAwakeable(task.handOffTo, { ...handOff, ...(spent ? { spent } : {}) });
    ctx.set(TASK, { ...task, reported: true });
  }

  const handlers = {
    /**
     * A task of a batch (the `agent` and `swarm` tools; a background batch's object calls it as a parent's turn
     * does): one turn, whose hand-off is the answer to the call; or, when the turn has started background children
     * that have not reported yet, `waiting`, and the hand-off of the last turn their notifications wake goes to the
     * parent's awakeable (from `notify`): a task is finished only once its agent is idle with none of them open. A
     * restart (`fresh`) drops the failed attempt's history first.
     */
    run: async (ctx: restate.ObjectContext, request: RunRequest): Promise<RunAnswer> => {
      try {
        await beginTask(ctx, request);
        if (request.fresh) await host.clearHistory(ctx);
        // Within what the parent's turn had left when it started this attempt.
        const { handOff } = await host.turn(ctx, request.prompt, request.budget);
        if (handOff.status === 'cancelled') {
          stopSubtree(ctx);
          return handOff;
        }
        const open = (await ctx.get<number>(OPEN_CHILDREN)) ?? 0;
        if (!request.handOffTo || open === 0) return handOff;
        const { parentId, taskId, handOffTo } = request;
        ctx.set(TASK, owing({ parentId, taskId, reported: false, handOffTo }, handOff));
        return WAITING;
      } catch (error) {
        if (!(error instanceof restate.CancelledError)) throw error;
        stopSubtree(ctx);
        return CANCELLED;
      }
    },

    /**
     * A child's result: wakes the agent for a turn that opens with the notification. An agent that does not wake
     * (`wakeOnNotification: false`) keeps it for its next turn, and the task it waited for is finished
     * with its last turn's hand-off once nothing is open (then the answer is null: no turn ran).
     */
    notify: async (ctx: restate.ObjectContext, notification: ChildNotification): Promise<Outcome | null> => {
      ctx.set(OPEN_CHILDREN, Math.max(0, ((await ctx.get<number>(OPEN_CHILDREN)) ?? 0) - 1));
      const { taskId, agentId, status, text } = notification;
      // The child's spending is its task's: owed to the parent with the task's hand-off, and counted in the
      // agent's lifetime account.
      if (notification.spent) {
        await host.spentBelow(ctx, notification.spent);
        const task = await ctx.get<TaskRecord>(TASK);
        if (task && !task.reported) ctx.set(TASK, { ...task, spent: plus(task.spent, notification.spent) });
      }
      const message = notificationMessage(taskId, agentId, status, text);
      // A task waiting for its children is finished with its last turn's hand-off once the last has come, when no
      // turn runs for it. A record written before hand-offs were kept (an upgrade that did not drain) reports an
      // empty answer rather than leave its parent waiting.
      const reportKept = async () => {
        const task = await ctx.get<TaskRecord>(TASK);
        if (task && !task.reported) await reportIfSettled(ctx, task.handOff ?? { status: 'completed', text: '' });
      };
      if (notification.offered) {
        // The turn that ran when it came took it (control.ts): it is in that turn's stored history.
        const taken = (await ctx.get<string[]>(TAKEN)) ?? [];
        if (taken.includes(taskId)) {
          const rest = taken.filter((id) => id !== taskId);
          if (rest.length > 0) ctx.set(TAKEN, rest);
          else ctx.clear(TAKEN);
          await reportKept();
          return null;
        }
        // No turn took it (or none stored it): delivered here, so no later turn may take it.
        await withdrawResult(ctx, host.name, taskId);
      }
      // The turn this result wakes (or the next, for an agent that does not wake) fails with it at its first step.
      if (notification.escalation) ctx.set(ESCALATION, notification.escalation);
      // No turn of this agent runs while its exclusive `notify` does: the result wakes it, or waits for its next turn.
      if (notificationDelivery({ running: false, wakes: await host.wakes(ctx) }) === 'hold') {
        ctx.set(NOTES, [...((await ctx.get<UserMessage[]>(NOTES)) ?? []), message]);
        await reportKept();
        return null;
      }
      const turn = await host.turn(ctx, message);
      await reportIfSettled(ctx, turn.handOff);
      return turn.outcome;
    },
  };
  return { handlers, reportIfSettled };
}
