import { keepIn, type Message, type Usage } from '../../protocol/index.js';

/** What is kept of a stopped subagent, so that a resume can rebuild it. */
export interface ArchivedAgent {
  readonly messages: readonly Message[];
  readonly usage: Usage;
  readonly subtreeUsage: Usage;
  readonly ownerId: string;
  readonly profile: string;
}

/** A subagent whose last task had settled, as its session's journal tells it. */
export interface FinishedAgent {
  readonly agentId: string;
  /**
   * Its agent outlived its task's settle (every outcome but a cancel, which stops it): it joined its owner's
   * `keepFinished` window then, and does so again on a restore.
   */
  readonly kept: boolean;
  readonly archived: ArchivedAgent;
}

/**
 * The histories of stopped subagents, the most recent `keepHistory` of each owner's (older ones cannot be resumed),
 * counted per owner as the task book counts finished tasks (tasks.ts). A
 * reopened session's finished agents that were kept alive before the restart are held apart (`restoreKept`): they
 * still count in their owner's `keepFinished` window, not here, until that window lets them go (`retire`).
 */
export class HistoryArchive {
  private readonly entries = new Map<string, ArchivedAgent>();
  private readonly restoredKept = new Map<string, ArchivedAgent>();
  /** Each owner's archived agents, oldest first. */
  private readonly byOwner = new Map<string, Set<string>>();

  constructor(private readonly keepHistory: number) {}

  get(agentId: string): ArchivedAgent | undefined {
    return this.entries.get(agentId) ?? this.restoredKept.get(agentId);
  }

  has(agentId: string): boolean {
    return this.entries.has(agentId) || this.restoredKept.has(agentId);
  }

  /** A restored agent still in its owner's `keepFinished` window: kept alive as far as its owner is concerned. */
  isKept(agentId: string): boolean {
    return this.restoredKept.has(agentId);
  }

  /** Takes an agent out (it is being rebuilt). */
  delete(agentId: string): void {
    const archived = this.entries.get(agentId);
    if (archived) {
      const owned = this.byOwner.get(archived.ownerId);
      if (owned?.delete(agentId) && owned.size === 0) this.byOwner.delete(archived.ownerId);
      this.entries.delete(agentId);
    }
    this.restoredKept.delete(agentId);
  }

  /** Archives a stopped agent; the oldest of its owner's beyond `keepHistory` are forgotten (`keepIn`). */
  add(agentId: string, agent: ArchivedAgent): void {
    this.delete(agentId);
    let owned = this.byOwner.get(agent.ownerId);
    if (!owned) {
      owned = new Set();
      this.byOwner.set(agent.ownerId, owned);
    }
    for (const forgotten of keepIn(owned, agentId, this.keepHistory)) this.entries.delete(forgotten);
    if (owned.has(agentId)) this.entries.set(agentId, agent);
    if (owned.size === 0) this.byOwner.delete(agent.ownerId);
  }

  /** A finished agent that was kept alive before a restart, restored from the journal. */
  restoreKept(agentId: string, agent: ArchivedAgent): void {
    this.delete(agentId);
    this.restoredKept.set(agentId, agent);
  }

  /** A restored kept agent left its owner's `keepFinished` window: archived as a stopped agent is. */
  retire(agentId: string): void {
    const agent = this.restoredKept.get(agentId);
    if (agent) this.add(agentId, agent);
  }
}
