import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type Agent,
  createAgent,
  defineTool,
  type Message,
  type ModelRequest,
  scriptedModel,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { until } from '../helpers/until.js';
import { taskOf } from './fixtures/agents.js';
import { userText, withoutIds } from './fixtures/embedded.js';
import { expectValidHistory } from './fixtures/histories.js';
import { sql } from './fixtures/journal.js';

// A child's result that comes while its parent's turn runs joins that turn at its next step, hosted as embedded:
// the same model calls, the same history (one `<notification>`, source `notification`), and no turn of its own.
// The same agents run embedded and hosted, compared.

/** A history as compared across hosts: each message's role, source and text, ids aside. */
const shape = (history: readonly Message[]) =>
  history.map((message) =>
    message.role === 'user'
      ? { role: 'user', source: message.source, text: withoutIds([userText(message)])[0] }
      : message.role === 'assistant'
        ? {
            role: 'assistant',
            parts: message.content.map((part) =>
              part.type === 'text' ? part.text : part.type === 'tool_call' ? part.name : part.type,
            ),
          }
        : { role: message.role },
  );

/**
 * The script: an agent acts on its task (its first user message). `join x` starts a background child on `quick x`,
 * then calls `await_news`, which returns once the child's result has reached the running turn (or after 3 s), then
 * answers `waited`; `start x` starts a background child on `x` and answers `started`; `quick x` answers `did x`. A
 * model call whose request ends with a notification answers `noted`.
 */
function script(request: ModelRequest): ScriptedAnswer {
  const usage = { input: 1, output: 1 };
  const task = taskOf(request);
  const results = request.messages.filter((message) => message.role === 'tool').length;
  if (userText(request.messages.at(-1)).startsWith('<notification')) return { text: 'noted', usage };
  const [kind = '', ...rest] = task.split(' ');
  const prompt = rest.join(' ');
  if (kind === 'join' && results === 0) {
    return { toolCalls: [{ name: 'agent', args: { prompt: `quick ${prompt}`, background: true }, id: 'b' }], usage };
  }
  if (kind === 'join' && results === 1) return { toolCalls: [{ name: 'await_news', args: {}, id: 'w' }], usage };
  if (kind === 'join') return { text: 'waited', usage };
  if (kind === 'start' && results === 0) {
    return { toolCalls: [{ name: 'agent', args: { prompt, background: true }, id: 'b' }], usage };
  }
  if (kind === 'start') return { text: 'started', usage };
  return { text: `did ${prompt}`, usage };
}

const requests: Record<'embedded' | 'hosted', ModelRequest[]> = { embedded: [], hosted: [] };
const modelOf = (where: 'embedded' | 'hosted') =>
  scriptedModel((request) => {
    requests[where].push(request);
    return script(request);
  });
const callsFor = (where: 'embedded' | 'hosted', task: string) => requests[where].filter((r) => taskOf(r) === task);

let server: RestateDevServer;
let worker: AgentWorker;
let client: AgentClient;
/** The embedded root of the test running now. */
let embeddedRoot: Agent | undefined;

