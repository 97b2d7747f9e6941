import type { Message, ToolCallPart } from '../../protocol/index.js';
import type { JournalRecord } from '../../session/index.js';
import type { AgentEnv } from '../env/env.js';

/**
 * Approvals remembered before the restart ("allow always") are remembered again, each when the replay passes the
 * answer that made it (an earlier call of the same tool was asked, and its journaled answer must be given again),
 * or at once when that answer is in the restored history. A remembered call is remembered by the call itself (the
 * permissions make the same key of it), a rule as written.
 */
export class RememberedApprovals {
  private readonly byCall = new Map<string, string[]>();
  private readonly calls = new Map<string, ToolCallPart>();

  constructor(
    records: readonly JournalRecord[],
    private readonly env: AgentEnv,
  ) {
    for (const record of records) {
      if (record.k === 'remember') this.byCall.set(record.id, [...(this.byCall.get(record.id) ?? []), ...record.rules]);
    }
    if (this.byCall.size === 0) return;
    for (const record of records) {
      if (record.k !== 'msg' || !('role' in record.m) || record.m.role !== 'assistant') continue;
      for (const part of record.m.content) if (part.type === 'tool_call') this.calls.set(part.id, part);
    }
  }

  /** Those whose call is in the restored history: no replay passes them again. */
  restoreBefore(history: readonly Message[]): void {
    if (this.byCall.size === 0) return;
    for (const message of history) {
      if (message.role !== 'assistant') continue;
      for (const part of message.content) if (part.type === 'tool_call') this.restore(part.id);
    }
  }

  restore(callId: string): void {
    const rules = this.byCall.get(callId);
    if (!rules) return;
    this.byCall.delete(callId);
    const { permissions } = this.env.settings;
    const call = this.calls.get(callId);
    const made = call ? permissions.rememberCall(call, this.env.tools.get(call.name)) : undefined;
    for (const rule of rules) if (rule !== made) permissions.remember(rule);
  }
}
