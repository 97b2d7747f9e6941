import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Message } from '../../src/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, agentClient, balanceAgents } from '../../src/restate/index.js';
import { waitUntil } from '../helpers/until.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';
import {
  journalRows as journalRowsOf,
  sql as sqlOf,
  takesAnswered,
  untilJournaled as untilJournaledIn,
} from './fixtures/journal.js';
import { freePort, startWorker as startWorkerProcess, type WorkerProcess } from './fixtures/workers.js';

// kill -9 of a worker in the middle of a turn: a real restate-server, the worker in a child process (the fixture
// agents), its tools counting their executions in a side file. The worker dies while two tools are running; a new
// worker process takes over the same deployment, Restate replays the turn there, and nothing journaled runs again.
let server: RestateDevServer;
let client: AgentClient;
let dir: string;
let sideFile: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-restate-crash-'));
  sideFile = join(dir, 'executions.log');
  writeFileSync(sideFile, '');
  server = await startRestateDevServer();
  client = agentClient(server.ingressUrl);
}, 90_000);

afterAll(async () => {
  for (const worker of workers) await worker.kill();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A worker process on `port` whose slow tools take `slowMs`, killed -9 after the tests if still running. */
async function startWorker(port: number, slowMs: number, name = ''): Promise<WorkerProcess> {
  const worker = await startWorkerProcess(port, sideFile, name, slowMs);
  workers.push(worker);
  return worker;
}

const sql = <Row>(query: string) => sqlOf<Row>(server.adminUrl, query);
const journalRows = (invocationId: string, where: string) => journalRowsOf(server.adminUrl, invocationId, where);
const untilJournaled = (invocationId: string, where: string, what: string) =>
  untilJournaledIn(server.adminUrl, invocationId, where, what);

const executions = () => readFileSync(sideFile, 'utf8').split('\n').filter(Boolean);
const countOf = (line: string) => executions().filter((l) => l === line).length;

function resultText(history: Message[], toolCallId: string): string {
  for (const message of history) {
    if (message.role !== 'tool') continue;
    const result = message.content.find((part) => part.toolCallId === toolCallId);
    if (result) return JSON.stringify(result);
  }
  return '';
}

it('a worker killed mid-turn: the turn finishes on a new worker and no journaled effect runs twice', async () => {
  const port = await freePort();
  // The first worker's slow tools take a minute: it is killed while one of them runs.
  const first = await startWorker(port, 60_000);
  await server.register(first.url);

  const invocation = await client.send('crashy-1', 'go');
  await waitUntil(() => countOf('start crashy-1 c3') === 1, 'the at-most-once tool to start');
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));

  // The new worker serves the same deployment (same address); its slow tools are quick.
  const second = await startWorker(port, 0);
  await server.register(second.url);
  const outcome = await client.result(invocation);
  expect(outcome).toMatchObject({ agentId: 'crashy-1', stopReason: 'completed', text: 'crashy done' });

  // Journaled before the kill: ran once, never again.
  expect(countOf('ran crashy-1 c1')).toBe(1);
  expect(countOf('ran crashy-1 c2')).toBe(1);
  // Started but not journaled, not safe to repeat: not run again; the model got an "interrupted by a restart" result.
  expect(countOf('start crashy-1 c3')).toBe(1);
  expect(countOf('ran crashy-1 c3')).toBe(0);
  // After the restart: ran once, on the new worker.
  expect(countOf('start crashy-1 c4')).toBe(1);
  expect(countOf('ran crashy-1 c4')).toBe(1);

  const history = await client.history('crashy-1');
  expect(resultText(history, 'c3')).toContain('was running when its worker stopped');
  expect(resultText(history, 'c4')).toContain('slow_repeatable finished');
  const calls = history.flatMap((m) => (m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool_call') : []));
  const results = history.flatMap((m) => (m.role === 'tool' ? m.content : []));
  expect(calls.map((call) => call.id)).toEqual(['c1', 'c2', 'c3', 'c4']);
  expect(results.map((result) => result.toolCallId)).toEqual(['c1', 'c2', 'c3', 'c4']);
  // A call right after the answer that asked for it is marked by that answer, durable before it began: no `started`
  // marker of its own, and still not run again (above).
  expect(await journalRows(invocation, "name LIKE 'tool % started'")).toHaveLength(0);
  expect(await journalRows(invocation, "name = 'tool c4'")).toHaveLength(1);
  second.process.kill('SIGKILL');
}, 120_000);

it("a tool's timeout is a durable timer: the turn run again after a kill keeps the first attempt's deadline", async () => {
  const port = await freePort();
  const first = await startWorker(port, 0);
  await server.register(first.url);
  const invocation = await client.send('timer-1', 'hang');
  await waitUntil(() => countOf('start timer-1 t1') === 1, 'the hanging tool to start');
  await untilJournaled(invocation, "entry_type = 'Command: Sleep'", 'the timer');
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);

  const outcome = await client.result(invocation);
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'went on after 1 result' });
  const history = await client.history('timer-1');
  expect(resultText(history, 't1')).toContain('timed out after 5000 ms and was cancelled');
  // The timer is in the journal once, with its wake-up time, across both attempts: the second worker did not start
  // a timer of its own (the runtime's in-process timer would have; it journals nothing).
  const sleeps = await journalRows(invocation, "entry_type = 'Command: Sleep'");
  expect(sleeps).toHaveLength(1);
  second.process.kill('SIGKILL');
}, 120_000);

