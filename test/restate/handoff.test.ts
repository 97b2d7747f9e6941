import { afterAll, beforeAll, expect, it } from 'vitest';
import { INTERRUPTED_TEXT } from '../../src/protocol/index.js';
import { until } from '../helpers/until.js';
import { embeddedBoss, toolResults, withoutIds } from './fixtures/embedded.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';

// A foreground subagent with background subagents of its own hands off as embedded: its task is finished once its
// own children have reported and the turns they woke have ended, so its parent hears its last turn, not its first.
// A join that decides while it waits for them cancels it there.

const gates = new Map<string, () => void>();
const gateOf = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve));
const open = async (key: string) => {
  await until(
    async () => gates.has(key),
    (has) => has,
  );
  gates.get(key)?.();
};

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('handoff', { gate: gateOf });
}, 90_000);

afterAll(() => harness?.close());

/** A task's record in an agent's task book, read through the ingress as any HTTP client would. */
async function bookRecord(ownerId: string, taskId: string): Promise<{ status: string; text?: string } | null> {
  const response = await fetch(
    `${harness.server.ingressUrl}/troupe-agent-tasks/${encodeURIComponent(ownerId)}/status`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ taskId }) },
  );
  expect(response.ok).toBe(true);
  return (await response.json()) as { status: string; text?: string } | null;
}

/** Whether an agent's `run` (its foreground task's first turn) has answered. */
const runAnswered = async (agentId: string) =>
  (
    await sql<{ id: string }>(
      harness.server.adminUrl,
      `SELECT id FROM sys_invocation WHERE target_service_key = '${agentId}' AND target_handler_name = 'run' ` +
        "AND status = 'completed'",
    )
  ).length > 0;

it("a foreground child hands off its last turn, the one its background child's result woke, as embedded", async () => {
  const root = 'boss-handoff-1';
  const child = `${root}/t0.a0`;
  expect((await harness.client.prompt(root, 'agents ["helped quick g"]')).text).toBe('joined');
  const history = await harness.client.history(root);
  expectValidHistory(history);
  const results = toolResults(history);
  expect(results).toEqual(['nested: did g']);
  // The child's history: its first turn, then the turn its own child's notification woke (once).
  const childHistory = await harness.client.history(child);
  expectValidHistory(childHistory);
  expect(notificationsOf(childHistory)).toHaveLength(1);
  expect(childHistory.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'nested: did g' }] });
  // The same program embedded hands off the same text.
  const embedded = await embeddedBoss('agents ["helped quick g"]', {});
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(results));
}, 120_000);

it('a join that decides while a foreground child waits for its own background child cancels it there, its child with it', async () => {
  const root = 'boss-handoff-2';
  const waiting = `${root}/t0.sw.0`;
  const args = { join: 'any', tasks: [{ prompt: 'helped gated g' }, { prompt: 'gated s' }] };
  const outcome = harness.client.prompt(root, `swarm ${JSON.stringify(args)}`);
  // The sibling completes (deciding the join) only once the first child's turn has ended and it waits for its own.
  await until(
    () => runAnswered(waiting),
    (answered) => answered,
  );
  await open(`${root}/t0.sw.1`);
  expect(await outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const history = await harness.client.history(root);
  expectValidHistory(history);
  const results = toolResults(history);
  expect(results).toEqual([
    '<join policy="first(1)" outcome="met" completed="1"/>\n' +
      `<result task_id="t0.sw.0" agent_id="${waiting}" status="cancelled">` +
      "The task was cancelled: its batch's join policy was decided without it.</result>\n" +
      `<result task_id="t0.sw.1" agent_id="${root}/t0.sw.1" status="completed">did s</result>`,
  ]);
  // Its own child stops with it, as an embedded subtree does: settled once in its book, `interrupted`, and the
  // cancelled child is not woken by it.
  const record = await until(
    () => bookRecord(waiting, 't0.n'),
    (r) => r?.status !== 'running',
  );
  expect(record).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second report, which must not come
  expect(await bookRecord(waiting, 't0.n')).toMatchObject({ status: 'interrupted' });
  const childHistory = await harness.client.history(waiting);
  expect(notificationsOf(childHistory)).toEqual([]);
  expectValidHistory(childHistory);
  expect(toolResults(await harness.client.history(root))).toEqual(results);
  // The same swarm embedded (the sibling's gate opened once the other child's own child waits at its gate).
  let grandchildWaits = false;
  const embedded = await embeddedBoss(
    `swarm ${JSON.stringify(args)}`,
    {},
    {
      gate: async (who) => {
        if (who === 'g') {
          grandchildWaits = true;
          return new Promise<void>(() => {});
        }
        for (let i = 0; i < 1_000 && !grandchildWaits; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      },
    },
  );
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(results));
}, 120_000);

it("a join's cancel reaches the turn its foreground child's own child woke: the turn is interrupted, the task cancelled", async () => {
  const root = 'boss-handoff-3';
  const waiting = `${root}/t0.sw.0`;
  const args = { join: 'any', tasks: [{ prompt: 'helpedblock quick g' }, { prompt: 'gated s' }] };
  const outcome = harness.client.prompt(root, `swarm ${JSON.stringify(args)}`);
  // The first child's `run` answered; its own child's result woke a turn of its `notify`, which blocks: now the
  // sibling completes, and the join cancels the first child there.
  await until(
    async () => harness.executions().includes(`start ${waiting} nb`),
    (started) => started,
  );
  await open(`${root}/t0.sw.1`);
  expect(await outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const results = toolResults(await harness.client.history(root));
  expect(results).toEqual([
    '<join policy="first(1)" outcome="met" completed="1"/>\n' +
      `<result task_id="t0.sw.0" agent_id="${waiting}" status="cancelled">` +
      "The task was cancelled: its batch's join policy was decided without it.</result>\n" +
      `<result task_id="t0.sw.1" agent_id="${root}/t0.sw.1" status="completed">did s</result>`,
  ]);
  // The blocked turn saw the abort once; the child's history is valid, its turn interrupted.
  expect(harness.executions().filter((line) => line === `aborted ${waiting} nb`)).toHaveLength(1);
  const childHistory = await harness.client.history(waiting);
  expectValidHistory(childHistory);
  expect(notificationsOf(childHistory)).toHaveLength(1);
  const embedded = await embeddedBoss(`swarm ${JSON.stringify(args)}`, {}, { gate: async () => {} });
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(results));
}, 120_000);
