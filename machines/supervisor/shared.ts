import type { EventObject } from 'xstate';
import {
  type FailureClass,
  notificationMessage,
  type RestartOptions,
  type TaskSpec,
  type TaskStatus,
  type UserMessage,
} from '../../src/protocol/index.js';

/**
 * What the supervision machines share: actor ids, the facts they hand the runtime, and the texts of tasks that did
 * not finish by themselves.
 */

/** A subagent's actor id under its task (and a member's under its supervisor). */
export const childId = (agentId: string): string => `subagent.${agentId}`;
export const batchActorId = (batchId: string): string => `batch.${batchId}`;
/** A batch is also known to its actor system by this id, so that its tasks can report to it directly. */
export const batchSystemId = (batchId: string): string => `batch.${batchId}`;
/** A pool's id is its place in its parent (0 … POOL_SIZE − 1): a bounded set of ids, like task slots. */
export const poolActorId = (place: number): string => `pool.${place}`;
/**
 * A task actor's id is its slot in its pool (0 … POOL_SIZE − 1), not its task id: XState memoizes transitions per
 * event type for good, so `xstate.done.actor.task.<taskId>` would add an entry for every task ever run, and
 * children objects keyed by ever-new ids never share a shape. The task id is in the task actor's context.
 */
export const taskActorId = (slot: number): string => `task.${slot}`;

/**
 * At most this many children share a pool (the actor that parents task actors, or pools one level down). Every
 * spawn and every stop copies its parent's `children` (XState's `resolveSpawn`), so a batch of thousands spawns
 * through pools instead of holding them all; see docs/architecture/xstate.md.
 */
export const POOL_SIZE = 16;
/**
 * The depth of the pools a batch spawns: pools of depth 1 parent pools of depth 0, which parent task actors. A
 * batch of thousands of tasks then holds a few pools, not hundreds: a child's end is a stop, and every stop copies
 * its parent's `children`.
 */
export const POOL_DEPTH = 1;
/** Tasks per pool the batch spawns. */
export const POOL_TASKS = POOL_SIZE ** (POOL_DEPTH + 1);

/** The pool of the batch that runs the task at `index`. */
export const poolOf = (index: number): number => Math.floor(index / POOL_TASKS);

/** The pool of depth 0 (counted across the batch) whose task actor runs the task at `index`. */
export const leafPoolOf = (index: number): number => Math.floor(index / POOL_SIZE);

/**
 * A pool of depth 0 is also known to its actor system by this id (its place counted across the batch, never
 * reused within it), so that its batch can start tasks in it directly once it exists: relayed through the pool
 * above it, every task's START cost one more event and microstep.
 */
export const leafPoolSystemId = (batchId: string, leaf: number): string => `${batchSystemId(batchId)}.pool.${leaf}`;

/** Actions made of other actions (declared up front, so that XState types what they enqueue). */
export type Composite<Name extends string> = Record<Name, undefined>;

/**
 * The index a child's done/error event names: pool and task actors are ids `<kind>.<n>`, so the number after the
 * last dot says which child ended.
 */
export const indexOfChildEvent = (event: { type: string }): number =>
  Number(event.type.slice(event.type.lastIndexOf('.') + 1));

/** How a child's turn ended, as the runtime saw it. */
export type ChildOutcome = 'completed' | 'failed' | 'interrupted';

/** Why a task is being ended from outside, and the text it is reported with. */
export interface Cancellation {
  status: 'cancelled' | 'interrupted';
  text: string;
}

/**
 * Where a task is settled: every settle goes to the runtime with these facts (one place, see
 * docs/architecture/journal.md, "Trees").
 */
export interface SettleParams {
  taskId: string;
  agentId: string;
  batchId: string;
  background: boolean;
  status: Exclude<TaskStatus, 'running'>;
  text: string;
  /** Its agent is still alive (idle) and can be resumed without a rebuild, until its task actor is released. */
  kept: boolean;
}

/** What the runtime hears before a task's agent is spawned (or spawned again after a restart). */
export interface PrepareParams {
  task: TaskSpec;
  batchId: string;
  background: boolean;
  attempt: number;
  /** A resume: the agent goes on from the history it has (a restart starts from the task's prompt afresh). */
  resume?: boolean;
  /** The sibling (task id) whose failure restarted it, under a strategy that restarts siblings. */
  cause?: string;
}

/** Events the supervision machines send a child agent (a subset of the agent machine's commands). */
export type ChildCommand =
  | { type: 'PROMPT'; input: { inputId: string; messages: UserMessage[]; expectsOutput: boolean } }
  | { type: 'INTERRUPT' };

/** A background result on its way to the owner (the runtime's outbox joins those due at once into one NOTIFY). */
export type OwnerNotify = { message: UserMessage; inputId: string };

export function promptOf(task: TaskSpec): ChildCommand {
  return {
    type: 'PROMPT',
    input: {
      inputId: task.taskId,
      messages: [{ role: 'user', source: 'prompt', content: [{ type: 'text', text: task.prompt }] }],
      expectsOutput: task.expectsOutput,
    },
  };
}

export function notifyOf(params: SettleParams): OwnerNotify {
  return {
    message: notificationMessage(params.taskId, params.agentId, params.status, params.text),
    inputId: `notify.${params.taskId}`,
  };
}

/**
 * The settings every task of a tree shares, passed down from the supervisor through batch and pools; its restart
 * options as the tree was given them (`restartDecision` fills in the defaults).
 */
export interface TaskSettings extends RestartOptions {
  ownerId: string;
  /** Background results go to the owner as NOTIFY (false under a root supervisor). */
  notifyOwner: boolean;
}

/** An event for a child actor, by id: the params of the machines' `tell` action. */
export interface Tell {
  to: string;
  event: EventObject & Record<string, unknown>;
}

/**
 * Each machine's `tell` sends `params.event` to the child `params.to`. Composite actions enqueue it by name (`enqueue({ type: 'tell', …})`)
 * and update context through each machine's named `record` assign, never with `enqueue.sendTo` / `enqueue.assign`:
 * those create the action while the transition is resolved, and when that transition runs inside another actor's
 * custom action (a runtime effect that sends to this actor synchronously, e.g. a release) XState's development build
 * warns "Custom actions should not call assign() directly", rightly: it cannot tell the two apart.
 */

/**
 * A batch's verdict on a task, sent by the runtime (`tellTask`): start again after `delayMs` from its prompt
 * (`RESTART`, `cause` naming the sibling whose failure restarts it) or with the history it has (`RESUME`), or settle
 * with its failure (`GIVE_UP`).
 */
export type TaskVerdict =
  | { type: 'RESTART'; delayMs: number; cause?: string }
  | { type: 'RESUME'; delayMs: number }
  | { type: 'GIVE_UP' };

/** A failed run of a task, as its batch hears it (the runtime stamps `at`, when, on the way). */
export interface TaskFailed {
  type: 'TASK.FAILED';
  taskId: string;
  attempt: number;
  failure: FailureClass;
  text: string;
  at: number;
}
