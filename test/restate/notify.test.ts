import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentConfig,
  createAgent,
  defineTool,
  type Hooks,
  type Message,
  type ModelRequest,
  type SubagentProfile,
  scriptedModel,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { until } from '../helpers/until.js';
import { taskOf } from './fixtures/agents.js';
import { toolResults, userText, withoutIds } from './fixtures/embedded.js';
import { expectValidHistory } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';

// A child's result reaches a hosted agent as it reaches an embedded one: the same `<notification>` message, stored
// as `source: 'notification'`; and an agent that does not wake for notifications (`wakeOnNotification: false`) runs
// no turn for it, its next turn's first model call sees it. The same agents run embedded and hosted, compared.

/** What a history's user messages are, source and text, ids aside (hosts name tasks differently). */
const userMessages = (history: readonly Message[]) =>
  history.flatMap((message) =>
    message.role === 'user' ? [{ source: message.source, text: withoutIds([userText(message)])[0] }] : [],
  );

/**
 * The script, played embedded and hosted alike: an agent acts on its task (its first user message). `start <task>`
 * starts a background child on <task> and says `started`; `lead <task>` runs a foreground child of profile
 * `sleepy` on <task>; `spawn <task>` starts one in the background; `quick x` answers `did x`, `hold x` too once its
 * `hold` call has returned. A turn that sees a notification last answers `noted`.
 */
function script(request: ModelRequest): ScriptedAnswer {
  const usage = { input: 1, output: 1 };
  const task = taskOf(request);
  const results = request.messages.filter((message) => message.role === 'tool').length;
  // `deploy` asked in a later turn: one call (held for approval), then an answer.
  const asked = request.messages.some((message) => message.role === 'user' && userText(message) === 'deploy');
  if (asked && request.messages.at(-1)?.role !== 'tool') {
    return { toolCalls: [{ name: 'deploy', args: {}, id: `d${results}` }], usage };
  }
  if (asked) return { text: 'deployed', usage };
  if (userText(request.messages.at(-1)).startsWith('<notification')) return { text: 'noted', usage };
  const [kind = '', ...rest] = task.split(' ');
  const prompt = rest.join(' ');
  if (results === 0 && kind === 'start') {
    return { toolCalls: [{ name: 'agent', args: { prompt, background: true }, id: 'b' }], usage };
  }
  if (results === 0 && (kind === 'lead' || kind === 'spawn')) {
    const args = { prompt, profile: 'sleepy', ...(kind === 'spawn' ? { background: true } : {}) };
    return { toolCalls: [{ name: 'agent', args, id: 'f' }], usage };
  }
  if (kind === 'quick' || (kind === 'hold' && results > 0)) return { text: `did ${prompt}`, usage };
  if (kind === 'hold') return { toolCalls: [{ name: 'hold', args: {}, id: 'h' }], usage };
  return { text: kind === 'start' ? 'started' : 'led', usage };
}

/** Every model request, by where it ran (`embedded` or `hosted`), in order. */
const requests: Record<'embedded' | 'hosted', ModelRequest[]> = { embedded: [], hosted: [] };
const modelOf = (where: 'embedded' | 'hosted') =>
  scriptedModel((request) => {
    requests[where].push(request);
    return script(request);
  });

/**
 * Embedded, a result that comes while its parent's turn runs joins that turn; hosted it cannot (the parent's key is
 * busy until the turn ends), so it comes after. `hold` makes the embedded one come after too: it returns once the
 * parent's turn has ended (`embedded` opens `held` then). Hosted, it returns at once.
 */
let held: Promise<void> = Promise.resolve();
const holdTool = (where: 'embedded' | 'hosted') =>
  defineTool({
    name: 'hold',
    description: "Waits for its parent's turn to end",
    schema: z.object({}),
    execute: async () => {
      if (where === 'embedded') await held;
      return 'held';
    },
  });
/** The model calls made for a task (a first user message) whose request ends with a notification. */
const wokenFor = (where: 'embedded' | 'hosted', task: string) =>
  requests[where].filter((r) => taskOf(r) === task && userText(r.messages.at(-1)).startsWith('<notification'));

