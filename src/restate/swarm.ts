import * as restate from '@restatedev/restate-sdk';
import {
  type EscalatedFailure,
  escalatedEnd,
  failureVerdict,
  joinDecided,
  restartsWithin,
  type TaskEnd,
  taskEnd,
} from '../host/index.js';
import type { TaskResult } from '../index.js';
import {
  type BatchOptions,
  CANCELLED,
  type HandOff,
  type HostedTask,
  type RunAnswer,
  type Spent,
  type StartedTask,
} from './hand-off.js';
import type { JournalScope } from './journal.js';

/**
 * Batches on Restate: each task a call to a child object's `run` handler, the join and the restarts decided here (in
 * the parent's invocation for a foreground batch, in the batch's own object for a background one: batches.ts), by
 * the order in which the calls completed. Restate journals that order (the combinators'
 * completions), so a replay after a crash decides the same way, exactly once, and re-issues nothing it had issued.
 */

/** A batch being run: its tasks, its policy, and how far it is. */
export interface Batch {
  tasks: readonly HostedTask[];
  options: BatchOptions;
  /** Told the results, in task order, once the batch is over. */
  done(results: TaskResult[]): void;
  /** Told the failure the batch escalated, at once (its owner's turn ends with it at its next step). */
  escalate?(failure: EscalatedFailure): void;
  /** Told each task's result once it is final (a background batch reports each as it settles). */
  settled?(index: number, result: TaskResult): void;
  /** Per task, resolved when it is cancelled from outside (`task_cancel` of a background task): it settles so. */
  cancels?: readonly restate.RestatePromise<unknown>[];
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
  /** What the tasks left settle with once the batch is decided: its join met, or a failure it escalated. */
  ending: TaskEnd;
  /** Each started task's live place (its running call or its backoff), by index. */
  live: (Place | undefined)[];
  /** When the batch restarted or resumed a task, within its intensity window: replayed from the journal. */
  restarts: number[];
  /** Tasks cancelled from outside: their runs end cancelled, whatever they answer. */
  cancelled: Set<number>;
}

