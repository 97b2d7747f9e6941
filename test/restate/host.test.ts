import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../../src/index.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory } from './fixtures/histories.js';

// Troupe agents on a real restate-server (the dev dependency's binary, loopback, random ports, a temporary data
// folder), served by a worker in this process. The crash test (crash.test.ts) runs its worker in a child process.

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('host');
}, 90_000);

afterAll(() => harness?.close());

const executions = () => harness.executions();

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('agents as Restate virtual objects', () => {
  it('runs a turn with journaled model and tool calls, and keeps the conversation in the object', async () => {
    const first = await harness.client.prompt('plain-1', 'count twice');
    expect(first).toMatchObject({ agentId: 'plain-1', stopReason: 'completed', text: 'saw 2 results' });
    expect(executions().filter((line) => line.includes('plain-1'))).toHaveLength(2);

    // The second turn starts from the stored history: the model sees the first turn's two results already.
    const second = await harness.client.prompt('plain-1', 'again');
    expect(second.text).toBe('saw 2 results');
    const history = await harness.client.history('plain-1');
    expect(history.filter((message) => message.role === 'user')).toHaveLength(2);
    expectValidHistory(history);
    // Three model calls in the first turn, one in the second (it had two results already), 10 + 5 tokens each.
    expect(await harness.client.usage('plain-1')).toMatchObject({ input: 40, output: 20 });
  });

  it('ends a turn on a model error that the journal keeps, and stores the prompt', async () => {
    const outcome = await harness.client.prompt('broken-1', 'hello');
    expect(outcome).toMatchObject({ agentId: 'broken-1', stopReason: 'error' });
    expect(await harness.client.history('broken-1')).toEqual([expect.objectContaining({ role: 'user' })]);
  });

  it('holds a call for approval on an awakeable that an HTTP call resolves', async () => {
    const turn = harness.client.prompt('approver-1', 'prod');
    await eventually(
      () => harness.client.approve('approver-1', { toolCallId: 'd-prod', approve: true }),
      (answered) => answered,
      'the approval to be asked',
    );
    expect((await turn).text).toBe('deploy answered');
    const history = await harness.client.history('approver-1');
    expectValidHistory(history);
    const result = history.find((message) => message.role === 'tool');
    expect(JSON.stringify(result)).toContain('deployed prod');
    expect(executions().filter((line) => line === 'ran approver-1 d-prod')).toHaveLength(1);
    // Answered once: the awakeable's id is gone.
    expect(await harness.client.approve('approver-1', { toolCallId: 'd-prod', approve: true })).toBe(false);

    const denied = harness.client.prompt('approver-2', 'staging');
    await eventually(
      () => harness.client.approve('approver-2', { toolCallId: 'd-staging', approve: false, reason: 'not today' }),
      (answered) => answered,
      'the second approval to be asked',
    );
    await denied;
    expect(JSON.stringify(await harness.client.history('approver-2'))).toContain('not today');
    expect(executions().filter((line) => line.includes('approver-2'))).toHaveLength(0);
  });

  it('denies a call nobody approves in time, on a durable timer', async () => {
    expect((await harness.client.prompt('approver-timed-1', 'prod')).text).toBe('deploy answered');
    expect(JSON.stringify(await harness.client.history('approver-timed-1'))).toContain('no answer within 300 ms');
    expect(executions().filter((line) => line.includes('approver-timed-1'))).toHaveLength(0);
  });

  it('runs subagents as other objects whose results reach the parent once each, as messages', async () => {
    const started = await harness.client.prompt('parent-1', 'start 4');
    expect(started.text).toBe('started them');
    const history = await eventually(
      () => harness.client.history('parent-1'),
      (messages) => messages.filter(isNotification).length >= 4,
      'four notifications',
    );
    // Give a duplicate (which must not exist) the time to arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const final = await harness.client.history('parent-1');
    const notes = final.filter(isNotification).map((message) => textOf(message));
    expect(notes).toHaveLength(4);
    for (let i = 0; i < 4; i++) {
      expect(notes.filter((note) => note.includes(`task_id="t0.s${i}"`))).toHaveLength(1);
      expect(notes.find((note) => note.includes(`task_id="t0.s${i}"`))).toContain(`did: part ${i}`);
    }
    expectValidHistory(history);
    const child = await harness.client.history('parent-1/t0.s2');
    expect(child[0]).toMatchObject({ role: 'user' });
    expect(textOf(child.at(-1) as Message)).toBe('child parent-1/t0.s2 did: part 2');
    // Usage is per agent: the parent's four turns (start + 4 notifications: 2 + 4 calls), each child its own.
    expect(await harness.client.usage('parent-1')).toMatchObject({ input: 60, output: 30 });
    expect(await harness.client.usage('parent-1/t0.s0')).toMatchObject({ input: 10, output: 5 });
  });
});

it("a batch's calls run together: three calls that each wait for the other two all meet", async () => {
  // Run one after the other, each would give up waiting (3 s) and say it was alone.
  expect((await harness.client.prompt('meety-1', 'meet')).text).toBe('met');
  const history = await harness.client.history('meety-1');
  expectValidHistory(history);
  const results = history.flatMap((message) => (message.role === 'tool' ? message.content : []));
  expect(results.map((result) => [result.toolCallId, JSON.stringify(result.content)])).toEqual([
    ['m1', expect.stringContaining('met all 3')],
    ['m2', expect.stringContaining('met all 3')],
    ['m3', expect.stringContaining('met all 3')],
  ]);
  expect(executions().filter((line) => line.startsWith('start meety-1 '))).toHaveLength(3);
}, 60_000);

it('a hung tool ends on its timeout, the turn goes on, and the agent takes its next prompt', async () => {
  // The tool never returns and ignores its signal: the runtime's timeout gives up on it, and the journaled run ends
  // with the abort (else it would hold every later effect of the turn, and the object's key, forever).
  const outcome = await harness.client.prompt('hung-1', 'hang');
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'went on after 1 result' });
  expect(executions().filter((line) => line === 'start hung-1 h1')).toHaveLength(1);
  // The key is free: a later prompt to the same agent runs.
  expect((await harness.client.prompt('hung-1', 'again')).text).toBe('again answered');
  const history = await harness.client.history('hung-1');
  expectValidHistory(history);
  const result = history.find((message) => message.role === 'tool');
  expect(JSON.stringify(result)).toContain('timed out after 300 ms');
});

function textOf(message: Message): string {
  return message.role === 'tool' ? '' : message.content.map((part) => ('text' in part ? part.text : '')).join('');
}

function isNotification(message: Message): boolean {
  return message.role === 'user' && textOf(message).startsWith('<notification');
}
