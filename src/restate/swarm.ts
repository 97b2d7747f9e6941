import * as restate from '@restatedev/restate-sdk';
import { type JoinPolicy, joinDecided, type RestartOptions, restartDecision, taskEnd } from '../host/index.js';
import type { BudgetLimits, TaskResult } from '../index.js';
import type { JournalScope } from './journal.js';

/**
 * Foreground batches on Restate: each task a call to a child object's `run` handler, the join decided here, in the
 * parent's invocation, by the order in which the calls completed. Restate journals that order (the combinators'
 * completions), so a replay after a crash decides the same way, exactly once, and re-issues nothing it had issued.
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
   * What the parent's turn has left (tokens and dollars, over its chain of accounts): the child's turn may spend no
   * more, as an embedded child's account opens under its parent's. Absent when no budget covers the parent.
   */
  budget?: BudgetLimits;
}

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

/** A failed task restarts as `restartDecision` says, after a durable timer. */
export interface BatchOptions extends RestartOptions {
  /** Tasks running at once; the rest wait for a free place. */
  concurrency: number;
  join?: JoinPolicy;
}

/** A batch being run: its tasks, its policy, and how far it is. */
export interface Batch {
  tasks: readonly HostedTask[];
  options: BatchOptions;
  /** Told the results, in task order, once the batch is over. */
  done(results: TaskResult[]): void;
}

interface BatchState extends Batch {
  results: (TaskResult | undefined)[];
  /** Tasks whose `maxAgents` slot was given back (once each, when it settled; the rest when the batch ends). */
  released: number;
  next: number;
  ended: number;
  completed: number;
  busy: number;
  decided: boolean;
}

/**
 * What one busy place waits for: a child's call, then its hand-off if the call answered `waiting`; or the backoff
 * before its restart.
 */
interface Place {
  batch: BatchState;
  index: number;
  attempt: number;
  started?: StartedTask;
  /** The call answered `waiting`: the place now waits for the child's awakeable. */
  waiting?: boolean;
  settled: restate.RestatePromise<{ place: Place; answer?: RunAnswer }>;
}

/**
 * Runs batches together (the foreground batches one step's calls started: several `agent` calls run at once) and tells each its results, in task order, as soon as it is over. Each batch keeps its own cap: at most
 * `concurrency` of its places are busy (a task waiting for its restart keeps its place). When a batch's
 * join policy is decided, its calls still running are cancelled (Restate cancels the child's invocation: its turn is
 * interrupted, its tools see the abort) and still heard, so a loser that finished first keeps its true status; the
 * others, and its tasks never started, are reported cancelled. Must run as one effect of the invocation's queue
 * (`serially`): it awaits one combinator at a time, and the order Restate journals for them is what a replay
 * decides by. `release`, with `maxAgents`, gives each task's slot back once it has settled; `charge` is told what
 * each attempt spent (its hand-off's `spent`) as it is heard, before anything is decided on it.
 */
