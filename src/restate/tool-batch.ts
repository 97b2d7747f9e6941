import * as restate from '@restatedev/restate-sdk';
import { describeThrown } from '../host/index.js';
import type { AnyTool, ToolContext, ToolOutput } from '../index.js';
import { type JournalScope, serially, untilAborted } from './journal.js';

/** A tool's journaled outcome: what `execute` returned, or the message of what it threw. */
type ToolOutcome = { output: ToolOutput } | { thrown: string };

const INTERRUPTED_BY_RESTART =
  'This tool call was running when its worker stopped, and it was not run again (it may have had its effect): ' +
  'check before repeating it.';

/** One call waiting for its batch to be journaled. */
interface PendingCall {
  id: string;
  tool: AnyTool;
  args: unknown;
  toolCtx: ToolContext;
  resolve(outcome: ToolOutcome): void;
  reject(error: unknown): void;
}

/** The calls of a scope asked for in the current tick, not yet handed to its effect queue. */
const waiting = new WeakMap<JournalScope, PendingCall[]>();

/**
 * A tool whose calls are journaled by call id, and run together with the other calls of their batch.
 *
 * The runtime starts a batch's parallel calls in one synchronous block (the agent is given no cap of its own, see
 * `agentObject`), so the calls asked for in one tick are one batch here, and the same ones on every replay. A batch
 * is one effect of the invocation's queue, in groups of `concurrency` calls: first every call's `started` marker
 * (all awaited as one `RestatePromise.all`, so each is durable before any tool begins), then every call's run (the
 * tools run concurrently; one `RestatePromise.all` again, since the SDK takes one await at a time). Journal entries
 * follow call order in each phase, whatever order the tools finish in.
 *
 * The first group of a batch that is the next effect after the model answer that asked for it has no markers: that
 * answer's entry is durable before any of its calls begins, so it marks them all, and saves a round-trip and two
 * entries per call on the common path. A batch after an approval or a timer, and every later group, writes its own.
 *
 * Exactly once: a journaled result is read back, never produced again. A replay that finds every marker of a group
 * (or its answer, read back) but not a call's result knows the call may have begun in a process that died: it gets
 * an "interrupted by a restart" result (at most once). If a marker of the group (or its answer) was written only
 * now, no tool of the group had started (tools start once it is durable), so all of them run. A `safeToRepeat` tool
 * has no marker and runs again when its result is missing (at least once).
 *
 * A tool's `timeoutMs` is a durable timer: `ctx.sleep` raced with the call (taken from the runtime, whose
 * in-process timer a replay would start again from zero); the timer's win aborts the call's signal.
 */
export function journaledTool(scope: JournalScope, tool: AnyTool, concurrency: number): AnyTool {
  const { timeoutMs: _runtimeTimer, ...untimed } = tool;
  return {
    ...untimed,
    execute(args, toolCtx) {
      return new Promise<ToolOutcome>((resolve, reject) => {
        const call: PendingCall = { id: toolCtx.toolCallId, tool, args, toolCtx, resolve, reject };
        const calls = waiting.get(scope);
        if (calls) {
          calls.push(call);
          return;
        }
        waiting.set(scope, [call]);
        queueMicrotask(() => {
          const batch = waiting.get(scope) ?? [];
          waiting.delete(scope);
          const at = scope.queued + 1; // this batch's place in the effect queue
          serially(scope, async () => {
            // Right after the answer that asked for it (no approval, no timer between), the batch's first group
            // needs no markers of its own: the journaled answer stands for them.
            const answered = scope.answered?.at === at - 1 ? scope.answered : undefined;
            for (let i = 0; i < batch.length; i += concurrency) {
              await runGroup(scope, batch.slice(i, i + concurrency), i === 0 ? answered : undefined);
            }
          }).catch(() => {}); // each call was told its own outcome
        });
      }).then((outcome) => {
        if ('thrown' in outcome) throw new Error(outcome.thrown);
        return outcome.output;
      });
    },
  };
}

async function runGroup(
  scope: JournalScope,
  group: readonly PendingCall[],
  answered?: JournalScope['answered'],
): Promise<void> {
  // A call of a group queued behind one that an interrupt caught is closed already: it must not start.
  const calls = group.filter((call) => {
    if (!call.toolCtx.signal.aborted) return true;
    call.resolve({ thrown: describeThrown(call.toolCtx.signal.reason) });
    return false;
  });
  if (calls.length === 0) return;
  const started = new Set<PendingCall>();
  try {
    const marked = answered ? [] : calls.filter((call) => !call.tool.safeToRepeat);
    if (marked.length > 0) {
      // Raced with the turn's doorbell (control.ts), like every wait of the turn.
      await scope.wait(
        restate.RestatePromise.all(
          marked.map((call) =>
            scope.ctx.run(`tool ${call.id} started`, () => {
              started.add(call);
              return true;
            }),
          ),
        ),
      );
    }
  } catch (error) {
    for (const call of calls) call.reject(error);
    throw error;
  }
  const fresh = answered ? answered.fresh : started.size > 0;
  const runs = calls.map((call) => startCall(scope, call, fresh || call.tool.safeToRepeat === true));
  try {
    const outcomes = await scope.wait(restate.RestatePromise.all(runs.map((run) => run.outcome)));
    for (const [index, outcome] of outcomes.entries()) calls[index]?.resolve(outcome);
  } catch (error) {
    // Restate cancelled the invocation while the calls ran: their tools are told, as an interrupt would tell them.
    if (error instanceof restate.CancelledError) for (const run of runs) run.abort(error);
    for (const call of calls) call.reject(error);
    throw error;
  } finally {
    for (const run of runs) run.release();
  }
}

/** Issues one call's journaled run (and its timer), without awaiting it. */
function startCall(scope: JournalScope, call: PendingCall, mayRun: boolean) {
  const { id, tool, toolCtx } = call;
  // The call's own signal: the runtime's (an interrupt), or the durable timer's when it wins.
  const controller = new AbortController();
  const abort = () => controller.abort(toolCtx.signal.reason);
  if (toolCtx.signal.aborted) abort();
  else toolCtx.signal.addEventListener('abort', abort, { once: true });
  const callCtx = { toolCallId: id, agentId: toolCtx.agentId, update: toolCtx.update, signal: controller.signal };
  const run = scope.ctx.run<ToolOutcome>(`tool ${id}`, async () => {
    if (!mayRun) return { thrown: INTERRUPTED_BY_RESTART };
    // Interrupted while its marker was being journaled: closed already, never started.
    if (controller.signal.aborted) return { thrown: describeThrown(controller.signal.reason) };
    scope.ran.tools++;
    try {
      return { output: await untilAborted(tool.execute(call.args, callCtx), controller.signal) };
    } catch (error) {
      return { thrown: describeThrown(error) };
    }
  });
  const timeoutMs = tool.timeoutMs;
  const outcome =
    timeoutMs === undefined
      ? run
      : restate.RestatePromise.race([
          run,
          scope.ctx.sleep(timeoutMs).map((): ToolOutcome => {
            const thrown = `timed out after ${timeoutMs} ms and was cancelled`;
            controller.abort(new Error(thrown));
            return { thrown };
          }),
        ]);
  return {
    outcome,
    abort: (reason: unknown) => controller.abort(reason),
    release: () => toolCtx.signal.removeEventListener('abort', abort),
  };
}
