import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/index.js';
import { INTERRUPTED_TEXT } from '../../src/protocol/index.js';
import { until } from '../helpers/until.js';
import { embeddedBoss, toolResults, withoutIds } from './fixtures/embedded.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';

// A cancelled hosted subagent's own background subagents stop with it, as an embedded subtree does: each is
// cancelled through Restate (its tools see the abort), settles `interrupted` in its parent's book with the embedded
// words, once, gives its `maxAgents` slot back, and the cancelled child hears nothing more.

let harness: Harness;
beforeAll(async () => {
  // maxAgents is left at its default (10,000, as embedded): counted all the same.
  harness = await startHarness('subtree');
}, 90_000);

afterAll(() => harness?.close());

const countOf = (line: string) => harness.executions().filter((l) => l === line).length;

/** A task's record in an agent's task book, read through the ingress as any HTTP client would. */
async function bookRecord(ownerId: string, taskId: string): Promise<{ status: string; text?: string } | null> {
  const response = await fetch(
    `${harness.server.ingressUrl}/troupe-agent-tasks/${encodeURIComponent(ownerId)}/status`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ taskId }),
    },
  );
  expect(response.ok).toBe(true);
  return (await response.json()) as { status: string; text?: string } | null;
}

/** The tree's open `maxAgents` slots, as its counter object holds them. */
async function openSlots(root: string): Promise<number> {
  const rows = await sql<{ value: string }>(
    harness.server.adminUrl,
    `SELECT value_utf8 AS value FROM state WHERE service_name = 'troupe-agent-slots' AND service_key = '${root}' ` +
      `AND key = 'open'`,
  );
  return Number(rows[0]?.value ?? 0);
}

/** Waits until the grandchild's block saw its abort, its record says interrupted, and the tree's slots are free. */
async function expectStopped(root: string, child: string, grandchild: string): Promise<void> {
  await until(
    async () => countOf(`aborted ${grandchild} b`),
    (n) => n > 0,
  );
  const record = await until(
    () => bookRecord(child, 't0.g'),
    (r) => r?.status !== 'running',
  );
  expect(record).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  expect(
    await until(
      () => openSlots(root),
      (n) => n === 0,
    ),
  ).toBe(0);
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second stop or report, which must not come
  expect(countOf(`start ${grandchild} b`)).toBe(1);
  expect(countOf(`aborted ${grandchild} b`)).toBe(1);
  expect(await bookRecord(child, 't0.g')).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  // The cancelled child was not woken by its child's end; both histories stay valid.
  const childHistory = await harness.client.history(child);
  expect(notificationsOf(childHistory)).toEqual([]);
  expectValidHistory(childHistory);
  expectValidHistory(await harness.client.history(grandchild));
}

it('task_cancel of a hosted subagent waiting for its own background subagent stops that one too, as embedded', async () => {
  const root = 'boss-subtree-1';
  expect((await harness.client.prompt(root, 'subtree nest a')).text).toBe('done');
  const child = `${root}/t0.a0`;
  const grandchild = `${child}/t0.g`;
  await expectStopped(root, child, grandchild);
  const history = await harness.client.history(root);
  expectValidHistory(history);
  expect(notificationsOf(history)).toEqual([
    `<notification task_id="t0.a0" agent_id="${child}" status="cancelled">The task was cancelled before it finished.</notification>`,
  ]);
  // Embedded: the same tool results and notification, and the grandchild's task ends interrupted, in those words.
  const ends: AgentEvent[] = [];
  const embedded = await embeddedBoss(
    'subtree nest a',
    {},
    { notified: true, on: (event) => event.type === 'subagent_end' && ends.push(event) },
  );
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(toolResults(history)));
  expect(withoutIds(notificationsOf(embedded))).toEqual(withoutIds(notificationsOf(history)));
  expect(ends.map((event) => event.type === 'subagent_end' && event.status)).toEqual(['interrupted', 'cancelled']);
}, 120_000);

it("an operator's cancel of a hosted subagent in the middle of its turn stops its background subagent too", async () => {
  const root = 'boss-subtree-2';
  expect((await harness.client.prompt(root, 'background ["nestblock a"]')).text).toBe('joined');
  const child = `${root}/t0.a0`;
  const grandchild = `${child}/t0.g`;
  await until(
    async () => countOf(`start ${child} b`) + countOf(`start ${grandchild} b`),
    (n) => n === 2,
  );
  expect(await openSlots(root)).toBe(2); // the child and the grandchild
  const [invocation] = await sql<{ id: string }>(
    harness.server.adminUrl,
    `SELECT id FROM sys_invocation WHERE target_service_key = '${child}' AND target_handler_name = 'run'`,
  );
  const cancelled = await fetch(`${harness.server.adminUrl}/invocations/${invocation?.id}/cancel`, { method: 'PATCH' });
  expect(cancelled.ok).toBe(true);
  await expectStopped(root, child, grandchild);
  expect(countOf(`aborted ${child} b`)).toBe(1);
  const history = await until(
    () => harness.client.history(root),
    (h) => notificationsOf(h).length > 0,
  );
  expect(notificationsOf(history)).toEqual([
    `<notification task_id="t0.a0" agent_id="${child}" status="cancelled">The task was cancelled before it finished.</notification>`,
  ]);
}, 120_000);

it('a cancelled subagent resumed later may start background subagents again', async () => {
  const root = 'boss-subtree-3';
  expect((await harness.client.prompt(root, 'subtree-again nest a')).text).toBe('done');
  const child = `${root}/t0.a0`;
  expect(
    await until(
      () => bookRecord(child, 't0.g'),
      (r) => r?.status !== 'running',
    ),
  ).toMatchObject({
    status: 'interrupted',
  });
  // Its resumed turn (its second) started `quick r`, which ran and reported to it, instead of being refused.
  const record = await until(
    () => bookRecord(child, 't1.r'),
    (r) => r?.status !== 'running',
  );
  expect(record).toMatchObject({ status: 'completed', text: 'did r' });
  expect(
    notificationsOf(
      await until(
        () => harness.client.history(child),
        (h) => notificationsOf(h).length > 0,
      ),
    ),
  ).toEqual([`<notification task_id="t1.r" agent_id="${child}/t1.r" status="completed">did r</notification>`]);
  expect(
    await until(
      () => openSlots(root),
      (n) => n === 0,
    ),
  ).toBe(0);
}, 120_000);
