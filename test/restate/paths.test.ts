import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentEvent, Message } from '../../src/index.js';
import { INTERRUPTED_TEXT } from '../../src/protocol/index.js';
import { until } from '../helpers/until.js';
import { embeddedBoss, toolResults, withoutIds } from './fixtures/embedded.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { bookRecord, invocationsOf, openSlots, runAnswered } from './fixtures/tree-reads.js';

// A parent stops waiting for a foreground child whose `run` answered `waiting` (the child's turn has ended with a
// background child of its own still blocked), three ways: its turn is interrupted (control), Restate cancels its
// invocation (an operator), its own parent cancels its task (`task_cancel`). As embedded: the parent's turn ends
// with a valid history, the waiting child's task and its background child stop (once, no report to a parent that
// stopped waiting), the tree's slots come back, and the parent takes a later prompt.

const gates = new Map<string, () => void>();
const gateOf = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve));

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('paths', { gate: gateOf });
}, 90_000);

afterAll(() => harness?.close());

const countOf = (line: string) => harness.executions().filter((l) => l === line).length;
const record = (owner: string, taskId: string) => bookRecord(harness.server.ingressUrl, owner, taskId);
const slots = (root: string) => openSlots(harness.server.adminUrl, root);

/** Waits until `child` answered `waiting` and its background child blocks: the parent waits on the hand-off. */
async function untilWaiting(child: string, grandchild: string): Promise<void> {
  expect(
    await until(
      () => runAnswered(harness.server.adminUrl, child),
      (answered) => answered,
    ),
  ).toBe(true);
  expect(
    await until(
      async () => countOf(`start ${grandchild} b`),
      (n) => n === 1,
    ),
  ).toBe(1);
}

/**
 * The waiting child's subtree has stopped, as embedded: its background child's block saw the abort once and its
 * record says `interrupted` in the embedded words, the tree holds `slotsLeft` slots, and the cancelled child was
 * not woken by its child's end (no `notify` turn ran) nor reported to the parent that stopped waiting.
 */
async function expectStopped(root: string, child: string, grandchild: string, slotsLeft = 0): Promise<void> {
  await until(
    async () => countOf(`aborted ${grandchild} b`),
    (n) => n > 0,
  );
  const booked = await until(
    () => record(child, 't0.n'),
    (r) => r?.status !== 'running',
  );
  expect(booked).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  expect(
    await until(
      () => slots(root),
      (n) => n === slotsLeft,
    ),
  ).toBe(slotsLeft);
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second stop or report, which must not come
  expect(countOf(`start ${grandchild} b`)).toBe(1);
  expect(countOf(`aborted ${grandchild} b`)).toBe(1);
  expect(await record(child, 't0.n')).toMatchObject({ status: 'interrupted' });
  expect(await slots(root)).toBe(slotsLeft);
  const childHistory = await harness.client.history(child);
  expectValidHistory(childHistory);
  expect(notificationsOf(childHistory)).toEqual([]);
  expect(await invocationsOf(harness.server.adminUrl, child, 'notify')).toBe(0);
  expectValidHistory(await harness.client.history(grandchild));
}

/** The same script embedded, its root interrupted once the grandchild blocks and the child's turn has ended. */
async function embeddedInterrupted(ends: AgentEvent[]) {
  let blocked = false;
  let childIdle = false;
  return embeddedBoss(
    'paths interrupt',
    {},
    {
      on: (event) => {
        if (event.type === 'tool_execution_start' && event.toolName === 'block') blocked = true;
        if (event.type === 'agent_end' && event.agentId !== 'boss-embedded') childIdle = true;
        if (event.type === 'subagent_end') ends.push(event);
      },
      started: (root) => {
        void (async () => {
          for (let i = 0; i < 1_000 && !(blocked && childIdle); i++) await new Promise((r) => setTimeout(r, 5));
          root.interrupt();
        })();
      },
    },
  );
}

/**
 * A later prompt to the parent runs a new foreground child to its end, its history stays valid, and the tree's slots
 * come back to 0 (the new child's by a message the parent's turn sent: a send, no round-trip, so soon after).
 */
async function expectLaterPromptRuns(root: string): Promise<void> {
  expect((await harness.client.prompt(root, 'then quick z')).text).toBe('then: did z');
  expectValidHistory(await harness.client.history(root));
  expect(
    await until(
      () => slots(root),
      (n) => n === 0,
    ),
  ).toBe(0);
}

it('an interrupted parent stops its foreground child that waits for its own background child, as embedded', async () => {
  const root = 'boss-paths-1';
  const child = `${root}/t0.a0`;
  const grandchild = `${child}/t0.n`;
  const invocation = await harness.client.send(root, 'paths interrupt');
  await untilWaiting(child, grandchild);
  expect(await slots(root)).toBe(2);
  // What a client walking the tree sees (the CLI, for questions): the waiting child under the root, its child under it.
  expect(await harness.client.subagents(root)).toEqual([child]);
  expect(await harness.client.subagents(child)).toEqual([grandchild]);
  await harness.client.interrupt(root);
  expect(await harness.client.result(invocation)).toMatchObject({ stopReason: 'interrupted' });
  await expectStopped(root, child, grandchild);
  const history = await harness.client.history(root);
  expectValidHistory(history);
  expect(notificationsOf(history)).toEqual([]);
  // Its book knows the task ended interrupted, as the embedded tree's does.
  expect(await record(root, 't0.a0')).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  expect(await harness.client.subagents(root)).toEqual([]);
  expect(await harness.client.subagents(child)).toEqual([]);
  // A later prompt runs a new foreground child to its end.
  await expectLaterPromptRuns(root);
  // Embedded: the same tool result, and the child's task and its background child both end `interrupted`.
  const ends: AgentEvent[] = [];
  const embedded = await embeddedInterrupted(ends);
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(toolResults(history).slice(0, 1)));
  expect(ends.map((event) => event.type === 'subagent_end' && event.status).sort()).toEqual([
    'interrupted',
    'interrupted',
  ]);
}, 120_000);

