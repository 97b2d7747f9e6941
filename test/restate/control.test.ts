import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { type Agent, createAgent, defineTool, type Message, scriptedModel } from '../../src/index.js';
import { notificationMessage } from '../../src/protocol/index.js';
import { waitUntil } from '../helpers/until.js';
import { answerFor } from './fixtures/agents.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import { takesAnswered } from './fixtures/journal.js';

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

const userTexts = (history: Message[]) =>
  history.flatMap((m) => (m.role === 'user' ? [m.content.map((p) => ('text' in p ? p.text : '')).join('')] : []));
/** A history's user messages as stored: where each came from, and its text. */
const userMessages = (history: readonly Message[]) =>
  history.flatMap((m) =>
    m.role === 'user' ? [{ source: m.source, text: m.content.map((p) => ('text' in p ? p.text : '')).join('') }] : [],
  );

it('a steer joins the running turn at its next step boundary, once', async () => {
  const turn = await harness.client.send('steer-1', 'work');
  await waitUntil(() => executions().includes('start steer-1 g1'), 'the gated tool to start');
  const taken = await takesAnswered(harness.server.adminUrl, turn);
  const steer = await harness.client.steer('steer-1', 'also tea');
  // The turn has taken it (the take is a call in the turn's journal) while its tool still runs.
  await waitUntil(async () => (await takesAnswered(harness.server.adminUrl, turn)) > taken, 'the take');
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
  await waitUntil(() => executions().includes('start steer-stop-1 g1'), 'the gated tool to start');
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
  await waitUntil(async () => (await harness.client.history('steer-idle-1')).length >= 2, 'the steer to be answered');
  const history = await harness.client.history('steer-idle-1');
  expect(userTexts(history)).toEqual(['hello']);
  expect(history.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'heard: hello' }] });
  expect((await harness.client.prompt('steer-idle-1', 'next')).text).toBe('heard: hello | next');
}, 60_000);

it('a steer that rings a turn as it ends joins the turn queued next, as embedded', async () => {
  // The first turn's final answer is held in review (a hook, outside every journaled wait): the turn is ending and
  // will not take anything more. A prompt is already waiting for the key when the steer rings.
  const first = await harness.client.send('steer-late-1', 'first');
  await waitUntil(() => gates.has('steer-late-1:review'), 'the final answer in review');
  const second = await harness.client.send('steer-late-1', 'second');
  await harness.client.result(await harness.client.steer('steer-late-1', 'also tea'));
  open('steer-late-1:review');
  expect((await harness.client.result(first)).text).toBe('heard: first');
  // The queued turn took it at its start; embedded, a steer after the turn's end joins the next turn the same way.
  expect((await harness.client.result(second)).text).toBe('heard: first | second | also tea');
  expect((await harness.client.prompt('steer-late-1', 'bye')).text).toBe('heard: first | second | also tea | bye');
  expect(userTexts(await harness.client.history('steer-late-1'))).toEqual(['first', 'second', 'also tea', 'bye']);
}, 60_000);

it('an interrupt that rings a turn as it ends stops the turn queued next, once', async () => {
  const first = await harness.client.send('steer-late-2', 'first');
  await waitUntil(() => gates.has('steer-late-2:review'), 'the final answer in review');
  const second = await harness.client.send('steer-late-2', 'second');
  await harness.client.result(await harness.client.interrupt('steer-late-2'));
  open('steer-late-2:review');
  expect(await harness.client.result(first)).toMatchObject({ stopReason: 'completed', text: 'heard: first' });
  expect(await harness.client.result(second)).toMatchObject({ stopReason: 'interrupted' });
  // Taken by that turn alone: the next one runs to its end.
  expect(await harness.client.prompt('steer-late-2', 'third')).toMatchObject({
    stopReason: 'completed',
    text: 'heard: first | second | third',
  });
  expectValidHistory(await harness.client.history('steer-late-2'));
}, 60_000);

it('a steer taken with an interrupt before it starts a turn of its own after the interrupted one', async () => {
  // The call waits in gating (a hook, no journaled wait) while both are sent: its first wait takes them together.
  const turn = await harness.client.send('steer-follow-1', 'work');
  await waitUntil(() => gates.has('steer-follow-1:gating'), 'the call in gating');
  await harness.client.result(await harness.client.interrupt('steer-follow-1'));
  await harness.client.result(await harness.client.steer('steer-follow-1', 'also tea'));
  open('steer-follow-1:gating');
  expect(await harness.client.result(turn)).toMatchObject({ stopReason: 'interrupted' });
  const history = await harness.client.history('steer-follow-1');
  expectValidHistory(history);
  expect(userTexts(history)).toEqual(['work', 'also tea']);
  expect(history.at(-1)).toMatchObject({
    role: 'assistant',
    content: [{ type: 'text', text: 'heard: work | also tea' }],
  });
  expect(executions()).not.toContain('ran steer-follow-1 g1');
}, 60_000);

