import * as restate from '@restatedev/restate-sdk';
import { type FinishedAgents, finishAgent, type KeepLimits, type ResumeRefusal } from '../host/index.js';

/**
 * `keepFinished` and `keepHistory` on Restate: a parent's task book keeps the windows of its finished children
 * (`finishAgent`, the rule the embedded tree keeps by), a resume by id is accepted only for a child in them, and a
 * child that falls out of both is forgotten: its object's state is cleared, and its own finished children's in turn,
 * so a tree's storage stays bounded by what it may still resume. A hosted child's history is its object's state
 * whether it is "alive" or "archived", so the two windows differ here only in how many they hold together.
 */

/** The book's state key: its owner's finished children (`FinishedAgents`). */
const AGENTS = 'agents';
const json = restate.serde.json;
const NONE: FinishedAgents = { kept: [], archived: [] };

/** Children of the book's owner that finished tasks (`alive`: not stopped with it): the windows, forgotten ones told. */
export async function agentsFinished(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  limits: KeepLimits,
  finished: readonly { agentId: string; alive: boolean }[],
): Promise<void> {
  if (finished.length === 0) return;
  let agents = (await ctx.get<FinishedAgents>(AGENTS)) ?? NONE;
  for (const { agentId, alive } of finished) {
    const { after, forgotten } = finishAgent(agents, agentId, alive, limits);
    agents = after;
    for (const id of forgotten) forget(ctx, agentObjectName, id);
  }
  ctx.set(AGENTS, agents);
}

/** Clears a child object's state (a journaled message); its `forget` handler tells its own book. */
function forget(ctx: restate.ObjectContext, agentObjectName: string, agentId: string): void {
  ctx.genericSend({ service: agentObjectName, method: 'forget', key: agentId, parameter: null, inputSerde: json });
}

/**
 * A resume of these children: each refused (`running`: one of `running`, the children whose tasks run now), or null
 * when it is in the windows, which it leaves as it works (it joins them again once its new task is over). All or
 * none are taken, as a batch runs whole or not at all.
 */
export async function claimResumes(
  ctx: restate.ObjectContext,
  agentIds: readonly string[],
  running: readonly string[],
): Promise<(ResumeRefusal | null)[]> {
  const agents = (await ctx.get<FinishedAgents>(AGENTS)) ?? NONE;
  const known = new Set([...agents.kept, ...agents.archived]);
  const answers = agentIds.map((id): ResumeRefusal | null =>
    running.includes(id) ? 'running' : known.has(id) ? null : 'unknown',
  );
  if (answers.some((answer) => answer !== null)) return answers;
  const taken = (ids: readonly string[]) => ids.filter((id) => !agentIds.includes(id));
  ctx.set(AGENTS, { kept: taken(agents.kept), archived: taken(agents.archived) } satisfies FinishedAgents);
  return answers;
}

/** The owner is forgotten: so is each finished child it kept, and the book with them. */
export async function forgetBook(ctx: restate.ObjectContext, agentObjectName: string): Promise<void> {
  const agents = (await ctx.get<FinishedAgents>(AGENTS)) ?? NONE;
  for (const id of [...agents.kept, ...agents.archived]) forget(ctx, agentObjectName, id);
  ctx.clearAll();
}

/** The agent object's `forget`: its state goes, then its book's (a journaled message). */
export function forgetHandler(bookName: string) {
  return async (ctx: restate.ObjectContext): Promise<null> => {
    ctx.clearAll();
    ctx.genericSend({ service: bookName, method: 'forget', key: ctx.key, parameter: null, inputSerde: json });
    return null;
  };
}