it("an interrupted parent cancels its waiting foreground child's turn that a notification woke, once", async () => {
  const root = 'boss-paths-4';
  const child = `${root}/t0.a0`;
  const invocation = await harness.client.send(root, 'paths interrupt-busy');
  // The child's `run` answered `waiting`; its child's result woke a turn of its `notify`, which blocks.
  await until(
    async () => countOf(`start ${child} nb`),
    (n) => n === 1,
  );
  expect(await harness.client.subagents(root)).toEqual([child]);
  await harness.client.interrupt(root);
  expect(await harness.client.result(invocation)).toMatchObject({ stopReason: 'interrupted' });
  // The cancel rang the child's running turn: its block saw the abort once, its history is valid with the one
  // notification, and it reported to nobody (the root heard nothing).
  await until(
    async () => countOf(`aborted ${child} nb`),
    (n) => n > 0,
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(countOf(`aborted ${child} nb`)).toBe(1);
  expect(countOf(`start ${child} nb`)).toBe(1);
  const childHistory = await harness.client.history(child);
  expectValidHistory(childHistory);
  expect(notificationsOf(childHistory)).toHaveLength(1);
  expect(await invocationsOf(harness.server.adminUrl, child, 'notify')).toBe(1);
  const history = await harness.client.history(root);
  expectValidHistory(history);
  expect(notificationsOf(history)).toEqual([]);
  expect(await record(root, 't0.a0')).toMatchObject({ status: 'interrupted', text: INTERRUPTED_TEXT });
  expect(
    await until(
      () => slots(root),
      (n) => n === 0,
    ),
  ).toBe(0);
  expect((await harness.client.prompt(root, 'then quick z')).text).toBe('then: did z');
}, 120_000);

it("a parent whose invocation Restate cancels stops its waiting foreground child's subtree too", async () => {
  const root = 'boss-paths-2';
  const child = `${root}/t0.a0`;
  const grandchild = `${child}/t0.n`;
  const invocation = await harness.client.send(root, 'paths cancel');
  await untilWaiting(child, grandchild);
  const cancelled = await fetch(`${harness.server.adminUrl}/invocations/${invocation}/cancel`, { method: 'PATCH' });
  expect(cancelled.ok).toBe(true);
  // The turn ends interrupted (a cancelled embedded agent's turn is interrupted too), its history stored and valid.
  expect(await harness.client.result(invocation)).toMatchObject({ stopReason: 'interrupted' });
  await expectStopped(root, child, grandchild);
  expect(await harness.client.subagents(root)).toEqual([]); // the list is cleared on a cancel too
  const history = await harness.client.history(root);
  expectValidHistory(history);
  expect(notificationsOf(history)).toEqual([]);
  await expectLaterPromptRuns(root);
  const ends: AgentEvent[] = [];
  const embedded = await embeddedInterrupted(ends);
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(toolResults(history).slice(0, 1)));
}, 120_000);

it('task_cancel of a background child that waits for its waiting foreground child stops the whole subtree', async () => {
  const root = 'boss-paths-3';
  const parent = `${root}/t0.a0`;
  const child = `${parent}/t0.f`;
  const grandchild = `${child}/t0.n`;
  const outcome = harness.client.prompt(root, 'paths task-cancel');
  await untilWaiting(child, grandchild);
  expect(await slots(root)).toBe(3);
  expect(await harness.client.subagents(root)).toEqual([parent]);
  expect(await harness.client.subagents(parent)).toEqual([child]);
  gates.get(root)?.(); // the root goes on to `task_cancel`
  // The `cancelled` notification joins the turn that cancelled, at its next step, as embedded (compared below).
  expect(await outcome).toMatchObject({ stopReason: 'completed', text: 'noted' });
  await expectStopped(root, child, grandchild);
  // The cancelled background child's turn ended interrupted with a valid history; its own parent heard `cancelled`
  // once (from its book, at the cancel), nothing else.
  const parentHistory = await harness.client.history(parent);
  expectValidHistory(parentHistory);
  expect(await harness.client.subagents(parent)).toEqual([]);
  expect(await harness.client.subagents(root)).toEqual([]);
  expect(notificationsOf(parentHistory)).toEqual([]);
  const history = await until(
    () => harness.client.history(root),
    (h) => notificationsOf(h).length > 0,
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(notificationsOf(await harness.client.history(root))).toEqual([
    `<notification task_id="t0.a0" agent_id="${parent}" status="cancelled">The task was cancelled before it finished.</notification>`,
  ]);
  expectValidHistory(history);
  await expectLaterPromptRuns(root);
  // Embedded: the same tool results and notification (the gate opened once the grandchild blocks).
  let blocked = false;
  const embedded = await embeddedBoss(
    'paths task-cancel',
    {},
    {
      notified: true,
      on: (event) => {
        if (event.type === 'tool_execution_start' && event.toolName === 'block') blocked = true;
      },
      gate: async () => {
        for (let i = 0; i < 1_000 && !blocked; i++) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, 50));
      },
    },
  );
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(toolResults(history).slice(0, 3)));
  expect(withoutIds(notificationsOf(embedded))).toEqual(withoutIds(notificationsOf(history)));
  const sources = (messages: readonly Message[]) =>
    messages.map((message) => `${message.role} ${message.role === 'user' ? message.source : ''}`);
  expect(sources(history.slice(0, embedded.length))).toEqual(sources(embedded));
}, 120_000);
