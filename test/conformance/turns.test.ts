import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectValidHistory } from '../restate/fixtures/histories.js';
import { HOSTS, type Host } from './hosts.js';
import { log, logged, openGate, resetLog, toolTexts, userTexts } from './script.js';

// Turns, steps, steers, interrupts, approvals, stop reasons and usage: the same scenario and the same assertions on
// every host (hosts.ts). Each scenario has a root of its own.

describe.each(HOSTS)('%s', (_name, start) => {
  let host: Host;
  beforeAll(async () => {
    host = await start();
  }, 90_000);
  afterAll(() => host?.close());
  beforeEach(resetLog);

  const roles = async (root: string) => (await host.history(root)).map((message) => message.role);

  it('a turn without tools answers once', async () => {
    expect(await host.prompt('hello-1', '#hello')).toEqual({
      stopReason: 'completed',
      text: 'hello back',
      usage: expect.objectContaining({ input: 10, output: 5 }),
    });
    expect(await roles('hello-1')).toEqual(['user', 'assistant']);
  });

  it('each step runs its tools and feeds their results to the next step', async () => {
    const outcome = await host.prompt('count-1', '#count 2');
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'saw 2 results' });
    expect(await roles('count-1')).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect(toolTexts(await host.history('count-1'))).toEqual(['counted 0', 'counted 1']);
    expect(log).toEqual(['ran count 0', 'ran count 1']);
  });

  it("a step's calls answer in one tool message, in call order", async () => {
    await host.prompt('batch-1', '#batch');
    const history = await host.history('batch-1');
    expectValidHistory(history);
    expect(toolTexts(history)).toEqual(['counted 1', 'counted 2', 'counted 3']);
    expect([...log].sort()).toEqual(['ran count 1', 'ran count 2', 'ran count 3']);
  });

  it('a tool that throws gives the model an error result; the turn goes on', async () => {
    const outcome = await host.prompt('explode-1', '#explode');
    expect(outcome).toMatchObject({ stopReason: 'completed' });
    expect(outcome.text).toContain('the fuse was short');
    expect(outcome.text).toBe(`saw: ${toolTexts(await host.history('explode-1'))[0]}`);
  });

  it('a call of an unknown tool gives the model an error result naming it', async () => {
    const outcome = await host.prompt('unknown-1', '#unknown');
    expect(outcome.stopReason).toBe('completed');
    expect(outcome.text).toMatch(/^saw: .*nope/);
  });

  it('usage: a turn adds up its steps; the agent adds up its turns', async () => {
    const first = await host.prompt('usage-1', '#count 2');
    expect(first.usage).toMatchObject({ input: 30, output: 15 });
    const second = await host.prompt('usage-1', '#hello');
    expect(second.usage).toMatchObject({ input: 10, output: 5 });
    expect(await host.usage('usage-1')).toMatchObject({ input: 40, output: 20 });
  });

  it('a second turn continues the history of the first', async () => {
    await host.prompt('echo-1', '#echo');
    expect((await host.prompt('echo-1', 'and then')).text).toBe('heard: #echo | and then');
    expect(userTexts(await host.history('echo-1'))).toEqual(['#echo', 'and then']);
  });

  it('stop reason max_steps: a turn that calls tools past maxSteps stops', async () => {
    const outcome = await host.prompt('steps-1', '#loop');
    expect(outcome.stopReason).toBe('max_steps');
    expect(log).toEqual(['ran count 0', 'ran count 1', 'ran count 2']);
    expectValidHistory(await host.history('steps-1'));
  });

  it('stop reason error: a model error no retry helps ends the turn', async () => {
    const outcome = await host.prompt('broken-1', '#broken');
    expect(outcome.stopReason).toBe('error');
    expect(await roles('broken-1')).toEqual(['user']);
  });

  it('stop reason budget_exhausted: a turn past its token budget stops before its next model call', async () => {
    const outcome = await host.prompt('budget-1', '#loop');
    expect(outcome.stopReason).toBe('budget_exhausted');
    // The third answer takes it to 45 of 40 tokens: its call does not run.
    expect(outcome.usage).toMatchObject({ input: 30, output: 15 });
    expect(log).toEqual(['ran count 0', 'ran count 1']);
  });

  it('a steer joins the running turn at its next step boundary, once', async () => {
    const turn = await host.send('steer-1', '#work s1');
    await logged('start gated s1');
    await host.steer('steer-1', 'also tea');
    openGate('s1');
    expect(await turn.outcome).toMatchObject({ stopReason: 'completed', text: 'heard: #work s1 | also tea' });
    const history = await host.history('steer-1');
    expectValidHistory(history);
    expect(history.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
  });

  it('steers sent during one step join together, in the order sent', async () => {
    const turn = await host.send('steer-2', '#work s2');
    await logged('start gated s2');
    await host.steer('steer-2', 'one');
    await host.steer('steer-2', 'two');
    openGate('s2');
    expect((await turn.outcome).text).toBe('heard: #work s2 | one | two');
    expect(userTexts(await host.history('steer-2'))).toEqual(['#work s2', 'one', 'two']);
  });

  it('a steer to an idle agent starts a turn with it', async () => {
    await host.prompt('echo-2', '#echo');
    await host.steer('echo-2', 'are you there');
    const history = await untilRoles(host, 'echo-2', 4);
    expect(userTexts(history)).toEqual(['#echo', 'are you there']);
    expect(history.at(-1)).toMatchObject({ role: 'assistant' });
  });

  it('an interrupt ends the running turn: its open call gets an interrupted result', async () => {
    const turn = await host.send('interrupt-1', '#work i1');
    await logged('start gated i1');
    await host.interrupt('interrupt-1');
    expect((await turn.outcome).stopReason).toBe('interrupted');
    const history = await host.history('interrupt-1');
    expectValidHistory(history);
    expect(toolTexts(history)[0]).toMatch(/interrupted/i);
    expect(log).not.toContain('ran gated i1');
  });

  it('after an interrupt the next turn runs on a valid history', async () => {
    const turn = await host.send('interrupt-2', '#work i2');
    await logged('start gated i2');
    await host.interrupt('interrupt-2');
    await turn.outcome;
    openGate('i2');
    const next = await host.prompt('interrupt-2', 'go on');
    expect(next).toMatchObject({ stopReason: 'completed', text: 'heard: #work i2 | go on' });
    expectValidHistory(await host.history('interrupt-2'));
  });

  it('an interrupt with no turn running changes nothing', async () => {
    await host.prompt('echo-3', '#echo');
    await host.interrupt('echo-3');
    expect((await host.prompt('echo-3', 'still here')).text).toBe('heard: #echo | still here');
  });

  it('an approved call runs once and the model sees its result', async () => {
    const turn = await host.send('deploy-1', '#deploy prod');
    const asked = await host.approval('deploy-1', 'deploy');
    expect(await asked.answer(true)).toBe(true);
    expect(await turn.outcome).toMatchObject({ stopReason: 'completed', text: 'deploy answered: deployed prod' });
    expect(log).toEqual(['ran deploy prod']);
    expect(await asked.answer(true)).toBe(false);
  });

  it('a denied call does not run; the model sees the reason', async () => {
    const turn = await host.send('deploy-2', '#deploy staging');
    await (await host.approval('deploy-2', 'deploy')).answer(false, 'not today');
    const outcome = await turn.outcome;
    expect(outcome.text).toMatch(/^deploy answered: .*not today/);
    expect(log).toEqual([]);
  });
});

/** Waits until the root's history has `count` messages. */
async function untilRoles(host: Host, root: string, count: number) {
  for (let i = 0; i < 1_200; i++) {
    const history = await host.history(root);
    if (history.length >= count) return history;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return host.history(root);
}
