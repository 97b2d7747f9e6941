import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { z } from 'zod';
import { type AgentEvent, defineTool, scriptedModel } from '../../src/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { waitUntil } from '../helpers/until.js';
import { sql } from './fixtures/journal.js';

// What a hosted agent's listener hears: model deltas live, and a replayed turn's events marked `replayed`. The
// replay is a suspension in this process: the turn waits for an approval longer than the object's inactivity
// timeout, Restate suspends it, and the approval resumes it from its journal.
let server: RestateDevServer;
let worker: AgentWorker;
let client: AgentClient;
let suspended: AgentClient;
const events: AgentEvent[] = [];
const inspected: InspectionEvent[] = [];
let ran = 0;

beforeAll(async () => {
  server = await startRestateDevServer();
  const deploy = defineTool({
    name: 'deploy',
    description: 'Deploys',
    schema: z.object({}),
    execute: () => {
      ran++;
      return 'deployed';
    },
  });
  const agent = (agentId: string) => ({
    model: scriptedModel((request) => {
      const results = request.messages.filter((message) => message.role === 'tool').length;
      if (agentId.startsWith('deployer') && results === 0) {
        return { toolCalls: [{ name: 'deploy', args: {}, id: 'd1' }] };
      }
      return { text: 'a streamed answer in several deltas', chunkSize: 5 };
    }),
    tools: [deploy],
    policy: (call: { name: string }) => (call.name === 'deploy' ? 'ask' : 'allow'),
  });
  const on = (event: AgentEvent) => events.push(event);
  // The server's default inactivity timeout (a minute): a turn here is never suspended, so never replayed.
  const steady = agentObject({ name: 'listened', on, agent });
  // Suspended after 200 ms without news (a wait for an approval; on a loaded machine, any slow step too).
  const suspending = agentObject({ name: 'suspending', inactivityTimeoutMs: 200, on, agent });
  // Watched as an embedded agent is, through XState's inspection observer (the Stately inspector takes the same).
  const watched = agentObject({
    name: 'watched',
    agent: (agentId) => ({ ...agent(agentId), inspect: (event: InspectionEvent) => inspected.push(event) }),
  });
  worker = await serveAgents([steady, suspending, watched]);
  await server.register(worker.url);
  client = agentClient(server.ingressUrl, 'listened');
  suspended = agentClient(server.ingressUrl, 'suspending');
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

const of = (agentId: string) => events.filter((event) => event.agentId === agentId);

it("a hosted model call's deltas reach the listener live, before its message ends", async () => {
  expect((await client.prompt('talker-1', 'hello')).text).toBe('a streamed answer in several deltas');
  const heard = of('talker-1');
  const deltas = heard.filter((event) => event.type === 'message_update');
  expect(deltas.length).toBeGreaterThan(1);
  const text = deltas.map((event) => (event.delta.type === 'text' ? event.delta.delta : '')).join('');
  expect(text).toBe('a streamed answer in several deltas');
  const end = heard.findIndex((event) => event.type === 'message_end' && event.message.role === 'assistant');
  expect(heard.indexOf(deltas.at(-1) as AgentEvent)).toBeLessThan(end);
  expect(heard.filter((event) => event.replayed)).toEqual([]);
});

it('a turn replayed after a suspension publishes its journaled events again, marked replayed, and the rest live', async () => {
  const invocation = await suspended.send('deployer-1', 'ship it');
  await waitUntil(() => of('deployer-1').some((event) => event.type === 'approval_requested'), 'the approval');
  await waitUntil(async () => {
    const rows = await sql<{ status: string }>(
      server.adminUrl,
      `SELECT status FROM sys_invocation WHERE id = '${invocation}'`,
    );
    return rows[0]?.status === 'suspended';
  }, 'the turn to suspend');
  const beforeResume = of('deployer-1').length;
  expect(await suspended.approve('deployer-1', { toolCallId: 'd1', approve: true })).toBe(true);
  expect((await suspended.result(invocation)).text).toBe('a streamed answer in several deltas');

  // The first attempt is live (the machine may have suspended it more than once before the approval: then its
  // later attempts replay it, marked too).
  const first = of('deployer-1').slice(0, beforeResume);
  expect(first[0]).toMatchObject({ type: 'agent_start' });
  expect(first[0]?.replayed).toBeUndefined();
  // The attempt that resumes after the answer starts from the journal: what the first attempt published comes
  // again, marked. (On a loaded machine a slow step can suspend it too: a later attempt then replays the question
  // as well, rightly marked, since its answer is in the journal by then. Only the first resumed attempt is read.)
  const second = of('deployer-1').slice(beforeResume);
  const start = second.findIndex((event) => event.type === 'agent_start');
  const next = second.findIndex((event, i) => i > start && event.type === 'agent_start');
  const resumed = second.slice(start, next === -1 ? undefined : next);
  expect(resumed.slice(0, 4).map((event) => [event.type, event.replayed])).toEqual([
    ['agent_start', true],
    ['turn_start', true],
    ['message_end', true],
    ['step_start', true],
  ]);
  // The question is announced live again: the host cannot tell yet whether its answer is in the journal, and an
  // unanswered one is a real question for whoever listens now (a resumed embedded session leaves those unmarked).
  const asked = resumed.find((event) => event.type === 'approval_requested');
  expect(asked?.replayed).toBeUndefined();
  // What happened only after the approval is live, once across every later attempt: the tool's run, the final
  // answer's deltas, the turn's end.
  const live = second.filter((event) => !event.replayed);
  expect(live.filter((event) => event.type === 'tool_execution_end')).toHaveLength(1);
  expect(live.filter((event) => event.type === 'message_update').length).toBeGreaterThan(1);
  expect(live.filter((event) => event.type === 'turn_end')).toHaveLength(1);
  expect(live.filter((event) => event.type === 'turn_start')).toEqual([]);
  expect(second.filter((event) => event.type === 'tool_execution_start' && event.replayed)).toEqual([]);
  expect(ran).toBe(1);
});

it("an inspector sees a hosted agent's statechart: its actor, the prompt, and the turn's states", async () => {
  const watched = agentClient(server.ingressUrl, 'watched');
  expect((await watched.prompt('seen-1', 'hello')).text).toBe('a streamed answer in several deltas');
  const own = inspected.filter((event) => (event.actorRef as AnyActorRef).id === 'seen-1');
  expect(own.some((event) => event.type === '@xstate.actor')).toBe(true);
  const received = own.flatMap((event) => (event.type === '@xstate.event' ? [event.event.type] : []));
  expect(received).toContain('PROMPT');
  expect(received).toContain('MODEL_DONE');
  const values = own.flatMap((event) => (event.type === '@xstate.snapshot' ? [JSON.stringify(event.snapshot)] : []));
  expect(values.some((value) => value.includes('"running"'))).toBe(true);
});