it('a model retry waits on a durable timer: killed during the backoff, the retry keeps its deadline', async () => {
  const port = await freePort();
  const first = await startWorker(port, 0);
  await server.register(first.url);
  const invocation = await client.send('flaky-1', 'go');
  // The model was refused (retry after 5 s) and the backoff is journaled: the worker dies while it waits.
  await untilJournaled(invocation, "entry_type = 'Command: Sleep'", 'the backoff');
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);

  const outcome = await client.result(invocation);
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'recovered after a retry' });
  // The refused call is in the journal (never asked again); the retry was asked once, on the new worker.
  expect(countOf('model flaky-1')).toBe(2);
  // One backoff across both attempts: the new worker waited on the journaled timer rather than starting its own.
  expect(await journalRows(invocation, "entry_type = 'Command: Sleep'")).toHaveLength(1);
  second.process.kill('SIGKILL');
}, 120_000);

it('a steer accepted while the worker is down reaches the turn once, after the restart', async () => {
  const port = await freePort();
  const first = await startWorker(port, 60_000);
  await server.register(first.url);
  const invocation = await client.send('steer-crash-1', 'work');
  await waitUntil(() => countOf('start steer-crash-1 w1') === 1, 'the slow tool to start');
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));

  // Accepted with no worker to run anything: Restate holds it durably; no turn has read it.
  const steer = await client.steer('steer-crash-1', 'also tea', { idempotencyKey: 'tea-1' });
  // A client that retries with the same key is answered with the same invocation: accepted once.
  expect(await client.steer('steer-crash-1', 'also tea', { idempotencyKey: 'tea-1' })).toBe(steer);

  // The new worker's slow tools take 3 s, so the turn is still running when the steer rings it.
  const second = await startWorker(port, 3_000);
  await server.register(second.url);
  const outcome = await client.result(invocation);
  expect(outcome.stopReason).toBe('completed');
  // The steer's fallback runs after the turn; a prompt queued behind it sees everything settled.
  await client.result(steer);
  expect((await client.prompt('steer-crash-1', 'bye')).text).toBe('heard: work | also tea | bye');
  const history = await client.history('steer-crash-1');
  expectValidHistory(history);
  // Once, whether it joined the running turn (the usual case) or a turn of its own.
  const steers = history.filter((m) => m.role === 'user' && JSON.stringify(m.content).includes('also tea'));
  expect(steers).toHaveLength(1);
  expect(countOf('start steer-crash-1 w1')).toBe(1);
  expect(countOf('ran steer-crash-1 w1')).toBe(0);
  expect(resultText(history, 'w1')).toContain('was running when its worker stopped');
  expect(countOf('ran steer-crash-1 w2')).toBe(1);
  second.process.kill('SIGKILL');
}, 120_000);