/** Polls `arrived` every 10 ms, 3 s at most: a result that never reaches the turn lets it go on without. */
async function awaitNews(arrived: () => Promise<boolean> | boolean): Promise<string> {
  for (let i = 0; i < 300 && !(await arrived()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return 'waited';
}

/** The control object's `take`s of an agent that have completed. */
const takesOf = async (agentId: string) =>
  Number(
    (
      await sql<{ n: number }>(
        server.adminUrl,
        "SELECT COUNT(*) AS n FROM sys_invocation WHERE target_service_name = 'troupe-agent-control' " +
          `AND target_service_key = '${agentId}' AND target_handler_name = 'take' AND status = 'completed'`,
      )
    )[0]?.n,
  );

/**
 * Embedded, the result has reached the running turn once its agent's machine holds it injected. Hosted, once the
 * turn has taken it from its control object: the agent's first `take` (a turn takes only when its doorbell rings).
 */
const awaitNewsTool = (where: 'embedded' | 'hosted') =>
  defineTool({
    name: 'await_news',
    description: "Waits for a background child's result",
    schema: z.object({}),
    execute: async (_args, toolCtx) => {
      const answer = await awaitNews(async () => {
        if (where === 'embedded') {
          const agent = toolCtx.agentId === embeddedRoot?.id ? embeddedRoot : embeddedRoot?.subagent(toolCtx.agentId);
          return (agent?.actor.getSnapshot().context.injections.length ?? 0) > 0;
        }
        return (await takesOf(toolCtx.agentId)) >= 1;
      });
      // A `stopper…` agent's call then runs until its turn is interrupted (5 s at most).
      if (toolCtx.agentId.startsWith('stopper')) {
        for (let i = 0; i < 500 && !toolCtx.signal.aborted; i++) await new Promise((r) => setTimeout(r, 10));
      }
      return answer;
    },
  });

beforeAll(async () => {
  server = await startRestateDevServer();
  const agents = agentObject({
    subagents: true,
    agent: () => ({ model: modelOf('hosted'), tools: [awaitNewsTool('hosted')] }),
  });
  worker = await serveAgents([agents]);
  await server.register(worker.url);
  client = agentClient(server.ingressUrl);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

/** The `notify` invocations of a hosted agent that have completed. */
const notifies = async (agentId: string) =>
  Number(
    (
      await sql<{ n: number }>(
        server.adminUrl,
        "SELECT COUNT(*) AS n FROM sys_invocation WHERE target_service_name = 'troupe-agent' " +
          `AND target_service_key = '${agentId}' AND target_handler_name = 'notify' AND status = 'completed'`,
      )
    )[0]?.n,
  );

const notifications = (history: readonly Message[]) =>
  history.filter((message) => message.role === 'user' && message.source === 'notification');

/** The agent id a notification names. */
const agentIdOf = (message: Message | undefined) => /agent_id="([^"]*)"/.exec(userText(message))?.[1] ?? '';

/** The same root embedded: prompted, then its history once `settled` holds of it. */
async function embedded(prompt: string, settled: (history: Message[]) => boolean) {
  const agent = createAgent({ model: modelOf('embedded'), tools: [awaitNewsTool('embedded')], subagents: {} });
  embeddedRoot = agent;
  const answer = await agent.prompt(prompt);
  for (let i = 0; i < 600 && !settled(agent.messages); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return { answer, agent };
}

it("a result that comes while its parent's turn runs joins that turn at its next step, once, as embedded", async () => {
  const root = 'joiner-1';
  const task = 'join a';
  // The turn's third model call sees the result after `await_news`'s: it answers the notification.
  expect((await client.prompt(root, task)).text).toBe('noted');
  // Its own `notify` ran afterwards and ran no turn: no model call more, the history as the turn stored it.
  await until(
    () => notifies(root),
    (n) => n >= 1,
  );
  expect(await notifies(root)).toBe(1);
  const hosted = await client.history(root);
  expectValidHistory(hosted);
  expect(callsFor('hosted', task)).toHaveLength(3);
  expect(notifications(hosted)).toHaveLength(1);

  const twin = await embedded(task, (history) => notifications(history).length > 0);
  expect(twin.answer.text).toBe('noted');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const history = twin.agent.messages;
  await twin.agent.stop();
  expect(callsFor('embedded', task)).toHaveLength(3);
  expect(shape(hosted)).toEqual(shape(history));
  expect(shape(hosted).filter((message) => message.role === 'user')).toEqual([
    { role: 'user', source: 'prompt', text: task },
    {
      role: 'user',
      source: 'notification',
      text: '<notification task_id="…" agent_id="…" status="completed">did a</notification>',
    },
  ]);
}, 120_000);

it("a subagent whose running turn took its child's result hands off that turn, as embedded", async () => {
  const root = 'joiner-2';
  const task = 'join b';
  expect((await client.prompt(root, `start ${task}`)).text).toBe('started');
  // The child's hand-off is the turn that took its own child's result (`noted`), and it woke the root.
  const hosted = await until(
    () => client.history(root),
    (history) => history.at(-1)?.role === 'assistant' && notifications(history).length > 0,
  );
  expectValidHistory(hosted);
  const childId = agentIdOf(notifications(hosted)[0]);
  const child = await client.history(childId);
  expectValidHistory(child);
  // The child ran no turn for it: one `notify`, three model calls, the result stored once.
  await until(
    () => notifies(childId),
    (n) => n >= 1,
  );
  expect(await notifies(childId)).toBe(1);
  expect(callsFor('hosted', task)).toHaveLength(3);
  expect(notifications(await client.history(childId))).toHaveLength(1);

  const twin = await embedded(
    `start ${task}`,
    (history) => history.at(-1)?.role === 'assistant' && notifications(history).length > 0,
  );
  const history = twin.agent.messages;
  const twinChild = twin.agent.subagent(agentIdOf(notifications(history)[0]))?.messages ?? [];
  await twin.agent.stop();
  expect(callsFor('embedded', task)).toHaveLength(3);
  expect(shape(child)).toEqual(shape(twinChild));
  expect(shape(hosted)).toEqual(shape(history));
  expect(userText(notifications(hosted)[0])).toContain('>noted</notification>');
}, 120_000);

it('a result taken by a turn that is interrupted before its next step joins the next turn, without waking it, as embedded', async () => {
  const root = 'stopper-1';
  const task = 'join c';
  const invocation = await client.send(root, task);
  // The turn took the result (it waits in the agent's machine for the next step), then is interrupted in the call.
  await until(
    () => takesOf(root),
    (n) => n >= 1,
  );
  expect(await takesOf(root)).toBe(1);
  await client.interrupt(root);
  expect(await client.result(invocation)).toMatchObject({ stopReason: 'interrupted' });
  // Its `notify` finds it kept for the next turn and runs none: the agent is not woken.
  await until(
    () => notifies(root),
    (n) => n >= 1,
  );
  expect(notifications(await client.history(root))).toHaveLength(0);
  expect(callsFor('hosted', task)).toHaveLength(2);
  // The next prompt's first step brings it.
  expect(await client.prompt(root, 'then')).toMatchObject({ text: 'noted' });
  const hosted = await client.history(root);
  expectValidHistory(hosted);
  expect(notifications(hosted)).toHaveLength(1);
  expect(callsFor('hosted', task)).toHaveLength(3);

  // Embedded: the same agent, interrupted once its machine holds the result injected.
  const agent = createAgent({
    id: 'stopper-e1',
    model: modelOf('embedded'),
    tools: [awaitNewsTool('embedded')],
    subagents: {},
  });
  embeddedRoot = agent;
  const turn = agent.prompt(task);
  for (let i = 0; i < 500 && agent.actor.getSnapshot().context.injections.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  agent.interrupt();
  expect(await turn).toMatchObject({ stopReason: 'interrupted' });
  expect(notifications(agent.messages)).toHaveLength(0);
  expect(await agent.prompt('then')).toMatchObject({ text: 'noted' });
  expect(shape(hosted)).toEqual(shape(agent.messages));
  expect(callsFor('embedded', task)).toHaveLength(3);
}, 120_000);