/** The turn ends afterTurn hooks saw, by where they ran: whose turn (the root's, or a child's), and its answer. */
const ends: Record<'embedded' | 'hosted', string[]> = { embedded: [], hosted: [] };
const observing = (where: 'embedded' | 'hosted', root: string): Hooks => ({
  afterTurn: (end, agent) => void ends[where].push(`${agent.id === root ? 'root' : 'child'}: ${end.text}`),
});

const profiles: Record<string, SubagentProfile> = { sleepy: { description: 'Sleeps', wakeOnNotification: false } };

let server: RestateDevServer;
let worker: AgentWorker;
let client: AgentClient;
let suspended: AgentClient;
let deployed = 0;
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys',
  schema: z.object({}),
  execute: () => {
    deployed++;
    return 'deployed';
  },
});

beforeAll(async () => {
  server = await startRestateDevServer();
  // Roots named `sleepy…` do not wake for notifications, as the `sleepy` profile's children do not.
  const agents = agentObject({
    subagents: true,
    supervision: { profiles },
    agent: (agentId) => ({
      model: modelOf('hosted'),
      tools: [holdTool('hosted')],
      ...(agentId.startsWith('sleepy') ? { wakeOnNotification: false } : {}),
      ...(agentId.startsWith('observed') ? { hooks: observing('hosted', 'observed-1') } : {}),
    }),
  });
  // The same, suspended after 200 ms without news (a wait for an approval): its turn is replayed when resumed.
  const suspending = agentObject({
    name: 'suspending',
    inactivityTimeoutMs: 200,
    subagents: true,
    agent: () => ({
      model: modelOf('hosted'),
      tools: [holdTool('hosted'), deploy],
      wakeOnNotification: false,
      policy: (call) => (call.name === 'deploy' ? 'ask' : 'allow'),
    }),
  });
  worker = await serveAgents([agents, suspending]);
  await server.register(worker.url);
  client = agentClient(server.ingressUrl);
  suspended = agentClient(server.ingressUrl, 'suspending');
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

/** A root embedded, whose `hold` calls return once the turn that said `started` (their parent's) has ended. */
function embeddedAgent(config: Partial<AgentConfig>) {
  const agent = createAgent({
    model: modelOf('embedded'),
    tools: [holdTool('embedded')],
    subagents: { profiles },
    ...config,
  });
  let open = () => {};
  held = new Promise((resolve) => {
    open = resolve;
  });
  agent.on(
    'turn_end',
    (event) => {
      const ended = event.agentId === agent.id ? agent : agent.subagent(event.agentId);
      const last = ended?.messages.at(-1);
      if (last?.role === 'assistant' && last.content.some((p) => p.type === 'text' && p.text === 'started')) open();
    },
    { subtree: true },
  );
  return agent;
}

/** The same root embedded: prompted, then, once `settled` holds of its history, its history. */
async function embedded(
  prompt: string,
  config: Partial<AgentConfig>,
  settled: (history: Message[]) => boolean,
): Promise<{ history: Message[]; agent: ReturnType<typeof createAgent> }> {
  const agent = embeddedAgent(config);
  await agent.prompt(prompt);
  for (let i = 0; i < 600 && !settled(agent.messages); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return { history: agent.messages, agent };
}

/** Whether a hosted agent's `notify` invocations have all completed, `count` of them. */
const notified = async (agentId: string, count: number, service = 'troupe-agent') =>
  (
    await sql<{ id: string }>(
      server.adminUrl,
      `SELECT id FROM sys_invocation WHERE target_service_name = '${service}' AND target_service_key = '${agentId}' ` +
        "AND target_handler_name = 'notify' " +
        "AND status = 'completed'",
    )
  ).length >= count;

const hasNotification = (history: Message[]) =>
  history.some((message) => message.role === 'user' && message.source === 'notification');

it('a hosted notification turn opens with the same message as embedded: source notification, same envelope', async () => {
  const root = 'waker-1';
  expect((await client.prompt(root, 'start hold a')).text).toBe('started');
  const hosted = await until(
    () => client.history(root),
    (history) => history.at(-1)?.role === 'assistant' && userText(history.at(-2)).startsWith('<notification'),
  );
  expectValidHistory(hosted);
  const twin = await embedded('start hold a', {}, (history) => hasNotification(history) && history.length === 6);
  await twin.agent.stop();
  // The notification is a user message of source `notification`, with the same envelope text (ids aside).
  expect(userMessages(hosted)).toEqual(userMessages(twin.history));
  expect(userMessages(hosted)).toEqual([
    { source: 'prompt', text: 'start hold a' },
    { source: 'notification', text: '<notification task_id="…" agent_id="…" status="completed">did a</notification>' },
  ]);
  // The turn it opened answered it, hosted and embedded.
  expect(hosted.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'noted' }] });
  expect(twin.history.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'noted' }] });
}, 120_000);