it('a worker killed after its turn took a steer: the replay applies the journaled take, once', async () => {
  const port = await freePort();
  const first = await startWorker(port, 60_000);
  await server.register(first.url);
  const invocation = await client.send('steer-crash-2', 'work');
  await waitUntil(() => countOf('start steer-crash-2 w1') === 1, 'the slow tool to start');
  const taken = () => takesAnswered(server.adminUrl, invocation);
  const takenAtStart = await taken();
  const steer = await client.steer('steer-crash-2', 'also tea');
  // The turn takes the steer (a call to the control object, answered while w1 still runs for a minute): the message
  // has left the control object, and would join the history only at the step boundary after w1's result.
  await waitUntil(async () => (await taken()) > takenAtStart, 'the turn to take the steer');
  const takenBefore = await taken();
  expect(await client.history('steer-crash-2')).toEqual([]);
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));

  const second = await startWorker(port, 0);
  await server.register(second.url);
  const outcome = await client.result(invocation);
  // The replay read the take's answer from the journal and steered the turn at the same place: after w1's result.
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'heard: work | also tea' });
  const history = await client.history('steer-crash-2');
  expectValidHistory(history);
  const steered = history.findIndex((m) => m.role === 'user' && m.source === 'steer');
  expect(history[steered - 1]).toMatchObject({ role: 'tool', content: [{ toolCallId: 'w1' }] });
  expect(resultText(history, 'w1')).toContain('was running when its worker stopped');
  // No second take: the replayed turn asked the control object nothing more, and the steer's fallback (after the
  // turn) found nothing left, so no turn of its own; the next prompt sees the steer once.
  expect(await taken()).toBe(takenBefore);
  await client.result(steer);
  expect((await client.prompt('steer-crash-2', 'bye')).text).toBe('heard: work | also tea | bye');
  const users = (await client.history('steer-crash-2')).filter((m) => m.role === 'user');
  expect(users.map((m) => JSON.stringify(m.content).includes('also tea'))).toEqual([false, true, false]);
  second.process.kill('SIGKILL');
}, 120_000);

it("a worker killed after its turn took a child's result: the replay applies it at the same step, stored once", async () => {
  const port = await freePort();
  const first = await startWorker(port, 60_000);
  await server.register(first.url);
  const root = 'joincrash-1';
  const invocation = await client.send(root, 'work');
  await waitUntil(() => countOf(`start ${root} w1`) === 1, 'the slow tool to start');
  // The child answers at once; its result rings the turn, which takes it while w1 runs for a minute: kill then.
  const taken = () => takesAnswered(server.adminUrl, invocation);
  await waitUntil(async () => (await taken()) >= 1, "the turn to take the child's result");
  const takenBefore = await taken();
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));

  const second = await startWorker(port, 0);
  await server.register(second.url);
  // The replay read the take from the journal and handed the result to the agent at the same place: the step
  // after w1's result answers it, in this turn.
  expect(await client.result(invocation)).toMatchObject({ stopReason: 'completed', text: 'noted' });
  expect(await taken()).toBe(takenBefore);
  await waitUntil(async () => {
    const rows = await sql<{ id: string }>(
      "SELECT id FROM sys_invocation WHERE target_service_name = 'troupe-agent' " +
        `AND target_service_key = '${root}' AND target_handler_name = 'notify' AND status = 'completed'`,
    );
    return rows.length === 1;
  }, "the result's own notify");
  // Its `notify` found it taken and ran no turn: the result is in the history once, after w1's result.
  const history = await client.history(root);
  expectValidHistory(history);
  const notifications = history.filter((m) => m.role === 'user' && m.source === 'notification');
  expect(notifications).toHaveLength(1);
  const at = history.indexOf(notifications[0] as (typeof history)[number]);
  expect(history[at - 1]).toMatchObject({ role: 'tool', content: [{ toolCallId: 'w1' }] });
  expect(history.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'noted' }] });
  expect(history.filter((m) => m.role === 'assistant')).toHaveLength(3);
  second.process.kill('SIGKILL');
}, 120_000);

