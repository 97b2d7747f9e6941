import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type Message, type ModelRequest, scriptedModel } from '../../src/index.js';
import { bossAnswer, taskOf } from './fixtures/agents.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';

// Foreground batches on Restate: the `swarm` tool with join policies, each task a child object, the join decided
// in the parent's invocation. The same swarm embedded gives the same tool result (ids aside).

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('swarm');
}, 90_000);

afterAll(() => harness?.close());

const executions = () => harness.executions();
const countOf = (line: string) => executions().filter((l) => l === line).length;

/** The text of the result a history gives a tool call. */
function resultOf(history: Message[], toolCallId: string): string {
  for (const message of history) {
    if (message.role !== 'tool') continue;
    const result = message.content.find((part) => part.toolCallId === toolCallId);
    if (result) return result.content.map((part) => ('text' in part ? part.text : '')).join('');
  }
  throw new Error(`no result for ${toolCallId}`);
}

/** A swarm result with its ids taken out, to compare hosts that name tasks differently. */
const withoutIds = (text: string) => text.replace(/task_id="[^"]*" agent_id="[^"]*"/g, 'task_id="…" agent_id="…"');

const ANY = { join: 'any', tasks: [{ prompt: 'quick a' }, { prompt: 'block b' }, { prompt: 'block c' }] };

/** The same swarm on the embedded runtime: the tool result its root's history holds. */
async function embeddedSwarm(args: object): Promise<string> {
  const block = defineTool({
    name: 'block',
    description: 'Blocks until aborted',
    schema: z.object({}),
    execute: (_args, ctx) =>
      new Promise<string>((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('x')))),
  });
  const model = scriptedModel((request: ModelRequest) => {
    const results = request.messages.filter((message) => message.role === 'tool').length;
    const last = request.messages.at(-1);
    const lastText = last?.role === 'user' ? last.content.map((p) => ('text' in p ? p.text : '')).join('') : '';
    return bossAnswer(taskOf(request).startsWith('swarm '), request, results, lastText);
  });
  const root = createAgent({ id: 'boss-embedded', model, tools: [block], subagents: {} });
  await root.prompt(`swarm ${JSON.stringify(args)}`);
  const history = root.messages;
  await root.stop();
  return resultOf([...history], 'sw');
}

it('first(1) on Restate: the first to complete wins, the running losers are cancelled and their tools see the abort', async () => {
  const outcome = await harness.client.prompt('boss-any-1', `swarm ${JSON.stringify(ANY)}`);
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const history = await harness.client.history('boss-any-1');
  expectValidHistory(history);
  const result = resultOf(history, 'sw');
  expect(result).toBe(
    '<join policy="first(1)" outcome="met" completed="1"/>\n' +
      '<result task_id="t0.sw.0" agent_id="boss-any-1/t0.sw.0" status="completed">did a</result>\n' +
      '<result task_id="t0.sw.1" agent_id="boss-any-1/t0.sw.1" status="cancelled">' +
      "The task was cancelled: its batch's join policy was decided without it.</result>\n" +
      '<result task_id="t0.sw.2" agent_id="boss-any-1/t0.sw.2" status="cancelled">' +
      "The task was cancelled: its batch's join policy was decided without it.</result>",
  );
  for (const loser of ['boss-any-1/t0.sw.1', 'boss-any-1/t0.sw.2']) {
    // A loser cancelled in its tool saw the abort; one cancelled before it never ran it. Neither runs it again.
    const started = countOf(`start ${loser} b`);
    expect(started).toBeLessThanOrEqual(1);
    expect(countOf(`aborted ${loser} b`)).toBe(started);
    const childHistory = await harness.client.history(loser);
    expectValidHistory(childHistory);
    // Its prompt is stored once its turn has begun; a loser cancelled at its turn's first wait (the take, a state
    // read) has no turn stored, as a queued embedded loser never ran.
    const prompts = childHistory.filter((message) => message.role === 'user').length;
    if (started === 1) expect(prompts).toBe(1);
    else expect(prompts).toBeLessThanOrEqual(1);
  }
  // Same text embedded, ids aside.
  expect(withoutIds(await embeddedSwarm(ANY))).toBe(withoutIds(result));
}, 120_000);

it('quorum(2) on Restate: failed as soon as two completions cannot be reached, the rest cancelled, as embedded', async () => {
  const args = { join: 'quorum', k: 2, tasks: [{ prompt: 'fail a' }, { prompt: 'fail b' }, { prompt: 'block c' }] };
  await harness.client.prompt('boss-quorum-1', `swarm ${JSON.stringify(args)}`);
  const history = await harness.client.history('boss-quorum-1');
  expectValidHistory(history);
  const result = resultOf(history, 'sw');
  expect(result).toBe(
    '<join policy="quorum(2)" outcome="failed" completed="0"/>\n' +
      '<result task_id="t0.sw.0" agent_id="boss-quorum-1/t0.sw.0" status="failed">' +
      'The subagent failed: The key for a was refused</result>\n' +
      '<result task_id="t0.sw.1" agent_id="boss-quorum-1/t0.sw.1" status="failed">' +
      'The subagent failed: The key for b was refused</result>\n' +
      '<result task_id="t0.sw.2" agent_id="boss-quorum-1/t0.sw.2" status="cancelled">' +
      "The task was cancelled: its batch's join policy was decided without it.</result>",
  );
  // The loser's tool saw the abort (it ran once, while the failing tasks were restarted).
  expect(countOf('start boss-quorum-1/t0.sw.2 b')).toBe(1);
  expect(countOf('aborted boss-quorum-1/t0.sw.2 b')).toBe(1);
  expect(withoutIds(await embeddedSwarm(args))).toBe(withoutIds(result));
}, 120_000);

