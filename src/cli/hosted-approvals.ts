/**
 * The calls of a hosted agent's tree that wait for approval. The agent's own come from its `pending` handler (the
 * ingress); its subagents' (objects keyed `<agent>/…`) from Restate's admin API, which can query every object's
 * state in one request, when its address is known; else by walking the tree through the ingress: each agent's
 * subagents at work (`client.subagents`: its foreground batches' children and its book's running tasks), and
 * theirs, each asked for its `pending` calls.
 */
import type { PendingApproval } from '../restate/agent-object.js';
import type { AgentClient } from '../restate/client.js';

/** A call waiting for approval, with the agent it belongs to (the one asked about, or one of its subagents). */
export interface WaitingCall extends PendingApproval {
  agentId: string;
}

/** What a list without the admin API's query lacks, said after why it went without. */
export const WALKED =
  "subagents' calls were found through the ingress (not those of a subagent whose task its parent's book forgot)";

export interface TreeApprovals {
  calls: WaitingCall[];
  /** Why the subagents' calls are not all among them, when they may not be. */
  unlisted?: string;
}

/** Restate's admin API beside an ingress on Restate's own default port (8080 → 9070); none for any other. */
export function defaultAdmin(ingress: string): string | undefined {
  const url = new URL(ingress);
  if (url.port !== '8080') return undefined;
  url.port = '9070';
  return url.origin;
}

const quoted = (text: string) => `'${text.replace(/'/g, "''")}'`;

export async function treeApprovals(
  client: AgentClient,
  admin: string | undefined,
  name: string,
  agentId: string,
): Promise<TreeApprovals> {
  if (!admin) return { calls: await walk(client, agentId) };
  const own = (await client.pendingApprovals(agentId)).map((call) => ({ ...call, agentId }));
  const query =
    `SELECT service_key, value_utf8 FROM state WHERE service_name = ${quoted(name)} ` +
    `AND starts_with(service_key, ${quoted(`${agentId}/`)}) AND starts_with(key, 'approval:') ORDER BY service_key, key`;
  try {
    const response = await fetch(`${admin.replace(/\/$/, '')}/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query }),
    });
    if (!response.ok) {
      return { calls: await walk(client, agentId), unlisted: `the admin API at ${admin} answered ${response.status}` };
    }
    const { rows } = (await response.json()) as { rows: Array<{ service_key: string; value_utf8: string }> };
    const children: WaitingCall[] = [];
    for (const row of rows) {
      const call = JSON.parse(row.value_utf8) as PendingApproval | string;
      // A bare awakeable id (an earlier release's) says nothing of the call: it cannot be shown.
      if (typeof call === 'object' && call !== null) children.push({ ...call, agentId: row.service_key });
    }
    return { calls: [...own, ...children] };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
    return { calls: await walk(client, agentId), unlisted: `cannot reach the admin API at ${admin}: ${cause}` };
  }
}

/**
 * The waiting calls of an agent and of its subagents at work, down the tree, through the ingress alone (a request
 * for its calls, three for its subagents, and one per settled subagent its book keeps, per agent; a subagent's key
 * extends its parent's, so the walk ends). A subagent whose task has settled is found when a turn of its runs (a
 * steer sent to it directly woke it) while its parent's book keeps the task (`keepHistory`); the admin API's query
 * finds every one.
 */
async function walk(client: AgentClient, agentId: string): Promise<WaitingCall[]> {
  // A worker of an earlier release has no handler that lists subagents: its agent's own calls are still listed.
  const [own, subagents] = await Promise.all([
    client.pendingApprovals(agentId),
    client.subagents(agentId).catch(() => []),
  ]);
  const below = await Promise.all(subagents.map((subagent) => walk(client, subagent)));
  return [...own.map((call) => ({ ...call, agentId })), ...below.flat()];
}
