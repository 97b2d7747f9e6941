import type { RestateDevServer } from '../src/restate/dev-server.js';

/**
 * Runs SQL on the Restate server's admin `/query` endpoint (its `sys_invocation` and `sys_journal` tables): how the
 * Restate benchmarks count invocations and journal entries, from the server's own records.
 */
export async function adminQuery<T>(server: RestateDevServer, sql: string): Promise<T[]> {
  const response = await fetch(`${server.adminUrl}/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: sql }),
  });
  if (!response.ok) throw new Error(`query failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { rows: T[] }).rows;
}
