import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type Message, scriptedModel } from '../../src/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { expectValidHistory } from './fixtures/histories.js';

// Temporal's limit was hit at 53 of 100 calls because each call carried the whole conversation. Here a turn of 100
// model calls, each followed by a 2 KB tool result, is read back from the server's own journal (the admin API's
// SQL introspection): every call journals what it adds, so no entry grows with the conversation.
const CALLS = 100;
const RESULT_BYTES = 2_000;
let server: RestateDevServer;
let worker: AgentWorker;
let client: AgentClient;

beforeAll(async () => {
  server = await startRestateDevServer();
  const read = defineTool({
    name: 'read',
    description: 'Reads a page',
    schema: z.object({ page: z.number() }),
    execute: ({ page }) => `page ${page}: ${'lorem ipsum '.repeat(RESULT_BYTES / 12)}`,
  });
  const model = scriptedModel((request) => {
    const results = request.messages.filter((message) => message.role === 'tool').length;
    if (results + 1 < CALLS) return { toolCalls: [{ name: 'read', args: { page: results }, id: `r${results}` }] };
    return { text: `read ${results} pages` };
  });
  worker = await serveAgents([agentObject({ agent: () => ({ model, tools: [read], maxSteps: CALLS }) })]);
  await server.register(worker.url);
  client = agentClient(server.ingressUrl);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

interface JournalRow {
  index: number;
  entry_type: string;
  name: string | null;
  raw_length: number;
}

async function sql<Row>(query: string): Promise<Row[]> {
  const response = await fetch(`${server.adminUrl}/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query }),
  });
  expect(response.ok).toBe(true);
  return ((await response.json()) as { rows: Row[] }).rows;
}

const journalOf = (invocationId: string) =>
  sql<JournalRow>(
    `SELECT index, entry_type, name, raw_length FROM sys_journal WHERE id = '${invocationId}' ORDER BY index`,
  );

it(`a turn of ${CALLS} model calls journals each call's news, not the conversation`, async () => {
  const invocation = await client.send('reader', 'read everything');
  const outcome = await client.result(invocation);
  expect(outcome).toMatchObject({ stopReason: 'completed', text: `read ${CALLS - 1} pages` });
  const history: Message[] = await client.history('reader');
  expectValidHistory(history);
  expect(history.filter((message) => message.role === 'tool')).toHaveLength(CALLS - 1);
  const conversationBytes = JSON.stringify(history).length;
  expect(conversationBytes).toBeGreaterThan((CALLS - 1) * RESULT_BYTES);

  const journal = await journalOf(invocation);
  // Each model call and each tool call has its entries (the run command and its completion).
  expect(journal.filter((row) => row.name?.startsWith('model ')).length).toBe(CALLS);
  // The turn's end stores what it added (one state write per turn, `turn:<n>`): the only entry as large as the
  // conversation. Every other entry holds one call's news, the same size at the 100th call as at the first.
  const perCall = journal.filter((row) => row.entry_type !== 'Command: SetState');
  const largest = Math.max(...perCall.map((row) => row.raw_length));
  expect(largest).toBeLessThan(2 * RESULT_BYTES);
  // The answer journaled for the last model call is no larger than the first one's (its completion follows its run).
  const answerSize = (n: number) => journal[journal.findIndex((row) => row.name === `model ${n}`) + 1]?.raw_length;
  expect(answerSize(CALLS)).toBeLessThanOrEqual((answerSize(1) ?? 0) + 50);
  const total = journal.reduce((sum, row) => sum + row.raw_length, 0);
  // Journaling the whole conversation per call would be ~CALLS/2 times the conversation; what is new is ~2×
  // (the calls' entries, then the turn's state write).
  expect(total).toBeLessThan(3 * conversationBytes);
}, 120_000);

it("a turn's bookkeeping: one invocation, its ledger read once and written twice", async () => {
  const invocation = await client.send('bookkeeper', 'read everything');
  const outcome = await client.result(invocation);
  const journal = await journalOf(invocation);
  const of = (type: string) => journal.filter((row) => row.entry_type === type).length;
  // Reads: the ledger (turn count, usage, the doorbell); an agent without subagents has no results kept for it.
  expect(of('Command: GetEagerState')).toBe(1);
  // Writes: the ledger with the turn's doorbell, the turn's messages, the ledger without it at the end.
  expect(of('Command: SetState')).toBe(3);
  expect(of('Command: ClearState')).toBe(0);
  // No steer came: the turn calls no other invocation (its control object is asked only after a ring).
  expect(of('Command: Call')).toBe(0);
  const [called] = await sql<{ n: number }>(
    `SELECT count(*) AS n FROM sys_invocation WHERE invoked_by_id = '${invocation}'`,
  );
  expect(Number(called?.n)).toBe(0);
  // What the one key holds is what the agent reports.
  expect(await client.usage('bookkeeper')).toEqual(outcome.usage);
  expect((await client.history('bookkeeper')).length).toBeGreaterThan(1);
}, 120_000);
