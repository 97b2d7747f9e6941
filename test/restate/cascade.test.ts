import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { INTERRUPTED_TEXT } from '../../src/protocol/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentBalancer, type AgentClient, agentClient, balanceAgents } from '../../src/restate/index.js';
import { until } from '../helpers/until.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';
import { bookRecord, invocationsOf, openSlots } from './fixtures/tree-reads.js';
import { freePort, startWorker, type WorkerProcess } from './fixtures/workers.js';

// A stop cascade cut by kill -9: a background subagent with four background children of its own, each blocked in
// a tool, is cancelled by its parent (`task_cancel`); its book stops the four (cancel, record `interrupted`, slot
// back, their own books stopped) while both worker processes behind the balancer are killed -9 and started again.
// Every child settles once, nobody hears of them, and the tree's slot count comes back to what the tasks still open
// hold. Then a background batch for the stopped subagent that arrives late is refused, its slot given back.

const CHILDREN = 4;
let server: RestateDevServer;
let client: AgentClient;
let balancer: AgentBalancer;
let dir: string;
let sideFile: string;
const ports: number[] = [];
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-restate-cascade-'));
  sideFile = join(dir, 'executions.log');
  writeFileSync(sideFile, '');
  server = await startRestateDevServer();
  client = agentClient(server.ingressUrl);
  for (const name of ['w1', 'w2']) {
    const port = await freePort();
    ports.push(port);
    workers.push(await startWorker(port, sideFile, name));
  }
  balancer = await balanceAgents(workers.map((worker) => worker.url));
  await server.register(balancer.url);
}, 90_000);

