import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { embeddedBoss, toolResults, withoutIds } from './fixtures/embedded.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';

// Background subagents on Restate as the embedded runtime has them: `task_status` and `task_cancel` through the
// parent's task book, a cancelled task reported `cancelled` once; the same script embedded gives the same texts.

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('tasks', { supervision: { keepHistory: 2 } });
}, 90_000);

afterAll(() => harness?.close());

const countOf = (line: string) => harness.executions().filter((l) => l === line).length;

it('task_status and task_cancel on Restate: a background task looked up, cancelled once, reported cancelled once, as embedded', async () => {
  const outcome = await harness.client.prompt('boss-tasks-1', 'tasks block b');
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'done' });
  const history = await until(
    () => harness.client.history('boss-tasks-1'),
    (h) => notificationsOf(h).length > 0,
  );
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second report, which must not come
  const final = await harness.client.history('boss-tasks-1');
  expectValidHistory(final);
  const child = 'boss-tasks-1/t0.a0';
  expect(toolResults(history)).toEqual([
    'Started in the background: task_id="t0.a0". Each result will arrive as a <notification>; use task_status ' +
      'or task_cancel with these ids meanwhile.',
    `task_id="t0.a0" agent_id="${child}" status="running"`,
    'started',
    'Task "t0.a0" is cancelled.',
    `task_id="t0.a0" agent_id="${child}" status="cancelled"\nThe task was cancelled before it finished.`,
    'Task "t0.a0" had already finished.',
  ]);
  expect(notificationsOf(final)).toEqual([
    `<notification task_id="t0.a0" agent_id="${child}" status="cancelled">The task was cancelled before it finished.</notification>`,
  ]);
  // The child saw the abort (its turn interrupted through Restate's cancel), and its history stays valid.
  expect(countOf(`start ${child} b`)).toBe(1);
  expect(countOf(`aborted ${child} b`)).toBe(1);
  expectValidHistory(await harness.client.history(child));
  // The same texts embedded, ids aside.
  const embedded = await embeddedBoss('tasks block b', {}, { notified: true });
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(toolResults(final)));
  expect(withoutIds(notificationsOf(embedded))).toEqual(withoutIds(notificationsOf(final)));
}, 120_000);

it("a background task cancelled by an operator (Restate's admin API) is reported cancelled, once, as task_cancel does", async () => {
  expect((await harness.client.prompt('boss-opcancel-1', 'background ["block b"]')).text).toBe('joined');
  const child = 'boss-opcancel-1/t0.a0';
  await until(
    async () => countOf(`start ${child} b`),
    (started) => started > 0,
  );
  const [invocation] = await sql<{ id: string }>(
    harness.server.adminUrl,
    `SELECT id FROM sys_invocation WHERE target_service_key = '${child}' AND target_handler_name = 'run'`,
  );
  const cancelled = await fetch(`${harness.server.adminUrl}/invocations/${invocation?.id}/cancel`, { method: 'PATCH' });
  expect(cancelled.ok).toBe(true);
  await until(
    () => harness.client.history('boss-opcancel-1'),
    (h) => notificationsOf(h).length > 0,
  );
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second report, which must not come
  expect(notificationsOf(await harness.client.history('boss-opcancel-1'))).toEqual([
    `<notification task_id="t0.a0" agent_id="${child}" status="cancelled">The task was cancelled before it finished.</notification>`,
  ]);
  expect(countOf(`aborted ${child} b`)).toBe(1);
  expectValidHistory(await harness.client.history(child));
}, 120_000);

it('task_status knows a finished foreground task, as embedded, until keepHistory newer ones have finished', async () => {
  const root = 'boss-foreground-1';
  expect((await harness.client.prompt(root, 'foreground')).text).toBe('done');
  const history = await harness.client.history(root);
  expectValidHistory(history);
  expect(toolResults(history)).toEqual([
    `<result task_id="t0.sw0.0" agent_id="${root}/t0.sw0.0" status="completed">did a</result>\n` +
      `<result task_id="t0.sw0.1" agent_id="${root}/t0.sw0.1" status="completed">did b</result>`,
    `task_id="t0.sw0.0" agent_id="${root}/t0.sw0.0" status="completed"\ndid a`,
    'Task "t0.sw0.0" had already finished.',
    `<result task_id="t0.sw3" agent_id="${root}/t0.sw3" status="completed">did c</result>`,
    'No task "t0.sw0.0" of yours is known.',
    `task_id="t0.sw3" agent_id="${root}/t0.sw3" status="completed"\ndid c`,
  ]);
  // The same texts embedded, ids aside.
  const embedded = await embeddedBoss('foreground', { keepHistory: 2 });
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(toolResults(history)));
}, 120_000);

it("a step's background `agent` calls start as one batch object's invocation, with one slot call, as a swarm does", async () => {
  const root = 'boss-bgstep-1';
  expect((await harness.client.prompt(root, 'background ["quick a", "quick b", "quick c"]')).text).toBe('joined');
  const history = await until(
    () => harness.client.history(root),
    (h) => notificationsOf(h).length === 3,
  );
  expect(notificationsOf(history).sort()).toEqual(
    ['a', 'b', 'c'].map(
      (what, i) =>
        `<notification task_id="t0.a${i}" agent_id="${root}/t0.a${i}" status="completed">did ${what}</notification>`,
    ),
  );
  const invocations = (handler: string, key: string) =>
    sql<{ n: number }>(
      harness.server.adminUrl,
      `SELECT count(*) AS n FROM sys_invocation WHERE target_handler_name = '${handler}' AND target_service_key LIKE '${key}'`,
    ).then(([row]) => Number(row?.n));
  expect(await invocations('supervise', `${root}/%`)).toBe(1);
  expect(await invocations('acquire', root)).toBe(1);
  expect(await invocations('batch', root)).toBe(1);
  expect(await invocations('run', `${root}/%`)).toBe(3);
}, 120_000);