// 100 subagents, each with a background helper: 400 turns and 200 notifications over 3 worker processes behind
// one balancer (the registered deployment). One worker is killed -9 at half and started again on its port.
const SWARM = 100;

it('a swarm of subagents on 3 workers survives a kill -9 of one of them: every result arrives once', async () => {
  const ports = [await freePort(), await freePort(), await freePort()];
  const running = await Promise.all(ports.map((port, i) => startWorker(port, 0, `w${i}`)));
  const balancer = await balanceAgents(running.map((worker) => worker.url));
  await server.register(balancer.url);
  expect((await client.prompt('swarm-1', `start ${SWARM}`)).text).toBe('swarm started');
  await waitUntil(
    () => executions().filter((line) => line.startsWith('ran swarm-1/')).length >= SWARM / 2,
    'half the swarm',
  );
  await (running[1] as WorkerProcess).kill();
  running[1] = await startWorker(ports[1] as number, 0, 'w1-again');

  let history: Message[] = [];
  for (let i = 0; i < 2400 && notificationsOf(history).length < SWARM; i++) {
    history = await client.history('swarm-1');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 1000)); // room for a duplicate, which must not come
  history = await client.history('swarm-1');
  const notes = notificationsOf(history);
  expect(notes).toHaveLength(SWARM);
  for (let i = 0; i < SWARM; i++) {
    const child = `swarm-1/t0.s${i}`;
    // Once each, and only after the child's own helper reported (its result is the turn that helper woke).
    expect(notes.filter((note) => note.includes(`task_id="t0.s${i}"`))).toEqual([
      expect.stringContaining(`${child} done`),
    ]);
    const childHistory = await client.history(child);
    expect(notificationsOf(childHistory)).toEqual([expect.stringContaining(`${child}/t0.g done`)]);
    for (const agent of [child, `${child}/t0.g`]) {
      // No call ran twice. A journaled result ran exactly once; a call the kill caught between its `started`
      // marker and its result got the "interrupted by a restart" result (it may or may not have run, never twice).
      const ran = countOf(`ran ${agent} k`);
      expect(ran).toBeLessThanOrEqual(1);
      const agentHistory = agent === child ? childHistory : await client.history(agent);
      expectValidHistory(agentHistory);
      const result = resultText(agentHistory, 'k');
      if (result.includes('counted')) expect(ran).toBe(1);
      else expect(result).toContain('was running when its worker stopped');
    }
  }
  expectValidHistory(history);
  // The balancer shared the work: more than one worker process ran tools (how many each got is the scheduler's).
  const workersThatRan = new Set(
    executions().flatMap((line) => (line.startsWith('where ') ? [line.split(' ')[3]] : [])),
  );
  expect(workersThatRan.size).toBeGreaterThanOrEqual(2);
  await balancer.close();
  for (const worker of running) worker.process.kill('SIGKILL');
}, 240_000);

// A foreground swarm (8 tasks, 4 at a time) whose worker is killed -9 after the first tasks finished: the parent's
// turn, replayed on a new worker, decides its join from the journaled completions and calls no child again.
it('a worker killed mid-batch: each task of a foreground swarm settles exactly once', async () => {
  const port = await freePort();
  const first = await startWorker(port, 1_500);
  await server.register(first.url);
  const tasks = Array.from({ length: 8 }, (_, i) => ({ prompt: `work ${i}` }));
  const invocation = await client.send('boss-crash-1', `swarm ${JSON.stringify({ tasks })}`);
  await waitUntil(
    () => executions().filter((line) => /^ran boss-crash-1\/t0\.sw\.\d w$/.test(line)).length >= 2,
    'the first tasks to finish',
  );
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);

  expect(await client.result(invocation)).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const history = await client.history('boss-crash-1');
  expectValidHistory(history);
  const result = resultText(history, 'sw');
  for (let i = 0; i < 8; i++) {
    const child = `boss-crash-1/t0.sw.${i}`;
    expect(result).toContain(`agent_id=\\"${child}\\" status=\\"completed\\">did ${i}<`);
    // One `run` per task: its history holds one prompt, and no tool of it ran twice.
    const childHistory = await client.history(child);
    expectValidHistory(childHistory);
    expect(childHistory.filter((message) => message.role === 'user')).toHaveLength(1);
    expect(countOf(`ran ${child} k`)).toBeLessThanOrEqual(1);
    expect(countOf(`start ${child} w`)).toBeLessThanOrEqual(1);
    if (resultText(childHistory, 'k').includes('counted')) expect(countOf(`ran ${child} k`)).toBe(1);
  }
  const calls = await sql<{ key: string; n: number }>(
    "SELECT target_service_key AS key, COUNT(*) AS n FROM sys_invocation WHERE target_handler_name = 'run' " +
      "AND target_service_key LIKE 'boss-crash-1/%' GROUP BY target_service_key",
  );
  expect(calls).toHaveLength(8);
  for (const row of calls) expect(Number(row.n)).toBe(1);
  second.process.kill('SIGKILL');
}, 120_000);

