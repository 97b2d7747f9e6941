/**
 * The calls of a hosted agent's tree that wait for approval. The agent's own come from its `pending` handler (the
 * ingress); its subagents' (objects keyed `<agent>/…`, whose keys only Restate knows) from Restate's admin API,
 * which can query every object's state, when its address is known.
 */
import type { PendingApproval } from '../restate/agent-object.js';
import type { AgentClient } from '../restate/client.js';

/** A call waiting for approval, with the agent it belongs to (the one asked about, or one of its subagents). */
export interface WaitingCall extends PendingApproval {
  agentId: string;
}

export interface TreeApprovals {
  calls: WaitingCall[];
  /** Why the subagents' calls are not among them, when they are not. */
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
  const own = (await client.pendingApprovals(agentId)).map((call) => ({ ...call, agentId }));
  if (!admin) return { calls: own, unlisted: 'no admin API given (--admin)' };
  const query =
    `SELECT service_key, value_utf8 FROM state WHERE service_name = ${quoted(name)} ` +
    `AND starts_with(service_key, ${quoted(`${agentId}/`)}) AND starts_with(key, 'approval:') ORDER BY service_key, key`;
  try {
    const response = await fetch(`${admin.replace(/\/$/, '')}/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query }),
    });
    if (!response.ok) return { calls: own, unlisted: `the admin API at ${admin} answered ${response.status}` };
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
    return { calls: own, unlisted: `cannot reach the admin API at ${admin}: ${cause}` };
  }
}
