import { keepWindow } from '../../protocol/index.js';

/**
 * Which finished subagents each owner keeps alive (idle, resumable without a rebuild): the most recent
 * `keepFinished` of them (`keepWindow`, the rule both hosts keep by). Older ones are released by their task actor
 * (stopped, their history archived).
 */
export class KeptAgents {
  /** By owner id: agent ids, oldest first. */
  private readonly byOwner = new Map<string, string[]>();

  constructor(private readonly keepFinished: number) {}

  /** Keeps an agent; returns the ones that fall out of its owner's window, oldest first. */
  keep(ownerId: string, agentId: string): string[] {
    const { ids, out } = keepWindow(this.byOwner.get(ownerId) ?? [], agentId, this.keepFinished);
    if (ids.length > 0) this.byOwner.set(ownerId, ids);
    else this.byOwner.delete(ownerId);
    return out;
  }

  /** The agent is no longer kept idle (it was released, resumed or stopped). */
  forget(ownerId: string, agentId: string): void {
    const kept = this.byOwner.get(ownerId);
    if (!kept?.includes(agentId)) return;
    const rest = kept.filter((id) => id !== agentId);
    if (rest.length > 0) this.byOwner.set(ownerId, rest);
    else this.byOwner.delete(ownerId);
  }
}