afterAll(async () => {
  for (const worker of workers) await worker.kill();
  await balancer?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const executions = () => readFileSync(sideFile, 'utf8').split('\n').filter(Boolean);
const countOf = (line: string) => executions().filter((l) => l === line).length;
const slots = (root: string) => openSlots(server.adminUrl, root);
const record = (owner: string, taskId: string) => bookRecord(server.ingressUrl, owner, taskId);

/** An ingress request (a call, or a one-way send with `/send`), its answer parsed. */
async function ingress<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`${server.ingressUrl}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.ok).toBe(true);
  return (await response.json()) as T;
}

it("kill -9 of the workers during a cancelled subagent's stop cascade: each child settles once, the slots come back", async () => {
  const root = 'boss-cascade-1';
  const parent = `${root}/t0.a0`;
  const holder = `${root}/t0.a1`;
  const children = Array.from({ length: CHILDREN }, (_, i) => `${parent}/t0.g${i}`);
  const invocation = await client.send(root, `paths cascade ${CHILDREN}`);
  // The parent's book starts stopping them once the root's task_cancel reached the root's book: kill both workers
  // as soon as its `stop` invocation exists.
  const stopQuery =
    "SELECT id FROM sys_invocation WHERE target_service_name = 'troupe-agent-tasks' " +
    `AND target_service_key = '${parent}' AND target_handler_name = 'stop'`;
  // The parent's book may be told to stop twice (by the root's book, and by the parent's own turn as it hears its
  // cancellation); stopping twice changes nothing, which the settles below check.
  const stop = await until(
    () => sql<{ id: string }>(server.adminUrl, stopQuery),
    (rows) => rows.length > 0,
  );
  const abortedAtKill = children.filter((child) => countOf(`aborted ${child} b`) > 0).length;
  await Promise.all(workers.map((worker) => worker.kill()));
  for (const [i, port] of ports.entries()) workers[i] = await startWorker(port, sideFile, `w${i + 1}-again`);

  // The `cancelled` notification joined the turn that cancelled, at its next step (as embedded): it answers it.
  expect(await client.result(invocation)).toMatchObject({ stopReason: 'completed', text: 'noted' });
  // Each child's task settled once: `interrupted` in the embedded words, started once (its `run` invocation), and
  // its block ended by the cascade's cancel at most once (a block its dead worker ran was run again, being safe to
  // repeat, and that one was aborted).
  for (const child of children) {
    const taskId = child.slice(parent.length + 1);
    expect(
      await until(
        () => record(parent, taskId),
        (r) => r?.status !== 'running',
      ),
    ).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
    expect(await invocationsOf(server.adminUrl, child, 'run')).toBe(1);
    expect(countOf(`aborted ${child} b`)).toBeLessThanOrEqual(1);
    expectValidHistory(await client.history(child));
  }
  // The holder keeps its slot: the tree holds exactly 1 (a child's slot given back twice would leave 0, the counter
  // stopping at 0; one not given back, more).
  expect(
    await until(
      () => slots(root),
      (n) => n === 1,
    ),
  ).toBe(1);
  // Nobody heard of the stopped children: the cancelled subagent ran no `notify`; the root heard `cancelled` once.
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a late report, which must not come
  expect(await invocationsOf(server.adminUrl, parent, 'notify')).toBe(0);
  expect(notificationsOf(await client.history(parent))).toEqual([]);
  expectValidHistory(await client.history(parent));
  // The root heard it in the turn that cancelled (awaited above); waited for all the same, as a later turn would be.
  const rootHistory = await until(
    () => client.history(root),
    (history) => notificationsOf(history).length > 0 && history.at(-1)?.role === 'assistant',
  );
  expectValidHistory(rootHistory);
  expect(notificationsOf(rootHistory)).toEqual([
    `<notification task_id="t0.a0" agent_id="${parent}" status="cancelled">The task was cancelled before it finished.</notification>`,
  ]);
  expect(await slots(root)).toBe(1);
  // Where the kill fell (not asserted, it depends on timing): the children aborted before it, and how long the stop
  // took (it ends only after the workers' restart when the kill cut it).
  const [stopped] = await sql<{ created_at: string; completed_at: string }>(
    server.adminUrl,
    `SELECT created_at, completed_at FROM sys_invocation WHERE id = '${stop[0]?.id}'`,
  );
  const took = Date.parse(stopped?.completed_at ?? '') - Date.parse(stopped?.created_at ?? '');
  console.log(`cascade: ${abortedAtKill} of ${CHILDREN} children aborted at the kill; the stop took ${took} ms`);

  // A batch for the stopped subagent arriving now (as one its turn journaled before the cancel would): its slot
  // taken as a parent's turn takes it, then refused by the stopped book: recorded `interrupted`, nothing started,
  // the slot given back, the subagent not told.
  const grants = await ingress<{ granted: boolean }[]>(`troupe-agent-slots/${root}/acquire`, { sizes: [1], max: 100 });
  expect(grants).toMatchObject([{ granted: true }]);
  expect(await slots(root)).toBe(2);
  const late = `${parent}/t9.late`;
  await ingress(`troupe-agent-tasks/${encodeURIComponent(parent)}/batch/send`, {
    batches: [{ tasks: [{ taskId: 't9.late', agentId: late, prompt: 'quick late' }], options: { concurrency: 4 } }],
    root,
  });
  expect(
    await until(
      () => record(parent, 't9.late'),
      (r) => r !== null,
    ),
  ).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  expect(
    await until(
      () => slots(root),
      (n) => n === 1,
    ),
  ).toBe(1);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await invocationsOf(server.adminUrl, late, 'run')).toBe(0);
  expect(await invocationsOf(server.adminUrl, parent, 'notify')).toBe(0);

  // The holder is cancelled through the root's book: the tree's last slot comes back.
  expect(await ingress(`troupe-agent-tasks/${root}/cancel`, { taskId: 't0.a1' })).toBe('cancelled');
  expect(
    await until(
      () => slots(root),
      (n) => n === 0,
    ),
  ).toBe(0);
  expect(
    await until(
      async () => countOf(`aborted ${holder} b`),
      (n) => n > 0,
    ),
  ).toBe(1);
}, 120_000);
