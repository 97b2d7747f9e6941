import * as restate from '@restatedev/restate-sdk';
// The text a task cancelled by its batch's join is reported with: the embedded supervisor's own, so a swarm's tool
// result reads the same hosted or embedded (a constant of a pure module, not the runtime).
import { JOINED_TEXT } from '../../machines/supervisor/index.js';
import { type JoinPolicy, joinDecided, type RunResult, type TaskResult } from '../index.js';

/**
 * A foreground batch on Restate: each task a call to a child object's `run` handler, the join decided here, in the
 * parent's invocation, by the order in which the calls completed. Restate journals that order (the combinators'
 * completions), so a replay after a crash decides the same way, exactly once, and re-issues nothing it had issued.
 */

/** One task of a batch, as the parent names it (ids derived from the turn and the tool call, never random). */
export interface HostedTask {
  taskId: string;
  agentId: string;
  prompt: string;
}

/** What a child's `run` handler answers: its hand-off, as the embedded tree makes it. */
export interface HandOff {
  status: 'completed' | 'failed' | 'interrupted';
  text: string;
}

/** What the parent sends a child's `run` handler. */
export interface RunRequest {
  parentId: string;
  taskId: string;
  prompt: string;
  /** A restart: the child starts again from the prompt with a fresh history (the failed attempt's is dropped). */
  fresh?: boolean;
}

export interface BatchOptions {
  /** Tasks running at once; the rest wait for a free place. */
  concurrency: number;
  join?: JoinPolicy;
  /** Restarts of a failed task, each after a durable timer of `restartDelayMs · 2^(n-1)`. */
  maxRestarts: number;
  restartDelayMs: number;
}

/** A turn's end as a parent hears it (the embedded tree's `handOff`, from a hosted turn's result). */
export function handOffOf(result: RunResult): HandOff {
  if (result.stopReason === 'error') {
    return { status: 'failed', text: `The subagent failed: ${result.error?.message ?? 'unknown error'}` };
  }
  if (result.stopReason === 'interrupted') {
    return { status: 'interrupted', text: result.text || 'The subagent was interrupted.' };
  }
  if (result.stopReason === 'budget_exhausted') {
    return { status: 'interrupted', text: `The subagent stopped: ${result.error?.message ?? 'budget spent'}` };
  }
  if (result.output !== undefined) return { status: 'completed', text: JSON.stringify(result.output) };
  return { status: 'completed', text: result.text };
}

/** What one place of the batch is waiting for: a child's call, or the backoff before its restart. */
interface Place {
  index: number;
  attempt: number;
  call?: restate.InvocationPromise<HandOff>;
  settled: restate.RestatePromise<{ index: number; handOff?: HandOff }>;
}

/**
 * Runs a batch and returns every task's result in task order. At most `concurrency` places are busy (a task
 * waiting for its restart keeps its place, as embedded); when the join policy is decided, the calls still running
 * are cancelled (Restate cancels the child's invocation: its turn is interrupted, its tools see the abort) and
 * awaited, so a loser that finished first keeps its true status; the rest are reported cancelled. Must run as one
 * effect of the invocation's queue (`serially`): it awaits one combinator at a time.
 */
export async function runBatch(
  ctx: restate.ObjectContext,
  call: (task: HostedTask, fresh: boolean) => restate.InvocationPromise<HandOff>,
  tasks: readonly HostedTask[],
  options: BatchOptions,
): Promise<TaskResult[]> {
  const results: (TaskResult | undefined)[] = tasks.map(() => undefined);
  const busy = new Map<number, Place>();
  let next = 0;
  let ended = 0;
  let completed = 0;
  const start = (index: number, attempt: number) => {
    const task = tasks[index] as HostedTask;
    const running = call(task, attempt > 0);
    busy.set(index, {
      index,
      attempt,
      call: running,
      settled: running.map((handOff, failure) => ({ index, handOff: handOff ?? failedCall(failure) })),
    });
  };
  const fill = () => {
    while (busy.size < options.concurrency && next < tasks.length) start(next++, 0);
  };
  fill();
  while (busy.size > 0 && !joinDecided(options.join, tasks.length, completed, ended)) {
    const { index, handOff } = await restate.RestatePromise.race([...busy.values()].map((place) => place.settled));
    const place = busy.get(index) as Place;
    if (!handOff) {
      start(index, place.attempt + 1); // the backoff is over
      continue;
    }
    if (handOff.status === 'failed' && place.attempt < options.maxRestarts) {
      const delay = options.restartDelayMs * 2 ** place.attempt;
      busy.set(index, { index, attempt: place.attempt, settled: ctx.sleep(delay).map(() => ({ index })) });
      continue;
    }
    busy.delete(index);
    const task = tasks[index] as HostedTask;
    results[index] = { taskId: task.taskId, agentId: task.agentId, status: handOff.status, text: handOff.text };
    ended++;
    if (handOff.status === 'completed') completed++;
    fill();
  }
  // Decided with tasks still open: cancel the running ones, then hear how each really ended.
  const losers = [...busy.values()].filter((place) => place.call !== undefined);
  for (const place of losers) {
    ctx.invocation(await (place.call as restate.InvocationPromise<HandOff>).invocationId).cancel();
  }
  if (losers.length > 0) {
    const settled = await restate.RestatePromise.all(losers.map((place) => place.settled));
    for (const { index, handOff } of settled) {
      const task = tasks[index] as HostedTask;
      if (handOff?.status === 'completed') {
        results[index] = { taskId: task.taskId, agentId: task.agentId, status: 'completed', text: handOff.text };
      }
    }
  }
  return tasks.map(
    (task, index) =>
      results[index] ?? { taskId: task.taskId, agentId: task.agentId, status: 'cancelled', text: JOINED_TEXT },
  );
}

/** A child call that failed as an invocation (its handler threw, or it was cancelled before it could answer). */
function failedCall(failure: restate.TerminalError | undefined): HandOff {
  if (failure instanceof restate.CancelledError || failure?.code === 409) {
    return { status: 'interrupted', text: 'The subagent was cancelled.' };
  }
  return { status: 'failed', text: `The subagent failed: ${failure?.message ?? 'unknown error'}` };
}
