import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Message } from '../../src/index.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory } from './fixtures/histories.js';
import { untilJournaled } from './fixtures/journal.js';

// Steering and interrupting hosted turns (src/restate/control.ts), on a real restate-server with the worker in this
// process, so that the `gated` tool waits for a gate the test opens. crash.test.ts kills a worker with a steer
// accepted and not yet taken.
const gates = new Map<string, () => void>();
const opened = new Map<string, Promise<void>>();

/** The gate of an agent's `gated` calls: closed until the test opens it. */
function gate(agentId: string): Promise<void> {
  let promise = opened.get(agentId);
  if (!promise) {
    promise = new Promise<void>((resolve) => gates.set(agentId, resolve));
    opened.set(agentId, promise);
  }
  return promise;
}
const open = (agentId: string) => {
  void gate(agentId);
  gates.get(agentId)?.();
};

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('control', { gate });
}, 90_000);

afterAll(() => harness?.close());

const executions = () => harness.executions();

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

const userTexts = (history: Message[]) =>
  history.flatMap((m) => (m.role === 'user' ? [m.content.map((p) => ('text' in p ? p.text : '')).join('')] : []));

it('a steer joins the running turn at its next step boundary, once', async () => {
  const turn = await harness.client.send('steer-1', 'work');
  await until(() => executions().includes('start steer-1 g1'), 'the gated tool to start');
  const steer = await harness.client.steer('steer-1', 'also tea');
  // The turn has taken it (the take is a call in the turn's journal) while its tool still runs.
  await untilJournaled(harness.server.adminUrl, turn, "entry_type = 'Command: Call'", 'the take');
  open('steer-1');
  const outcome = await harness.client.result(turn);
  // The model was asked again after the tool's result with the steer in the history: it heard both.
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'heard: work | also tea' });
  const history = await harness.client.history('steer-1');
  expectValidHistory(history);
  const steered = history.findIndex((m) => m.role === 'user' && m.source === 'steer');
  expect(history[steered - 1]?.role).toBe('tool');
  // The fallback that the steer also sent ran after the turn and found nothing left: no second turn. (The prompt
  // below is queued behind it, once the steer's own invocation has finished.)
  await harness.client.result(steer);
  expect((await harness.client.prompt('steer-1', 'bye')).text).toBe('heard: work | also tea | bye');
  expect(userTexts(await harness.client.history('steer-1'))).toEqual(['work', 'also tea', 'bye']);
  expect(executions().filter((line) => line === 'ran steer-1 g1')).toHaveLength(1);
}, 60_000);

it('an interrupt ends the running turn with a valid history, and the agent takes its next prompt', async () => {
  // The gate is never opened and the tool ignores its signal: only the interrupt ends the call.
  const turn = await harness.client.send('steer-stop-1', 'work');
  await until(() => executions().includes('start steer-stop-1 g1'), 'the gated tool to start');
  await harness.client.interrupt('steer-stop-1');
  const outcome = await harness.client.result(turn);
  expect(outcome).toMatchObject({ agentId: 'steer-stop-1', stopReason: 'interrupted' });
  const history = await harness.client.history('steer-stop-1');
  expectValidHistory(history);
  const result = history.find((m) => m.role === 'tool');
  expect(JSON.stringify(result)).toContain('interrupted');
  expect(executions()).not.toContain('ran steer-stop-1 g1');
  // The key is free and the conversation goes on from the stored history.
  expect((await harness.client.prompt('steer-stop-1', 'again')).text).toBe('heard: work | again');
  expectValidHistory(await harness.client.history('steer-stop-1'));
}, 60_000);

it('a steer with no turn running starts one; an interrupt with none running changes nothing', async () => {
  await harness.client.result(await harness.client.interrupt('steer-idle-1'));
  await harness.client.steer('steer-idle-1', 'hello');
  await until(async () => (await harness.client.history('steer-idle-1')).length >= 2, 'the steer to be answered');
  const history = await harness.client.history('steer-idle-1');
  expect(userTexts(history)).toEqual(['hello']);
  expect(history.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'heard: hello' }] });
  expect((await harness.client.prompt('steer-idle-1', 'next')).text).toBe('heard: hello | next');
}, 60_000);