it("a failed subagent's restart waits on a durable timer: killed during the backoff, it keeps its deadline", async () => {
  const port = await freePort();
  const first = await startWorker(port, 0);
  await server.register(first.url);
  const invocation = await client.send('boss-backoff-1', `swarm ${JSON.stringify({ tasks: [{ prompt: 'flaky b' }] })}`);
  // The child failed; the parent waits 3 s before its restart, and dies meanwhile.
  await untilJournaled(invocation, "entry_type = 'Command: Sleep'", 'the restart backoff');
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);

  expect(await client.result(invocation)).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const history = await client.history('boss-backoff-1');
  expect(resultText(history, 'sw')).toContain('status=\\"completed\\">recovered b<');
  // Two attempts of the child (the refused one, the restart), one backoff in the parent's journal across both
  // of its attempts: the new worker waited on the journaled timer rather than starting one of its own.
  expect(countOf('model boss-backoff-1/t0.sw')).toBe(2);
  expect(await journalRows(invocation, "entry_type = 'Command: Sleep'")).toHaveLength(1);
  expect((await client.history('boss-backoff-1/t0.sw')).map((message) => message.role)).toEqual(['user', 'assistant']);
  second.process.kill('SIGKILL');
}, 120_000);

it("a failed background subagent's restart waits on a durable timer: killed during the backoff, it reports once", async () => {
  const port = await freePort();
  const first = await startWorker(port, 0);
  await server.register(first.url);
  const root = 'boss-bgbackoff-1';
  const child = `${root}/t0.a0`;
  expect((await client.prompt(root, 'background ["flaky b"]')).text).toBe('joined');
  // The child's task failed; its batch (an invocation of its own, keyed by the batch's first task) waits 3 s before
  // the restart, and its worker dies meanwhile.
  let task = '';
  await waitUntil(async () => {
    const rows = await sql<{ id: string }>(
      `SELECT id FROM sys_invocation WHERE target_service_key = '${child}' AND target_handler_name = 'supervise'`,
    );
    task = rows[0]?.id ?? '';
    return task !== '';
  }, "the child's batch invocation");
  await untilJournaled(task, "entry_type = 'Command: Sleep'", 'the restart backoff');
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);

  await waitUntil(async () => notificationsOf(await client.history(root)).length > 0, "the child's report");
  await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second report, which must not come
  expect(notificationsOf(await client.history(root))).toEqual([
    expect.stringMatching(/status="completed">recovered b</),
  ]);
  // Two attempts (the refused one, the restart) and one backoff in the batch's journal across both of its
  // invocation's attempts: the new worker waited on the journaled timer rather than starting one of its own.
  expect(countOf(`model ${child}`)).toBe(2);
  expect(await journalRows(task, "entry_type = 'Command: Sleep'")).toHaveLength(1);
  expect((await client.history(child)).map((message) => message.role)).toEqual(['user', 'assistant']);
  second.process.kill('SIGKILL');
}, 120_000);