it('allSettled on Restate: every task settles, a failure included, and the join is met, as embedded', async () => {
  const args = { join: 'allSettled', tasks: [{ prompt: 'quick a' }, { prompt: 'fail b' }] };
  await harness.client.prompt('boss-settled-1', `swarm ${JSON.stringify(args)}`);
  const history = await harness.client.history('boss-settled-1');
  expectValidHistory(history);
  const result = resultOf(history, 'sw');
  expect(result).toBe(
    '<join policy="allSettled" outcome="met" completed="1"/>\n' +
      '<result task_id="t0.sw.0" agent_id="boss-settled-1/t0.sw.0" status="completed">did a</result>\n' +
      '<result task_id="t0.sw.1" agent_id="boss-settled-1/t0.sw.1" status="failed">' +
      'The subagent failed: The key for b was refused</result>',
  );
  expect(withoutIds(await embeddedSwarm(args))).toBe(withoutIds(result));
}, 120_000);

it('a failed task is restarted from its prompt with a fresh history after a durable backoff', async () => {
  const args = { tasks: [{ prompt: 'quick a' }, { prompt: 'flaky b' }] };
  await harness.client.prompt('boss-restart-1', `swarm ${JSON.stringify(args)}`);
  const history = await harness.client.history('boss-restart-1');
  expect(resultOf(history, 'sw')).toBe(
    '<result task_id="t0.sw.0" agent_id="boss-restart-1/t0.sw.0" status="completed">did a</result>\n' +
      '<result task_id="t0.sw.1" agent_id="boss-restart-1/t0.sw.1" status="completed">recovered b</result>',
  );
  // Its model was asked twice (the refused attempt, the restart); the restart began again from the prompt alone.
  expect(countOf('model boss-restart-1/t0.sw.1')).toBe(2);
  const child = await harness.client.history('boss-restart-1/t0.sw.1');
  expect(child.map((message) => message.role)).toEqual(['user', 'assistant']);
}, 120_000);

it("a step's agent calls run their children at once, as embedded", async () => {
  // Each child waits in its `meet` call for the other two; run one after the other, each would give up alone.
  const prompts = ['meet r1 a', 'meet r1 b', 'meet r1 c'];
  expect((await harness.client.prompt('boss-agents-1', `agents ${JSON.stringify(prompts)}`)).text).toBe('joined');
  const history = await harness.client.history('boss-agents-1');
  expectValidHistory(history);
  for (const id of ['a0', 'a1', 'a2']) expect(resultOf(history, id)).toContain('met all 3');
}, 120_000);

it('a failed background subagent is restarted after a durable backoff before it reports, once', async () => {
  expect((await harness.client.prompt('boss-bg-1', 'background ["flaky b"]')).text).toBe('joined');
  let history: Message[] = [];
  for (let i = 0; i < 600 && notificationsOf(history).length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    history = await harness.client.history('boss-bg-1');
  }
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second report, which must not come
  const notes = notificationsOf(await harness.client.history('boss-bg-1'));
  expect(notes).toEqual([expect.stringMatching(/status="completed">recovered b</)]);
  expect(countOf('model boss-bg-1/t0.a0')).toBe(2);
  expect((await harness.client.history('boss-bg-1/t0.a0')).map((message) => message.role)).toEqual([
    'user',
    'assistant',
  ]);
}, 120_000);

it('interrupting a parent during a foreground swarm cancels its children: their tools see the abort', async () => {
  const args = { tasks: [{ prompt: 'block b' }, { prompt: 'block c' }] };
  const invocation = await harness.client.send('boss-int-1', `swarm ${JSON.stringify(args)}`);
  const children = ['boss-int-1/t0.sw.0', 'boss-int-1/t0.sw.1'];
  for (let i = 0; i < 600 && children.some((child) => countOf(`start ${child} b`) === 0); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await harness.client.interrupt('boss-int-1');
  expect(await harness.client.result(invocation)).toMatchObject({ stopReason: 'interrupted' });
  expectValidHistory(await harness.client.history('boss-int-1'));
  for (const child of children) {
    expect(countOf(`start ${child} b`)).toBe(1);
    expect(countOf(`aborted ${child} b`)).toBe(1);
    expectValidHistory(await harness.client.history(child));
  }
}, 120_000);
