import type { Message, Usage } from '../protocol/index.js';

/** What is kept of a stopped subagent, so that a resume can rebuild it. */
export interface ArchivedAgent {
  readonly messages: readonly Message[];
  readonly usage: Usage;
  readonly subtreeUsage: Usage;
  readonly ownerId: string;
  readonly depth: number;
  readonly profile: string;
}

/** The histories of stopped subagents, the most recent `keepHistory` of them (older ones cannot be resumed). */
export class HistoryArchive {
  private readonly entries = new Map<string, ArchivedAgent>();

  constructor(private readonly keepHistory: number) {}

  get(agentId: string): ArchivedAgent | undefined {
    return this.entries.get(agentId);
  }

  has(agentId: string): boolean {
    return this.entries.has(agentId);
  }

  /** Takes an agent out (it is being rebuilt). */
  delete(agentId: string): void {
    this.entries.delete(agentId);
  }

  add(agentId: string, agent: ArchivedAgent): void {
    if (this.keepHistory === 0) return;
    this.entries.delete(agentId);
    this.entries.set(agentId, agent);
    while (this.entries.size > this.keepHistory) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
