import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type Message, type ModelRequest, scriptedModel } from '../../src/index.js';
import { bossAnswer, taskOf } from './fixtures/agents.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';

// Background subagents on Restate as the embedded runtime has them: `task_status` and `task_cancel` through the
// parent's task book, a cancelled task reported `cancelled` once; the same script embedded gives the same texts.

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('tasks');
}, 90_000);

afterAll(() => harness?.close());

const countOf = (line: string) => harness.executions().filter((l) => l === line).length;

/** Every tool result of a history, in order, as text. */
function toolResults(history: readonly Message[]): string[] {
  return history.flatMap((message) =>
    message.role === 'tool'
      ? message.content.map((result) => result.content.map((part) => ('text' in part ? part.text : '')).join(''))
      : [],
  );
}

/** Texts with the ids taken out, to compare hosts that name tasks differently. */
const withoutIds = (texts: string[]) =>
  texts.map((text) => text.replace(/(task_id|agent_id)="[^"]*"/g, '$1="…"').replace(/Task "[^"]*"/g, 'Task "…"'));

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 600 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** The same script on the embedded runtime: its root's history once the notification turn has run. */
async function embeddedTasks(prompt: string): Promise<Message[]> {
  const started = new Set<string>();
  const block = defineTool({
    name: 'block',
    description: 'Blocks until aborted',
    schema: z.object({}),
    execute: (_args, ctx) => {
      started.add(ctx.agentId);
      return new Promise<string>((_resolve, reject) =>
        ctx.signal.addEventListener('abort', () => reject(new Error('x'))),
      );
    },
  });
  const untilStarted = defineTool({
    name: 'until_started',
    description: 'Waits for a block call to start',
    schema: z.object({ agent: z.string() }),
    execute: async ({ agent }) => {
      for (let i = 0; i < 1_000 && !started.has(agent); i++) await new Promise((resolve) => setTimeout(resolve, 5));
      return started.has(agent) ? 'started' : 'never started';
    },
  });
  const model = scriptedModel((request: ModelRequest) => {
    const results = request.messages.filter((message) => message.role === 'tool').length;
    const last = request.messages.at(-1);
    const lastText = last?.role === 'user' ? last.content.map((p) => ('text' in p ? p.text : '')).join('') : '';
    return bossAnswer(taskOf(request).startsWith('tasks '), request, results, lastText);
  });
  const root = createAgent({ id: 'boss-embedded', model, tools: [block, untilStarted], subagents: {} });
  await root.prompt(`tasks ${prompt}`);
  // The notification wakes the root for a turn of its own, which answers `noted`.
  const answered = () => {
    const last = root.messages.at(-1);
    return last?.role === 'assistant' && last.content.some((part) => part.type === 'text' && part.text === 'noted');
  };
  for (let i = 0; i < 600 && !answered(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const history = [...root.messages];
  await root.stop();
  return history;
}

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
  const embedded = await embeddedTasks('block b');
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
    `SELECT id FROM sys_invocation WHERE target_service_key = '${child}' AND target_handler_name = 'task'`,
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
