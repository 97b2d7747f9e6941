import * as restate from '@restatedev/restate-sdk';
import type { AccountView } from '../host/index.js';
import {
  type FailureClass,
  type JoinPolicy,
  type RestartOptions,
  type StrategyOptions,
  taskEnd,
} from '../host/index.js';
import type { BudgetLimits } from '../index.js';
import { controlName } from './control.js';

/**
 * What a parent (or a background batch's object) and a child's `run` handler say to each other, and what a book
 * starts a background batch with: the messages' shapes, shared by swarm.ts, batches.ts, task-book.ts and the agent
 * object.
 */

/** One task of a batch, as the parent names it (ids derived from the turn and the tool call, never random). */
export interface HostedTask {
  taskId: string;
  agentId: string;
  prompt: string;
  /** A new child's profiles, its parent's first (see `RunRequest`); a resumed child keeps its own. */
  profiles?: string[];
}

/** What a child's `run` handler answers: its hand-off, the status and text its parent's tool result reports. */
export interface HandOff {
  status: 'completed' | 'failed' | 'interrupted' | 'cancelled';
  text: string;
  /** Why the task's turn failed, when it did (a spent budget or a guardrail ends it without `failed`). */
  failure?: FailureClass;
  /**
   * What the task's turn and its subtree spent, when a budget covered it (its account's `spent`): the parent charges
   * it to its own turn's account, as an embedded child's account charges its parent's.
   */
  spent?: Spent;
}

/** Tokens and dollars an account counted. */
export interface Spent {
  tokens: number;
  costUsd: number;
}

/** Adds what two accounts spent (undefined: none). */
export const addSpent = (a: Spent | undefined, b: Spent | undefined): Spent | undefined =>
  a && b ? { tokens: a.tokens + b.tokens, costUsd: a.costUsd + b.costUsd } : (a ?? b);

/** The hand-off of a task Restate cancelled (a join's loser, `task_cancel`, an operator). */
export const CANCELLED: HandOff = taskEnd('cancelled');

/**
 * What a child's `run` handler answers: its hand-off, or `waiting` when its turn has ended with background children
 * of its own still open. Embedded, such a task is not finished until they have reported and the turns they woke
 * have ended; hosted, those turns are later invocations of the child (its `notify`), which cannot run while `run`
 * holds the key, so the last of them hands off through the awakeable named in the request (`handOffTo`).
 */
export type RunAnswer = HandOff | { status: 'waiting' };
export const WAITING: RunAnswer = { status: 'waiting' };

/**
 * What a parent's turn lets its child spend: its accounts (see `RunRequest.budget`), or, in a request written
 * before accounts were sent, what the parent had left, as the child's own turn budget.
 */
export type HostedBudget = AccountView[] | BudgetLimits;

/** What the parent sends a child's `run` handler. */
export interface RunRequest {
  parentId: string;
  taskId: string;
  prompt: string;
  /** A restart: the child starts again from the prompt with a fresh history (the failed attempt's is dropped). */
  fresh?: boolean;
  /**
   * The subagent profiles a new child is built from, root's child first: its config is `agent(id)` with each
   * applied in turn: a child's settings are its parent's with its profile applied.
   */
  profiles?: string[];
  /** The tree's root: its `maxAgents` counter (a root's id may contain `/`, so a key does not tell it). */
  root?: string;
  /** The awakeable the child resolves with its hand-off when it answers `waiting`. */
  handOffTo?: string;
  /**
   * The parent's accounts with limits, nearest first, as its turn had them (`HostedAgent.accounts`): the child's
   * turn opens under them, as an embedded child's account opens under its parent's. Absent when no budget covers
   * the parent.
   */
  budget?: HostedBudget;
}

/** A failed task's batch decides by `failureVerdict`; a restart or resume waits on a durable timer. */
export interface BatchOptions extends RestartOptions {
  /** Tasks running at once; the rest wait for a free place. */
  concurrency: number;
  /** When the batch is over before all its tasks are (default: all of them). */
  join?: JoinPolicy;
  /** The batch's strategy, intensity and per-class actions (default: oneForOne, none, the class defaults). */
  supervision?: StrategyOptions;
}

/** One background batch of a step. */
export interface BackgroundBatch {
  /** In start order (the order `restForOne` reads). */
  tasks: HostedTask[];
  /** Its concurrency, join, restarts and strategy. */
  options: BatchOptions;
}

/**
 * What the owner's task book starts background batches with (batches.ts runs them): the batches one step of the
 * owner's turn started, supervised together by one invocation, each by its own options.
 */
export interface BatchStart {
  /** The agent whose batches they are: its book hears each task's end. */
  ownerId: string;
  /** The batches, each supervised by its own options. */
  batches: BackgroundBatch[];
  /** The tree's root (see `RunRequest.root`). */
  root: string;
  /** The owner's accounts when it started them (see `RunRequest.budget`). */
  budget?: HostedBudget;
}

/** The batch object's name for an agent object's name. */
export const batchesName = (agentObjectName: string) => `${agentObjectName}-batches`;

/** The key of a batch's object: its owner's, and its first task's id (unique per owner, stable across replays). */
export const batchKey = (ownerId: string, tasks: readonly HostedTask[]) => `${ownerId}/${tasks[0]?.taskId ?? ''}`;

/** Every task of the batches, in order. */
export const tasksOfBatches = (batches: readonly BackgroundBatch[]) => batches.flatMap((batch) => batch.tasks);

/** A task's child at work: the call to its `run`, and where its hand-off comes if the call answers `waiting`. */
export interface StartedTask {
  call: restate.InvocationPromise<RunAnswer>;
  handOff: restate.RestatePromise<HandOff>;
  /**
   * Cancels the task once its call has answered `waiting` (no invocation of the child may be running then, or
   * another than `run`): the child's running turn, or the next one, ends cancelled and hands off `cancelled`.
   */
  cancelWaiting(): void;
}

/** Whose children a batch starts: the parent, the tree's root, and what each attempt may spend when it starts. */
export interface ChildRuns {
  parentId: string;
  root: string;
  /** The accounts an attempt opens under (read when it starts: a foreground one, what its parent's turn has left). */
  budget(): HostedBudget | undefined;
}

/**
 * Starts one attempt of a task's child, for a batch in a parent's turn or in a background batch's object: a call
 * to the child's `run` (journaled), with an awakeable of the attempt's own for a hand-off that comes after the call
 * has answered `waiting`, withdrawn by a `cancel` through the child's control object.
 */
export function startChildRun(ctx: restate.ObjectContext, agentObjectName: string, runs: ChildRuns) {
  return (task: HostedTask, fresh: boolean): StartedTask => {
    const handOff = ctx.awakeable<HandOff>();
    const budget = runs.budget();
    const call = ctx.genericCall<RunRequest, RunAnswer>({
      service: agentObjectName,
      method: 'run',
      key: task.agentId,
      parameter: {
        parentId: runs.parentId,
        taskId: task.taskId,
        prompt: task.prompt,
        root: runs.root,
        ...(task.profiles ? { profiles: task.profiles } : {}),
        ...(fresh ? { fresh } : {}),
        ...(budget ? { budget } : {}),
        handOffTo: handOff.id,
      },
      inputSerde: restate.serde.json,
      outputSerde: restate.serde.json,
    });
    const cancelWaiting = () =>
      ctx.genericSend({
        service: controlName(agentObjectName),
        method: 'cancel',
        key: task.agentId,
        parameter: { task: handOff.id },
        inputSerde: restate.serde.json,
      });
    return { call, handOff: handOff.promise, cancelWaiting };
  };
}
