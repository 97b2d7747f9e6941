import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { connectInspector, type Message, startInspectorServer } from '../../src/index.js';
import type { InspectorConnection } from '../../src/inspect/connect.js';
import type { InspectorServer } from '../../src/inspect/server.js';
import { hostedInspectorRoot } from '../../src/restate/index.js';
import { waitUntil } from '../helpers/until.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory } from './fixtures/histories.js';
import { sql, takesAnswered } from './fixtures/journal.js';

// The inspector page's controls on agents hosted on Restate: a real restate-server, the worker in this process
// connected to a real inspector server (`troupe inspect`'s), and the page's own socket sending what its buttons
// send. The command goes page → inspector → the worker's connection → `hostedInspectorRoot` → Restate's ingress.
const gates = new Map<string, () => void>();
const opened = new Map<string, Promise<void>>();
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

interface Frame {
  type: string;
  sessionId: string;
  snapshot?: { status?: string; context?: { agentId?: string; calls?: Array<{ status?: string }> } };
}
interface Ack {
  type: 'ack';
  id: string;
  ok: boolean;
  error?: string;
  detail?: string;
  mine?: boolean;
}

let inspector: InspectorServer;
let connection: InspectorConnection;
let harness: Harness;
let page: WebSocket;
const frames: Frame[] = [];
const acks: Ack[] = [];

beforeAll(async () => {
  inspector = await startInspectorServer({ token: 'page-token' });
  connection = await connectInspector({ url: inspector.connectUrl, runId: 'hosted' });
  harness = await startHarness('inspector', { gate, inspect: connection.inspect });
  connection.attach(hostedInspectorRoot(harness.client));
  // The page's socket, from the page's own origin, as the page opens it.
  page = new WebSocket(`ws://127.0.0.1:${inspector.port}/ui?token=page-token`, {
    headers: { origin: `http://127.0.0.1:${inspector.port}` },
  });
  page.on('message', (data) => {
    const message = JSON.parse(data.toString()) as { type: 'frame'; frame: Frame } | Ack | { type: 'hello' | 'run' };
    if (message.type === 'frame') frames.push(message.frame);
    else if (message.type === 'ack') acks.push(message);
  });
  await new Promise((resolve) => page.once('open', resolve));
}, 90_000);

afterAll(async () => {
  page?.close();
  await connection?.close();
  await harness?.close();
  await inspector?.close();
});

/** The page's view of an agent's running turn: its actor's session id, from the last snapshot that names it. */
function turnActor(agentId: string, ready: (frame: Frame) => boolean = () => true): string | undefined {
  return frames.findLast(
    (frame) =>
      frame.type === '@xstate.snapshot' &&
      frame.snapshot?.status === 'active' &&
      frame.snapshot.context?.agentId === agentId &&
      ready(frame),
  )?.sessionId;
}

let sent = 0;
/** What a button sends (app.js), and the answer the page gets back for it. */
async function click(sessionId: string, command: string, fields: Record<string, string> = {}): Promise<Ack> {
  const id = `click-${++sent}`;
  page.send(JSON.stringify({ type: 'command', id, run: 'hosted', sessionId, command, ...fields }));
  await waitUntil(() => acks.some((ack) => ack.id === id && ack.mine), `the answer to ${command}`);
  return acks.find((ack) => ack.id === id) as Ack;
}

const executions = () => harness.executions();
const userTexts = (history: Message[]) =>
  history.flatMap((m) => (m.role === 'user' ? [m.content.map((p) => ('text' in p ? p.text : '')).join('')] : []));

it("the page's steer joins a hosted turn, once", async () => {
  const turn = await harness.client.send('steer-page-1', 'work');
  await waitUntil(() => executions().includes('start steer-page-1 g1'), 'the gated tool to start');
  const actor = turnActor('steer-page-1') as string;
  const taken = await takesAnswered(harness.server.adminUrl, turn);
  expect(await click(actor, 'STEER', { text: 'also tea' })).toMatchObject({ ok: true });
  // The turn takes it from the agent's control object while its tool still runs.
  await waitUntil(async () => (await takesAnswered(harness.server.adminUrl, turn)) > taken, 'the turn to take it');
  open('steer-page-1');
  expect(await harness.client.result(turn)).toMatchObject({ stopReason: 'completed', text: 'heard: work | also tea' });
  // Once: the next prompt sees it once (no turn of its own from the fallback either).
  expect((await harness.client.prompt('steer-page-1', 'bye')).text).toBe('heard: work | also tea | bye');
  const history = await harness.client.history('steer-page-1');
  expectValidHistory(history);
  expect(userTexts(history)).toEqual(['work', 'also tea', 'bye']);
  expect(executions().filter((line) => line === 'ran steer-page-1 g1')).toHaveLength(1);
}, 60_000);

it("the page's interrupt ends a hosted turn, once, with a valid history", async () => {
  // The gate is never opened and the tool ignores its signal: only the interrupt ends the call.
  const turn = await harness.client.send('steer-page-2', 'work');
  await waitUntil(() => executions().includes('start steer-page-2 g1'), 'the gated tool to start');
  expect(await click(turnActor('steer-page-2') as string, 'INTERRUPT')).toMatchObject({ ok: true });
  expect(await harness.client.result(turn)).toMatchObject({ stopReason: 'interrupted' });
  // The next turn runs to its end: the interrupt stopped one turn only.
  expect((await harness.client.prompt('steer-page-2', 'again')).text).toBe('heard: work | again');
  const history = await harness.client.history('steer-page-2');
  expectValidHistory(history);
  expect(history.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.content))).toEqual([
    expect.stringContaining('interrupted'),
  ]);
  expect(executions()).not.toContain('ran steer-page-2 g1');
}, 60_000);

it("the page's approval resolves a hosted turn's awakeable, once", async () => {
  const turn = await harness.client.send('approver-page-1', 'prod');
  const awaiting = (frame: Frame) => frame.snapshot?.context?.calls?.some((c) => c.status === 'awaiting') === true;
  await waitUntil(() => turnActor('approver-page-1', awaiting) !== undefined, 'the page to show the call waiting');
  // The awakeable's id is in the agent's state, where the `approve` handler finds it (the turn stores it as it asks).
  await waitUntil(
    async () =>
      (
        await sql(
          harness.server.adminUrl,
          "SELECT key FROM state WHERE service_name = 'troupe-agent' AND service_key = 'approver-page-1' " +
            "AND key = 'approval:d-prod'",
        )
      ).length > 0,
    'the approval to be stored',
  );
  const actor = turnActor('approver-page-1', awaiting) as string;
  expect(await click(actor, 'APPROVE', { toolCallId: 'd-prod' })).toMatchObject({ ok: true });
  expect(await harness.client.result(turn)).toMatchObject({ stopReason: 'completed', text: 'deploy answered' });
  expect(executions().filter((line) => line === 'ran approver-page-1 d-prod')).toHaveLength(1);
  expect(JSON.stringify(await harness.client.history('approver-page-1'))).toContain('deployed prod');
  // A second click finds nothing waiting.
  expect(await click(actor, 'APPROVE', { toolCallId: 'd-prod' })).toMatchObject({ ok: false });
  expect(connection.commands.map((c) => `${c.command.command}:${c.ok}`)).toEqual([
    'STEER:true',
    'INTERRUPT:true',
    'APPROVE:true',
    'APPROVE:false',
  ]);
}, 60_000);
