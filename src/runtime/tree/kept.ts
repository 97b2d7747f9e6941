/**
 * Which finished subagents each owner keeps alive (idle, resumable without a rebuild): the most recent
 * `keepFinished` of them. Older ones are released by their task actor (stopped, their history archived).
 */
export class KeptAgents {
  /** By owner id: agent ids, oldest first (a Set keeps insertion order). */
  private readonly byOwner = new Map<string, Set<string>>();

  constructor(private readonly keepFinished: number) {}

  /** Keeps an agent; returns the ones that fall out of its owner's window, oldest first. */
  keep(ownerId: string, agentId: string): string[] {
    let kept = this.byOwner.get(ownerId);
    if (!kept) {
      kept = new Set();
      this.byOwner.set(ownerId, kept);
    }
    kept.delete(agentId);
    kept.add(agentId);
    const evicted: string[] = [];
    for (const oldest of kept) {
      if (kept.size <= this.keepFinished) break;
      kept.delete(oldest);
      evicted.push(oldest);
    }
    if (kept.size === 0) this.byOwner.delete(ownerId);
    return evicted;
  }

  /** The agent is no longer kept idle (it was released, resumed or stopped). */
  forget(ownerId: string, agentId: string): void {
    const kept = this.byOwner.get(ownerId);
    if (!kept?.delete(agentId)) return;
    if (kept.size === 0) this.byOwner.delete(ownerId);
  }
}
