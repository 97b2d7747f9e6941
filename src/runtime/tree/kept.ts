import { keepIn } from '../../protocol/index.js';

/**
 * Which finished subagents each owner keeps alive (idle, resumable without a rebuild): the most recent
 * `keepFinished` of them (`keepIn`, the rule both hosts keep by). Older ones are released by their task actor
 * (stopped, their history archived).
 */
export class KeptAgents {
  /** By owner id: agent ids, oldest first. */
  private readonly byOwner = new Map<string, Set<string>>();

  constructor(private readonly keepFinished: number) {}

  /** Keeps an agent; returns the ones that fall out of its owner's window, oldest first. */
  keep(ownerId: string, agentId: string): string[] {
    let kept = this.byOwner.get(ownerId);
    if (!kept) {
      kept = new Set();
      this.byOwner.set(ownerId, kept);
    }
    const out = keepIn(kept, agentId, this.keepFinished);
    if (kept.size === 0) this.byOwner.delete(ownerId);
    return out;
  }

  /** The agent is no longer kept idle (it was released, resumed or stopped). */
  forget(ownerId: string, agentId: string): void {
    const kept = this.byOwner.get(ownerId);
    if (kept?.delete(agentId) && kept.size === 0) this.byOwner.delete(ownerId);
  }
}
