import type { ToolResultEntry, WorkerReply } from '../../../machines/agent/index.js';
import type { ToolCallPart } from '../../protocol/index.js';
import type { FinishedOutput } from '../../tools/index.js';
import type { AgentEnv } from '../env/env.js';
import type { ToolBatch } from '../env/in-flight.js';
import { onMicrotask } from '../env/microtask.js';

/** A call the tool worker finished (ran, replayed from a journal, or a twin of one), waiting to be delivered. */
interface Finished {
  batch: number;
  call: ToolCallPart;
  outcome: FinishedOutput;
  startedAt: number;
  toolBatch: ToolBatch;
}

/**
 * Delivers finished calls to the machine: those that finish together go as one TOOL_RESULTS (each machine event
 * costs a snapshot and its garbage). The result that leaves no call running is flushed on a microtask, so a lone
 * result or a batch's last is never held back by a macrotask; one whose siblings still run waits at most for the
 * end of the event-loop phase (the machine cannot leave `executing` before the siblings end anyway). The
 * `tool_execution_end` events of a flush are published right before its TOOL_RESULTS, in the same synchronous
 * block, so an interrupt can never close a call whose end an observer has already seen: a call whose batch was
 * closed before the flush publishes nothing and is not sent.
 */
export class ToolResultOutbox {
  /** Calls of this worker still running (their results may come in a later timer callback of this phase). */
  running = 0;
  private finished: Finished[] = [];
  private scheduled = false;
  private immediate?: ReturnType<typeof setImmediate>;
  /**
   * `flush` bound, not an arrow: an arrow's optimised code lives only while an outbox does, so a collection with no
   * agent alive would drop it and every next agent compile it again; the prototype's method keeps its code.
   */
  private readonly flushNow = this.flush.bind(this);

  constructor(
    private readonly env: AgentEnv,
    private readonly sendBack: (reply: WorkerReply) => void,
  ) {}

  /** Answers the machine, unless the agent has stopped. */
  reply(message: WorkerReply): void {
    if (!this.env.stopped) this.sendBack(message);
  }

  add(finished: Finished): void {
    this.finished.push(finished);
    if (this.scheduled) return;
    // Node drains microtasks between timer callbacks, so results of calls that wait on separate timers can only be
    // gathered after the timers phase: a result that others of the batch may soon join waits for setImmediate;
    // the one that leaves nothing running goes on a microtask, taking everything gathered with it.
    if (this.running > 0) {
      this.immediate ??= setImmediate(this.flushNow);
      return;
    }
    this.scheduled = true;
    onMicrotask(this.flushNow);
  }

  private flush(): void {
    this.scheduled = false;
    if (this.immediate !== undefined) {
      clearImmediate(this.immediate);
      this.immediate = undefined;
    }
    const finished = this.finished;
    this.finished = [];
    const { env } = this;
    let batch = -1;
    let results: ToolResultEntry[] = [];
    for (const { batch: its, call, outcome, startedAt, toolBatch } of finished) {
      if (toolBatch.aborted) continue;
      // Batches follow each other, so a flush holds one; a stale one would still go alone, in order.
      if (its !== batch) {
        if (results.length > 0) this.reply({ type: 'TOOL_RESULTS', batch, results });
        batch = its;
        results = [];
      }
      if (env.bus.wants('tool_execution_end')) {
        env.emit({
          type: 'tool_execution_end',
          toolCallId: call.id,
          toolName: call.name,
          result: outcome.result,
          durationMs: performance.now() - startedAt,
        });
      }
      const entry: ToolResultEntry = { toolCallId: call.id, result: outcome.result, terminate: outcome.terminate };
      if (outcome.halt) entry.halt = true;
      results.push(entry);
    }
    if (results.length > 0) this.reply({ type: 'TOOL_RESULTS', batch, results });
  }
}