it("a root that does not wake runs no turn for a result; its next turn's first model call sees it, as embedded", async () => {
  const root = 'sleepy-root-1';
  const task = 'start hold b';
  expect((await client.prompt(root, task)).text).toBe('started');
  const before = requests.hosted.length;
  await until(
    () => notified(root, 1),
    (done) => done,
  );
  // The result came and no model call answered it: the history is the first turn's.
  expect(requests.hosted.slice(before).filter((r) => taskOf(r) === task)).toEqual([]);
  expect(hasNotification(await client.history(root))).toBe(false);
  const next = requests.hosted.length;
  expect((await client.prompt(root, 'what now?')).text).toBe('noted');
  // The prompt opens the turn and the notification joins its first step: the first model call sees both.
  const hostedFirst = userMessages(requests.hosted[next]?.messages ?? []).slice(-2);
  expect(hostedFirst).toEqual([
    { source: 'prompt', text: 'what now?' },
    { source: 'notification', text: '<notification task_id="…" agent_id="…" status="completed">did b</notification>' },
  ]);
  // Delivered once: the turn after it does not see it again.
  await client.prompt(root, 'and then?');
  const hosted = await client.history(root);
  expectValidHistory(hosted);
  expect(hosted.filter((m) => m.role === 'user' && m.source === 'notification')).toHaveLength(1);

  // Embedded, the same root.
  const twin = embeddedAgent({ wakeOnNotification: false });
  const delivered = new Promise((resolve) => twin.on('notification', resolve));
  await twin.prompt(task);
  await delivered;
  await new Promise((resolve) => setTimeout(resolve, 0));
  const woken = requests.embedded.length;
  await twin.prompt('what now?');
  expect(userMessages(requests.embedded[woken]?.messages ?? []).slice(-2)).toEqual(hostedFirst);
  await twin.prompt('and then?');
  expect(userMessages(hosted)).toEqual(userMessages(twin.messages));
  await twin.stop();
}, 120_000);

it("a foreground child that does not wake hands off its last turn when its own child's result comes, as embedded", async () => {
  const root = 'waker-lead-1';
  const child = `${root}/t0.f`;
  const task = 'lead start hold c';
  expect((await client.prompt(root, task)).text).toBe('led');
  const hosted = await client.history(root);
  expectValidHistory(hosted);
  // Its task is finished with its last turn's answer, `started`; no model call answered the notification.
  expect(toolResults(hosted)).toEqual([expect.stringContaining('started')]);
  expect(wokenFor('hosted', 'start hold c')).toEqual([]);
  // The notification is kept for its next turn: not in its history yet.
  expect(hasNotification(await client.history(child))).toBe(false);
  // Its next turn (a steer of the idle child opens one) has it at its first step, once.
  const next = requests.hosted.length;
  await client.steer(child, 'anything new?');
  const childHistory = await until(
    () => client.history(child),
    (history) => hasNotification(history) && history.at(-1)?.role === 'assistant',
  );
  expectValidHistory(childHistory);
  // (The steer's own source is not compared: a hosted steer that opens a turn is stored as a prompt.)
  const [steer, note] = userMessages(requests.hosted[next]?.messages ?? []).slice(-2);
  expect(steer?.text).toBe('anything new?');
  expect(note).toEqual({
    source: 'notification',
    text: '<notification task_id="…" agent_id="…" status="completed">did c</notification>',
  });
  expect(childHistory.filter((m) => m.role === 'user' && m.source === 'notification')).toHaveLength(1);

  const twin = await embedded(task, {}, () => true);
  await twin.agent.stop();
  expect(withoutIds(toolResults(hosted))).toEqual(withoutIds(toolResults(twin.history)));
  expect(wokenFor('embedded', 'start hold c')).toEqual([]);
}, 120_000);