export async function runBatches(
  scope: JournalScope,
  call: (task: HostedTask, fresh: boolean) => StartedTask,
  batches: readonly Batch[],
  release?: (n: number) => void,
  charge?: (spent: Spent) => void,
): Promise<void> {
  const { ctx } = scope;
  const releaseRest = (batch: BatchState) => {
    const rest = batch.tasks.length - batch.released;
    batch.released = batch.tasks.length;
    if (rest > 0) release?.(rest);
  };
  const places = new Set<Place>();
  const open = new Set<BatchState>();
  const start = (batch: BatchState, index: number, attempt: number) => {
    const started = call(batch.tasks[index] as HostedTask, attempt > 0);
    const place: Place = { batch, index, attempt, started, settled: undefined as never };
    place.settled = started.call.map((answer, failure) => ({ place, answer: answer ?? failedCall(failure) }));
    places.add(place);
  };
  const fill = (batch: BatchState) => {
    for (; !batch.decided && batch.busy < batch.options.concurrency && batch.next < batch.tasks.length; batch.busy++) {
      start(batch, batch.next++, 0);
    }
  };
  const finishIfOver = (batch: BatchState) => {
    if (batch.busy > 0 || (!batch.decided && batch.next < batch.tasks.length)) return;
    open.delete(batch);
    releaseRest(batch);
    batch.done(
      batch.tasks.map(
        (task, index) => batch.results[index] ?? { taskId: task.taskId, agentId: task.agentId, ...taskEnd('joined') },
      ),
    );
  };
  for (const given of batches) {
    const batch: BatchState = {
      ...given,
      results: given.tasks.map(() => undefined),
      released: 0,
      next: 0,
      ended: 0,
      completed: 0,
      busy: 0,
      decided: false,
    };
    open.add(batch);
    fill(batch);
    finishIfOver(batch);
  }
  while (places.size > 0) {
    let next: { place: Place; answer?: RunAnswer } | undefined;
    try {
      next = await scope.wait(restate.RestatePromise.race([...places].map((busy) => busy.settled)), () => undefined);
    } catch (error) {
      // The parent was cancelled: Restate cancels the calls it waits on, not a child that hands off through an
      // awakeable, which is told here. Nobody will hear their ends, so the batches give their slots back now, as
      // on an interrupt (a foreground task's slot is its parent's to release).
      if (error instanceof restate.CancelledError) {
        for (const place of places) if (place.waiting) place.started?.cancelWaiting();
        for (const batch of open) releaseRest(batch);
      }
      throw error;
    }
    if (!next) {
      // The parent's turn was interrupted: its foreground children are cancelled (their turns interrupted);
      // what the batches would answer goes nowhere (the machine closed their calls).
      for (const place of places) await stop(ctx, place);
      for (const batch of open) {
        releaseRest(batch);
        batch.done(batch.tasks.map((task) => ({ ...ids(task), ...taskEnd('interrupted') })));
      }
      return;
    }
    const { place, answer } = next;
    if (answer?.status === 'waiting' && place.started) {
      // The child's turn has ended with background children of its own open: its task goes on until they have
      // reported, and it hands off through the awakeable. A batch decided meanwhile cancels it there.
      const { started } = place;
      place.waiting = true;
      place.settled = started.handOff.map((handOff, failure) => ({ place, answer: handOff ?? failedCall(failure) }));
      if (place.batch.decided) started.cancelWaiting();
      continue;
    }
    const handOff = answer as HandOff | undefined;
    if (handOff?.spent) charge?.(handOff.spent);
    places.delete(place);
    const { batch, index } = place;
    const task = batch.tasks[index] as HostedTask;
    const restart = handOff?.status === 'failed' ? restartDecision(place.attempt, batch.options) : undefined;
    if (batch.decided) {
      // A loser heard after its cancellation: it keeps a completion that came first; else it stays cancelled.
      if (handOff?.status === 'completed')
        batch.results[index] = { ...ids(task), status: 'completed', text: handOff.text };
    } else if (!handOff) {
      start(batch, index, place.attempt + 1); // the backoff is over
      continue;
    } else if (restart?.restart) {
      const backoff: Place = { batch, index, attempt: place.attempt, settled: undefined as never };
      backoff.settled = ctx.sleep(restart.delayMs).map(() => ({ place: backoff }));
      places.add(backoff);
      continue;
    } else {
      batch.results[index] = { ...ids(task), status: handOff.status, text: handOff.text };
      batch.released++;
      release?.(1);
      batch.ended++;
      if (handOff.status === 'completed') batch.completed++;
      if (joinDecided(batch.options.join, batch.tasks.length, batch.completed, batch.ended)) {
        batch.decided = true;
        await cancelRunning(ctx, places, batch);
      }
    }
    batch.busy--;
    fill(batch);
    finishIfOver(batch);
  }
}

function ids(task: HostedTask): { taskId: string; agentId: string } {
  return { taskId: task.taskId, agentId: task.agentId };
}

/** A decided batch's running calls are cancelled (and still heard); its restarts waiting on a backoff are dropped. */
async function cancelRunning(ctx: restate.ObjectContext, places: Set<Place>, batch: BatchState): Promise<void> {
  for (const place of [...places]) {
    if (place.batch !== batch) continue;
    if (place.started) await stop(ctx, place);
    else {
      places.delete(place);
      batch.busy--;
    }
  }
}

/**
 * Cancels a busy place's child: its `run` through Restate while the call runs, else (it answered `waiting`) through
 * its control object, which reaches whichever of its turns runs now or next.
 */
async function stop(ctx: restate.ObjectContext, place: Place): Promise<void> {
  if (!place.started) return;
  if (place.waiting) place.started.cancelWaiting();
  else ctx.invocation(await place.started.call.invocationId).cancel();
}

/** A child call that failed as an invocation (its handler threw, or it was cancelled before it could answer). */
function failedCall(failure: restate.TerminalError | undefined): HandOff {
  if (failure instanceof restate.CancelledError || failure?.code === 409) return CANCELLED;
  return { status: 'failed', text: `The subagent failed: ${failure?.message ?? 'unknown error'}` };
}