it('an interrupt sent while no turn runs is dropped: it does not stop the next turn (a restart after a backoff)', async () => {
  // A background child whose first attempt fails waits 3 s (a durable timer) before its restart; no turn of its runs
  // meanwhile, and its object's key is held, so the restart is the next turn of the key whatever else is sent.
  const root = 'boss-idle-1';
  expect((await harness.client.prompt(root, 'background ["flaky f"]')).text).toBe('joined');
  const child = `${root}/t0.a0`;
  const doorbell = async () => {
    const response = await fetch(`${harness.server.ingressUrl}/troupe-agent/${encodeURIComponent(child)}/doorbell`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'null',
    });
    return (await response.json()) as string | null;
  };
  // Its first turn has asked the model and ended (its doorbell is gone): the backoff runs.
  await waitUntil(() => executions().includes(`model ${child}`), 'the first attempt');
  await waitUntil(async () => (await doorbell()) === null, 'the first turn to end');
  await harness.client.interrupt(child);
  let notifications: string[] = [];
  await waitUntil(async () => {
    notifications = userTexts(await harness.client.history(root)).filter((text) => text.startsWith('<notification'));
    return notifications.length > 0;
  }, 'the child to report');
  // Embedded, an idle agent ignores an interrupt; the restart is not stopped by it.
  expect(notifications).toEqual([
    `<notification task_id="t0.a0" agent_id="${child}" status="completed">recovered f</notification>`,
  ]);
  expect(executions().filter((line) => line === `model ${child}`)).toHaveLength(2);
}, 120_000);

it('a steer that opens a turn is stored as a steer, as embedded: to an idle agent, and after an interrupt', async () => {
  // Hosted: a steer with no turn running, then a prompt; and a prompt whose call is held in gating while an
  // interrupt and a steer are sent (the steer opens a turn of its own once the interrupted one has ended).
  const idle = 'steer-opens-1';
  await harness.client.steer(idle, 'hello');
  await waitUntil(async () => (await harness.client.history(idle)).length >= 2, 'the steer to be answered');
  await harness.client.prompt(idle, 'next');
  const follow = 'steer-follow-2';
  const turn = await harness.client.send(follow, 'work');
  await waitUntil(() => gates.has(`${follow}:gating`), 'the call in gating');
  await harness.client.result(await harness.client.interrupt(follow));
  await harness.client.result(await harness.client.steer(follow, 'also tea'));
  open(`${follow}:gating`);
  expect(await harness.client.result(turn)).toMatchObject({ stopReason: 'interrupted' });

  // Embedded: the same script; the `gated` call waits until the interrupt aborts it.
  let called: () => void = () => {};
  const calledOnce = new Promise<void>((resolve) => {
    called = resolve;
  });
  const gated = defineTool({
    name: 'gated',
    description: 'Waits for its gate',
    schema: z.object({}),
    execute: (_args, ctx) =>
      new Promise<string>((_resolve, reject) => {
        called();
        ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
      }),
  });
  const embedded = (agentId: string) =>
    createAgent({ id: agentId, model: scriptedModel((request) => answerFor(agentId, request)), tools: [gated] });
  const turnEnd = (agent: Agent) => new Promise<void>((resolve) => agent.on('turn_end', () => resolve()));
  const idleAgent = embedded(idle);
  const answered = turnEnd(idleAgent);
  idleAgent.steer('hello');
  await answered;
  await idleAgent.prompt('next');
  const followAgent = embedded(follow);
  const working = followAgent.prompt('work');
  await calledOnce;
  followAgent.interrupt();
  expect(await working).toMatchObject({ stopReason: 'interrupted' });
  const followed = turnEnd(followAgent);
  followAgent.steer('also tea');
  await followed;

  const expected = {
    [idle]: [
      { source: 'steer', text: 'hello' },
      { source: 'prompt', text: 'next' },
    ],
    [follow]: [
      { source: 'prompt', text: 'work' },
      { source: 'steer', text: 'also tea' },
    ],
  };
  expect(userMessages(idleAgent.messages)).toEqual(expected[idle]);
  expect(userMessages(followAgent.messages)).toEqual(expected[follow]);
  expect(userMessages(await harness.client.history(idle))).toEqual(expected[idle]);
  const hosted = await harness.client.history(follow);
  expectValidHistory(hosted);
  expect(userMessages(hosted)).toEqual(expected[follow]);
  expect(hosted.at(-1)).toEqual(followAgent.messages.at(-1));
  await Promise.all([idleAgent.stop(), followAgent.stop()]);
}, 60_000);

it("a stopped agent's book withdraws a result still waiting in its control object: no later turn takes it", async () => {
  // The natural race (a child's result rings the parent's turn as it ends, then the parent is cancelled before the
  // result's `notify` runs, and its book's `stop` cancels that `notify`) is forced here by calling the handlers the
  // book would call, through the ingress: the turn's final answer is held in review, its doorbell still set.
  const agent = 'steer-late-3';
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${harness.server.ingressUrl}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.ok).toBe(true);
    return response.json();
  };
  const first = await harness.client.send(agent, 'first');
  await waitUntil(() => gates.has(`${agent}:review`), 'the final answer in review');
  const message = notificationMessage('t9.a0', `${agent}/t9.a0`, 'completed', 'late news');
  // Kept for a turn (the doorbell is set) that will take nothing more.
  expect(await post(`troupe-agent-control/${agent}/notify`, { taskId: 't9.a0', message })).toBe(true);
  // The agent was cancelled: its book stops (an embedded agent that is stopped hears no more results).
  await post(`troupe-agent-tasks/${agent}/stop`, null);
  open(`${agent}:review`);
  expect((await harness.client.result(first)).text).toBe('heard: first');
  // Resumed: its next turn opens with nothing of that result.
  expect((await harness.client.prompt(agent, 'again')).text).toBe('heard: first | again');
  expect(notificationsOf(await harness.client.history(agent))).toEqual([]);
}, 60_000);
