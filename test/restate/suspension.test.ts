import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEvent, defineTool, type Message, scriptedModel, textOf } from '../../src/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { expectValidHistory } from './fixtures/histories.js';

// A turn that sends Restate nothing for longer than the server's inactivity timeout is asked to suspend, and
// aborted when the abort timeout follows. A tool call sends nothing while it runs, so a tool longer than both is
// caught with its side effect open: the restate issues report invocations left suspended for ever, holding their
// key. Here the server is given timeouts of half a second each and the tool runs for four seconds (it ignores its
// signal), so the attempt is cut while the tool runs.
const INACTIVITY = '500ms';
const ABORT = '500ms';
const TOOL_MS = 4_000;
let server: RestateDevServer;
let worker: AgentWorker;
let ran: Record<string, number> = {};
/** Attempts of each agent's turns: a turn's events are published again when Restate runs it again. */
let turnStarts: Record<string, number> = {};

beforeAll(async () => {
  server = await startRestateDevServer({
    env: {
      RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT: INACTIVITY,
      RESTATE_WORKER__INVOKER__ABORT_TIMEOUT: ABORT,
    },
  });
  const slow = defineTool({
    name: 'slow',
    description: 'Takes its time',
    schema: z.object({}),
    execute: async (_args, ctx) => {
      ran[ctx.agentId] = (ran[ctx.agentId] ?? 0) + 1;
      await new Promise((resolve) => setTimeout(resolve, TOOL_MS));
      return 'slow work done';
    },
  });
  // "go" calls the slow tool; its result ends the turn; any other prompt is answered at once.
  const model = scriptedModel((request) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { text: 'finished' };
    return last && textOf(last) === 'go' ? { toolCalls: [{ name: 'slow', args: {} }] } : { text: 'hello again' };
  });
  const agent = () => ({ model, tools: [slow] });
  const on = (event: AgentEvent) => {
    if (event.type === 'turn_start') turnStarts[event.agentId] = (turnStarts[event.agentId] ?? 0) + 1;
  };
  worker = await serveAgents([
    // The server's timeouts: the tool outlives them.
    agentObject({ name: 'hasty', agent, on }),
    // The object's own: an abort timeout above the tool's duration.
    agentObject({ name: 'patient', agent, on, abortTimeoutMs: 20_000 }),
  ]);
  await server.register(worker.url);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

const toolResults = (history: Message[]) =>
  history.flatMap((message) =>
    message.role === 'tool'
      ? message.content.map((result) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join(''))
      : [],
  );

async function runTwoTurns(client: AgentClient, key: string) {
  const first = await client.prompt(key, 'go');
  // The key is free again: the next turn of the same object runs and ends.
  const second = await client.prompt(key, 'are you there?');
  const history = await client.history(key);
  expectValidHistory(history);
  return { first, second, history };
}

it('a turn cut by the abort timeout while its tool runs is retried and ends; the tool is not run again', async () => {
  ran = {};
  turnStarts = {};
  const client = agentClient(server.ingressUrl, 'hasty');
  const { first, second, history } = await runTwoTurns(client, 'h1');
  expect(first).toMatchObject({ stopReason: 'completed', text: 'finished' });
  expect(second).toMatchObject({ stopReason: 'completed', text: 'hello again' });
  // The attempt was aborted before the tool's result reached the journal, so the retry found its `started` marker
  // alone: at most once, the call is closed as interrupted, never run a second time.
  expect(ran.h1).toBe(1);
  // The first turn ran twice (the aborted attempt, then the retry); the second once.
  expect(turnStarts.h1).toBe(3);
  const [result] = toolResults(history);
  expect(result).toMatch(/running when its worker stopped, and it was not run again/);
}, 60_000);

it('with an abort timeout above the tool, the suspended turn keeps the tool result and resumes', async () => {
  ran = {};
  turnStarts = {};
  const client = agentClient(server.ingressUrl, 'patient');
  const { first, second, history } = await runTwoTurns(client, 'p1');
  expect(first).toMatchObject({ stopReason: 'completed', text: 'finished' });
  expect(second).toMatchObject({ stopReason: 'completed', text: 'hello again' });
  // Asked to suspend after half a second, the turn finished the call it had open, journaled its result and
  // suspended; Restate resumed it from the journal.
  expect(ran.p1).toBe(1);
  expect(turnStarts.p1).toBe(3);
  expect(toolResults(history)).toEqual(['slow work done']);
}, 60_000);
