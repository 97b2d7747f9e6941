/**
 * What a supervisor keeps of its finished subagents, and so which of them a parent may resume by id. Each owner
 * keeps its most recent `keepFinished` finished agents alive (idle, resumable at once) and the histories of its
 * most recent `keepHistory` stopped ones (an agent let go from the first window, or stopped with a cancelled task);
 * an agent in neither is forgotten, and a resume of it is refused. Both hosts decide by these: the embedded tree's
 * book (runtime/tree) and the Restate host's task book.
 */

/** An owner's finished subagents, oldest first: kept alive, and stopped with their histories archived. */
export interface FinishedAgents {
  /** Alive and idle: the most recent `keepFinished`. */
  readonly kept: readonly string[];
  /** Stopped, their histories kept: the most recent `keepHistory`. */
  readonly archived: readonly string[];
}

/** How many finished subagents each owner keeps alive, and how many stopped ones' histories. */
export interface KeepLimits {
  /** Finished agents kept alive per owner. */
  keepFinished: number;
  /** Stopped agents' histories kept per owner. */
  keepHistory: number;
}

/**
 * A window of `limit` ids, oldest first (a Set keeps insertion order), once `id` joins it as the newest, changed in
 * place: returns the ids pushed out, oldest first. In place, because the embedded tree moves a window per finished
 * subagent and copying one of `keepHistory` ids each time grows with the limit.
 */
export function keepIn(window: Set<string>, id: string, limit: number): string[] {
  window.delete(id);
  window.add(id);
  const out: string[] = [];
  for (const oldest of window) {
    if (window.size <= limit) break;
    window.delete(oldest);
    out.push(oldest);
  }
  return out;
}

/** `keepIn` on a copy: the ids in the window, and those pushed out. */
function keepWindow(ids: readonly string[], id: string, limit: number): { ids: string[]; out: string[] } {
  const window = new Set(ids);
  const out = keepIn(window, id, limit);
  return { ids: [...window], out };
}

/**
 * An owner's windows once `agentId` finished a task: `alive`, it stays alive (the oldest beyond `keepFinished` are
 * `released`, stopped and archived); or it was stopped with its task (a cancel), and is archived at once. Archived
 * histories beyond `keepHistory` are `forgotten`.
 */
export function finishAgent(
  before: FinishedAgents,
  agentId: string,
  alive: boolean,
  limits: KeepLimits,
): { after: FinishedAgents; released: string[]; forgotten: string[] } {
  const others = (ids: readonly string[]) => ids.filter((id) => id !== agentId);
  let archived = others(before.archived);
  let kept = others(before.kept);
  let released: string[] = [];
  if (alive) ({ ids: kept, out: released } = keepWindow(kept, agentId, limits.keepFinished));
  const forgotten: string[] = [];
  for (const id of alive ? released : [agentId]) {
    const window = keepWindow(archived, id, limits.keepHistory);
    archived = window.ids;
    forgotten.push(...window.out);
  }
  return { after: { kept, archived }, released, forgotten };
}

/** Why a resume by id is refused: not the caller's child, unknown (never, or no longer kept), or still at work. */
export type ResumeRefusal = 'not-own' | 'unknown' | 'running';

/** The text a refused resume answers the model with. */
export function resumeRefused(agentId: string, why: ResumeRefusal): string {
  if (why === 'not-own') return `Agent ${agentId} is not one of your subagents`;
  if (why === 'running') return `Agent ${agentId} is still running a task; wait for its result`;
  return `No finished subagent "${agentId}" is known (it may be too old to resume)`;
}