// One batch of three calls, the slow one first: the two quick calls run (and are journaled) while it runs, and the
// worker is killed after their results are journaled. The replay reads them back and closes the slow call.
it("a batch's calls run together; killed after the second result is journaled, none runs again", async () => {
  const port = await freePort();
  const first = await startWorker(port, 60_000);
  await server.register(first.url);
  const invocation = await client.send('batchy-1', 'go');
  // The slow call started first and is still running when the quick ones have run: they overlap.
  await waitUntil(() => countOf('ran batchy-1 k1') === 1 && countOf('ran batchy-1 k2') === 1, 'the quick calls');
  expect(countOf('start batchy-1 w')).toBe(1);
  // Journaled so far: the model's answer, which marks the batch's calls, then the two quick results (three run
  // completions).
  const completions = async () => (await journalRows(invocation, "entry_type = 'Notification: Run'")).length;
  for (let i = 0; i < 1200 && (await completions()) < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(await completions()).toBe(3);
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);
  expect(await client.result(invocation)).toMatchObject({ stopReason: 'completed', text: 'batch done' });
  // The journaled results ran once; the slow call, started and not journaled, was not run again.
  expect(countOf('ran batchy-1 k1')).toBe(1);
  expect(countOf('ran batchy-1 k2')).toBe(1);
  expect(countOf('start batchy-1 w')).toBe(1);
  expect(countOf('ran batchy-1 w')).toBe(0);
  const history = await client.history('batchy-1');
  expectValidHistory(history);
  expect(resultText(history, 'w')).toContain('was running when its worker stopped');
  expect(resultText(history, 'k1')).toContain('counted 1');
  expect(resultText(history, 'k2')).toContain('counted 2');
  second.process.kill('SIGKILL');
}, 120_000);

// A foreground child whose own background child is still working when its turn ends: the parent waits for its
// hand-off on an awakeable, and the worker is killed then. The parent's replay waits on the same awakeable, which
// the child resolves from the turn its child's notification woke: one hand-off, its last turn's.
it('a worker killed while a parent waits for a foreground child that waits for its own: one hand-off, the last turn', async () => {
  const port = await freePort();
  const first = await startWorker(port, 60_000);
  await server.register(first.url);
  const root = 'boss-nestcrash-1';
  const child = `${root}/t0.a0`;
  const grandchild = `${child}/t0.n`;
  const invocation = await client.send(root, 'agents ["helped work g"]');
  // The child's `run` has answered (it waits for its own child) and the grandchild's slow tool runs: kill.
  await waitUntil(async () => {
    const rows = await sql<{ id: string }>(
      `SELECT id FROM sys_invocation WHERE target_service_key = '${child}' AND target_handler_name = 'run' ` +
        "AND status = 'completed'",
    );
    return rows.length > 0 && countOf(`start ${grandchild} w`) === 1;
  }, "the child's first turn, and its own child's slow tool");
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  const second = await startWorker(port, 0);
  await server.register(second.url);

  expect(await client.result(invocation)).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const history = await client.history(root);
  expectValidHistory(history);
  expect(resultText(history, 'a0')).toContain('"text":"nested: did g"');
  // One `run` and one `notify` of the child (and the read of its doorbell by the result's way to a running turn,
  // control.ts: none ran); the grandchild's tools ran once each (its slow one was cut by the kill).
  const invocations = await sql<{ handler: string; n: number }>(
    'SELECT target_handler_name AS handler, COUNT(*) AS n FROM sys_invocation ' +
      `WHERE target_service_name = 'troupe-agent' AND target_service_key = '${child}' ` +
      'GROUP BY target_handler_name ORDER BY handler',
  );
  expect(invocations.map((row) => `${row.handler} ${row.n}`)).toEqual(['doorbell 1', 'notify 1', 'run 1']);
  expect(countOf(`ran ${grandchild} k`)).toBe(1);
  expect(countOf(`start ${grandchild} w`)).toBe(1);
  const childHistory = await client.history(child);
  expectValidHistory(childHistory);
  expect(notificationsOf(childHistory)).toHaveLength(1);
  second.process.kill('SIGKILL');
}, 120_000);
