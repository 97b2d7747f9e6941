/**
 * Tool calls waiting for a person's approval, in the whole process: who may answer them (`takeApproval`, which the
 * agent's `approve` / `deny` and a timeout share, so a call is answered once), an agent's timeouts, and the warning
 * a process that exits with calls left unanswered prints. Apart from the agent's runtime (env/env.ts), which only says
 * when its calls start and stop waiting.
 */

/** What an approval timeout answers: the agent's own actor. */
export interface ApprovalRecipient {
  send(event: { type: 'DENY'; toolCallId: string; reason: string }): void;
}

// The calls each agent actor has waiting for approval, kept here rather than read from its snapshot: an answer
// given inside an `approval_requested` listener runs during the transition that asked, before the snapshot
// shows the call as waiting.
const awaiting = new WeakMap<ApprovalRecipient, Set<string>>();

/** Whether `toolCallId` waits on `actor` for an answer (nothing is taken). */
export function awaitsApproval(actor: ApprovalRecipient, toolCallId: string): boolean {
  return awaiting.get(actor)?.has(toolCallId) ?? false;
}

/** Takes the answer to a waiting call: true if `toolCallId` was waiting on `actor` (it no longer is). */
export function takeApproval(actor: ApprovalRecipient, toolCallId: string): boolean {
  return awaiting.get(actor)?.delete(toolCallId) ?? false;
}

interface Unanswered {
  self: ApprovalRecipient;
  agentId: string;
  toolCallId: string;
}

// Calls waiting for approval without a timeout, in the whole process. Nothing in them keeps Node alive (a person's
// answer comes from an event source the program owns), so a script that awaits only its prompt would exit
// (code 13 for a top-level await) without a word: `beforeExit` says which calls were left waiting.
const unanswered = new Set<Unanswered>();
let watching = false;

function watchUnanswered(): void {
  if (watching || typeof process === 'undefined') return;
  watching = true;
  process.on('beforeExit', () => {
    const waiting = [...unanswered].filter((entry) => awaiting.get(entry.self)?.has(entry.toolCallId));
    unanswered.clear();
    if (waiting.length === 0) return;
    const list = waiting.map((entry) => `${entry.toolCallId} (agent ${entry.agentId})`).join(', ');
    console.error(
      `[troupe] the process is exiting while ${waiting.length} tool call(s) wait for approval: ${list}. ` +
        'Answer them with agent.approve() / agent.deny(), or set approvalTimeoutMs.',
    );
  });
}

/**
 * One agent's calls waiting for approval: with a timeout a call is denied when the time is up (the timer keeps the
 * process alive, as the answer is still coming); without one it is listed for the warning a process that exits with
 * approvals unanswered prints.
 */
export class ApprovalWaits {
  private timers?: Map<string, ReturnType<typeof setTimeout>>;
  /** The actor whose calls wait (the agent's own). */
  private self?: ApprovalRecipient;

  constructor(private readonly agentId: string) {}

  add(self: ApprovalRecipient, toolCallId: string, timeoutMs: number | undefined): void {
    let calls = awaiting.get(self);
    if (!calls) {
      calls = new Set();
      awaiting.set(self, calls);
    }
    calls.add(toolCallId);
    this.self = self;
    if (timeoutMs === undefined) {
      unanswered.add({ self, agentId: this.agentId, toolCallId });
      watchUnanswered();
      return;
    }
    this.timers ??= new Map();
    clearTimeout(this.timers.get(toolCallId));
    this.timers.set(
      toolCallId,
      setTimeout(() => {
        this.timers?.delete(toolCallId);
        if (takeApproval(self, toolCallId))
          self.send({ type: 'DENY', toolCallId, reason: `no answer within ${timeoutMs} ms` });
      }, timeoutMs),
    );
  }

  /** The batch is over (its results recorded, or interrupted): none of its calls waits any more. */
  close(): void {
    if (this.timers) {
      for (const timer of this.timers.values()) clearTimeout(timer);
      this.timers = undefined;
    }
    if (!this.self) return;
    awaiting.delete(this.self);
    for (const entry of unanswered) if (entry.self === this.self) unanswered.delete(entry);
  }
}
