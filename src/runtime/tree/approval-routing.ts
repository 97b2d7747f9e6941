import type { AgentEventOf } from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';

export interface ApprovalTarget {
  agentId: string;
  toolCallId: string;
}

/**
 * Which agents of a tree wait for an answer to which tool call, so that `approve` / `deny` on the root reach them.
 * Tool call ids may repeat across agents: a bare id goes to the first agent that asked.
 */
export class ApprovalRouting {
  /** Tool calls announced as waiting for approval, by id: which agents asked. */
  private readonly awaiting = new Map<string, string[]>();
  private watchCloses?: () => void;

  constructor(bus: EventBus) {
    bus.on('approval_requested', (event) => {
      const waiting = this.awaiting.get(event.toolCallId);
      if (waiting) waiting.push(event.agentId);
      else this.awaiting.set(event.toolCallId, [event.agentId]);
      this.watchCloses ??= bus.on('message_end', (end) => this.closed(end));
    });
  }

  /** The agent an answer addressed to (agent, call) goes to; the call stops waiting. */
  take(target: ApprovalTarget): string {
    this.forget(target.toolCallId, target.agentId);
    return target.agentId;
  }

  /** The first agent waiting on a bare tool call id, if any; the call stops waiting. */
  takeById(toolCallId: string): string | undefined {
    const agentId = this.awaiting.get(toolCallId)?.[0];
    if (agentId !== undefined) this.forget(toolCallId, agentId);
    return agentId;
  }

  /**
   * A waiting call closes with exactly one result in a tool message, however it ends (approved and run, denied,
   * or closed by an interrupt, a cancel or a stop), so that is where its entry goes: otherwise entries of calls
   * never answered through the tree would pile up, and a later call reusing the id would be routed to the stale
   * agent. The tree listens to messages only while some call waits, so agents publish no message events for it
   * otherwise.
   */
  private closed(event: AgentEventOf<'message_end'>): void {
    if (event.discarded || event.message.role !== 'tool') return;
    for (const result of event.message.content) this.forget(result.toolCallId, event.agentId);
  }

  private forget(toolCallId: string, agentId: string): void {
    const waiting = this.awaiting.get(toolCallId);
    if (!waiting) return;
    const at = waiting.indexOf(agentId);
    if (at >= 0) waiting.splice(at, 1);
    if (waiting.length === 0) this.awaiting.delete(toolCallId);
    if (this.awaiting.size === 0 && this.watchCloses) {
      this.watchCloses();
      this.watchCloses = undefined;
    }
  }
}