it('a background child that does not wake reports its last turn once its own child has, as embedded', async () => {
  const root = 'waker-spawn-1';
  const task = 'spawn start hold d';
  expect((await client.prompt(root, task)).text).toBe('led');
  const hosted = await until(
    () => client.history(root),
    (history) => hasNotification(history) && history.at(-1)?.role === 'assistant',
  );
  expectValidHistory(hosted);
  expect(wokenFor('hosted', 'start hold d')).toEqual([]);
  const twin = await embedded(task, {}, (history) => hasNotification(history) && history.at(-1)?.role === 'assistant');
  await twin.agent.stop();
  expect(userMessages(hosted)).toEqual(userMessages(twin.history));
  expect(userMessages(hosted)).toEqual([
    { source: 'prompt', text: task },
    {
      source: 'notification',
      text: '<notification task_id="…" agent_id="…" status="completed">started</notification>',
    },
  ]);
  expect(wokenFor('embedded', 'start hold d')).toEqual([]);
}, 120_000);

it('a turn that kept notifications join is replayed (suspended on an approval) with them once, as they were read', async () => {
  const root = 'sleepy-replayed-1';
  expect((await suspended.prompt(root, 'start hold r')).text).toBe('started');
  await until(
    () => notified(root, 1, 'suspending'),
    (done) => done,
  );
  const before = requests.hosted.length;
  const invocation = await suspended.send(root, 'deploy');
  const [call] = await until(
    () => suspended.pendingApprovals(root),
    (waiting) => waiting.length > 0,
  );
  const status = async () =>
    (await sql<{ status: string }>(server.adminUrl, `SELECT status FROM sys_invocation WHERE id = '${invocation}'`))[0]
      ?.status;
  expect(await until(status, (now) => now === 'suspended'), 'the turn suspends').toBe('suspended');
  expect(await suspended.approve(root, { toolCallId: call?.toolCallId ?? '', approve: true })).toBe(true);
  expect((await suspended.result(invocation)).text).toBe('deployed');
  // The replay read the same kept notes and gave them to the same step: the first model call (journaled, not
  // asked again) saw the prompt then the notification, and the history holds it once, where that call saw it.
  const calls = requests.hosted.slice(before).filter((r) => taskOf(r) === 'start hold r');
  expect(calls).toHaveLength(2);
  expect(userMessages(calls[0]?.messages ?? []).slice(-2)).toEqual([
    { source: 'prompt', text: 'deploy' },
    { source: 'notification', text: '<notification task_id="…" agent_id="…" status="completed">did r</notification>' },
  ]);
  const history = await suspended.history(root);
  expectValidHistory(history);
  expect(userMessages(history)).toEqual(userMessages(calls[0]?.messages ?? []));
  expect(deployed).toBe(1);
}, 120_000);

it('afterTurn hooks observe the turn a result woke, hosted as embedded', async () => {
  const root = 'observed-1';
  expect((await client.prompt(root, 'start hold c')).text).toBe('started');
  await until(
    () => client.history(root),
    (history) => history.at(-1)?.role === 'assistant' && userText(history.at(-2)).startsWith('<notification'),
  );
  const twin = await embedded('start hold c', { id: root, hooks: observing('embedded', root) }, (history) =>
    hasNotification(history),
  );
  // The hooks run after the turn's end is published: a tick later, embedded; hosted, the history is stored after.
  await until(
    async () => ends.embedded.length,
    (n) => n >= 3,
  );
  await twin.agent.stop();
  const expected = ['child: did c', 'root: noted', 'root: started'];
  expect([...ends.embedded].sort()).toEqual(expected);
  expect([...ends.hosted].sort()).toEqual(expected);
}, 120_000);