/** A task of a batch cancelled from outside (`Batch.cancels`). */
interface Cancel {
  batch: BatchState;
  index: number;
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
  /** A backoff before a resume: the task is asked again with its history, not afresh. */
  resume?: boolean;
  /** A run a sibling's restart cancelled: heard (and charged) when it ends, and nothing more. */
  stale?: boolean;
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
 * each attempt spent (its hand-off's `spent`) and whose it was as it is heard, before anything is decided on it.
 */
export async function runBatches(
  scope: JournalScope,
  call: (task: HostedTask, fresh: boolean) => StartedTask,
  batches: readonly Batch[],
  release?: (n: number) => void,
  charge?: (spent: Spent, task: HostedTask) => void,
): Promise<void> {
  const { ctx } = scope;
  const releaseRest = (batch: BatchState) => {
    const rest = batch.tasks.length - batch.released;
    batch.released = batch.tasks.length;
    if (rest > 0) release?.(rest);
  };
  const places = new Set<Place>();
  const open = new Set<BatchState>();
  /** The outside cancels still awaited, by what each resolves with. */
  const cancels = new Map<restate.RestatePromise<Cancel>, Cancel>();
  /** A task cancelled from outside: a running call is cancelled (and heard), a backoff dropped, a queued one ended. */
  const cancelTask = async ({ batch, index }: Cancel) => {
    if (batch.decided || batch.results[index] !== undefined) return;
    batch.cancelled.add(index);
    const live = batch.live[index];
    if (live?.started) {
      await stop(ctx, live);
      return;
    }
    settle(batch, index, CANCELLED);
    if (!live) return; // not started yet: `fill` passes it by
    places.delete(live);
    await afterSettle(batch);
  };
  /** A place of the batch is free: the join may be decided, the next task starts, the batch may be over. */
  const afterSettle = async (batch: BatchState) => {
    if (!batch.decided && joinDecided(batch.options.join, batch.tasks.length, batch.completed, batch.ended)) {
      await decide(batch, taskEnd('joined'));
    }
    batch.busy--;
    fill(batch);
    finishIfOver(batch);
  };
  const start = (batch: BatchState, index: number, attempt: number, fresh = attempt > 0) => {
    const started = call(batch.tasks[index] as HostedTask, fresh);
    const place: Place = { batch, index, attempt, started, settled: undefined as never };
    place.settled = started.call.map((answer, failure) => ({ place, answer: answer ?? failedCall(failure) }));
    places.add(place);
    batch.live[index] = place;
  };
  /** Task `index` waits `delayMs`, then runs again as run `attempt + 1` (afresh, or resumed with its history). */
  const backoff = (batch: BatchState, index: number, attempt: number, delayMs: number, resume = false) => {
    const place: Place = { batch, index, attempt, ...(resume ? { resume } : {}), settled: undefined as never };
    place.settled = ctx.sleep(delayMs).map(() => ({ place }));
    places.add(place);
    batch.live[index] = place;
  };
  const fill = (batch: BatchState) => {
    while (!batch.decided && batch.busy < batch.options.concurrency && batch.next < batch.tasks.length) {
      const index = batch.next++;
      if (batch.results[index] !== undefined) continue; // cancelled before it started
      batch.busy++;
      start(batch, index, 0);
    }
  };
  const finishIfOver = (batch: BatchState) => {
    if (batch.busy > 0 || (!batch.decided && batch.next < batch.tasks.length)) return;
    open.delete(batch);
    releaseRest(batch);
    for (const [index, waits] of cancels) if (waits.batch === batch) cancels.delete(index);
    const results = batch.tasks.map((task, index) => {
      const result = batch.results[index];
      if (result) return result;
      const ended = { ...ids(task), ...batch.ending };
      batch.settled?.(index, ended);
      return ended;
    });
    batch.done(results);
  };
  /** The batch is decided (its join, or an escalation): nothing starts any more, and what runs is cancelled. */
  const decide = async (batch: BatchState, ending: TaskEnd) => {
    batch.decided = true;
    batch.ending = ending;
    await cancelRunning(ctx, places, batch);
  };
  /**
   * A failed run of a task: the batch's verdict (`failureVerdict`) on it. A restart cancels the siblings its
   * strategy names (their runs are stale) and starts each again after the failed run's backoff; an escalation
   * settles the failed task and ends the rest of the batch.
   */
  const failed = async (place: Place, handOff: HandOff) => {
    const { batch, index } = place;
    const intensity = batch.options.supervision?.intensity;
    // The intensity window is measured on when failures happen: a journaled clock, so a replay decides the same.
    const at = intensity ? await ctx.date.now() : 0;
    const failure = handOff.failure ?? 'tool';
    const book = { active: activeOf(batch), restarts: batch.restarts };
    const options = { ...batch.options, ...batch.options.supervision };
    const verdict = failureVerdict({ index, attempt: place.attempt, failure, at }, book, options);
    if (verdict.kind === 'stop' || verdict.kind === 'escalate') {
      const task = batch.tasks[index] as HostedTask;
      // Told before the failed task's result, which carries it to a background batch's owner.
      if (verdict.kind === 'escalate') batch.escalate?.({ ...ids(task), because: verdict.because, text: handOff.text });
      settle(batch, index, handOff);
      if (verdict.kind === 'escalate') await decide(batch, escalatedEnd(task.taskId, verdict.because));
      return false;
    }
    batch.restarts = [...restartsWithin(batch.restarts, at, intensity), at];
    if (verdict.kind === 'resume') {
      backoff(batch, index, place.attempt, verdict.delayMs, true);
      return true;
    }
    for (const sibling of verdict.indexes) {
      const live = sibling === index ? place : batch.live[sibling];
      if (!live) continue;
      if (live.started && live !== place) {
        live.stale = true;
        await stop(ctx, live);
      } else if (!live.started) places.delete(live);
      // A task waiting for its own restart counts one more attempt, as a run cancelled now would.
      backoff(batch, sibling, live.started ? live.attempt : live.attempt + 1, verdict.delayMs);
    }
    return true;
  };
  /** A task settled with this hand-off: its slot is given back, and the join counts move. */
  const settle = (batch: BatchState, index: number, handOff: HandOff) => {
    const result = { ...ids(batch.tasks[index] as HostedTask), status: handOff.status, text: handOff.text };
    batch.results[index] = result;
    batch.settled?.(index, result);
    batch.live[index] = undefined;
    batch.released++;
    release?.(1);
    batch.ended++;
    if (handOff.status === 'completed') batch.completed++;
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
      ending: taskEnd('joined'),
      live: given.tasks.map(() => undefined),
      restarts: [],
      cancelled: new Set(),
    };
    given.cancels?.forEach((cancel, index) => {
      const told: Cancel = { batch, index };
      cancels.set(
        cancel.map(() => told),
        told,
      );
    });
    open.add(batch);
    fill(batch);
    finishIfOver(batch);
  }
  while (places.size > 0) {
    let next: { place: Place; answer?: RunAnswer } | Cancel | undefined;
    try {
      const waits: restate.RestatePromise<{ place: Place; answer?: RunAnswer } | Cancel>[] = [
        ...[...places].map((busy) => busy.settled),
        ...cancels.keys(),
      ];
      next = await scope.wait(restate.RestatePromise.race(waits), () => undefined);
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
      for (const place of places) if (!place.stale) await stop(ctx, place);
      for (const batch of open) {
        releaseRest(batch);
        batch.done(batch.tasks.map((task) => ({ ...ids(task), ...taskEnd('interrupted') })));
      }
      return;
    }
    if (!('place' in next)) {
      for (const [wait, cancel] of cancels) if (cancel === next) cancels.delete(wait);
      await cancelTask(next);
      continue;
    }
    const { place, answer } = next;
    if (answer?.status === 'waiting' && place.started) {
      // The child's turn has ended with background children of its own open: its task goes on until they have
      // reported, and it hands off through the awakeable. A batch decided meanwhile cancels it there.
      const { started } = place;
      place.waiting = true;
      place.settled = started.handOff.map((handOff, failure) => ({ place, answer: handOff ?? failedCall(failure) }));
      if (place.batch.decided || place.stale || place.batch.cancelled.has(place.index)) started.cancelWaiting();
      continue;
    }
    const { batch, index } = place;
    let handOff = answer as HandOff | undefined;
    // Cancelled from outside: it ends so, whatever its run answered (a failure restarts nothing).
    if (handOff && batch.cancelled.has(index))
      handOff = { ...CANCELLED, ...(handOff.spent ? { spent: handOff.spent } : {}) };
    if (handOff?.spent) charge?.(handOff.spent, batch.tasks[index] as HostedTask);
    places.delete(place);
    if (place.stale) continue;
    if (batch.decided) {
      // A loser heard after its cancellation: it keeps a completion that came first; else it stays cancelled.
      if (handOff?.status === 'completed') {
        const result = { ...ids(batch.tasks[index] as HostedTask), status: 'completed' as const, text: handOff.text };
        batch.results[index] = result;
        batch.settled?.(index, result);
      }
    } else if (!handOff) {
      start(batch, index, place.attempt + 1, !place.resume); // the backoff is over
      continue;
    } else if (handOff.status === 'failed' || handOff.failure !== undefined) {
      if (await failed(place, handOff)) continue;
    } else settle(batch, index, handOff);
    await afterSettle(batch);
  }
}

/** Tasks started and not settled, by index, in start order: whom a strategy may restart with a failed one. */
function activeOf(batch: BatchState): number[] {
  const active: number[] = [];
  for (let index = 0; index < batch.next; index++) if (batch.results[index] === undefined) active.push(index);
  return active;
}

function ids(task: HostedTask): { taskId: string; agentId: string } {
  return { taskId: task.taskId, agentId: task.agentId };
}

/** A decided batch's running calls are cancelled (and still heard); its restarts waiting on a backoff are dropped. */
async function cancelRunning(ctx: restate.ObjectContext, places: Set<Place>, batch: BatchState): Promise<void> {
  for (const place of [...places]) {
    if (place.batch !== batch || place.stale) continue;
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
