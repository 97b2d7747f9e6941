/**
 * `npm run bench:restate`: W3 (the swarm: agents of 3 tool steps and a final answer, model latency 5 ms) hosted on
 * Restate with 1 and with 3 worker processes, against embedded W3 in the same run; then what a step costs in journal
 * entries and round-trips, read back from the server's own journal (the admin API's `sys_journal`). A report, not a
 * target: it writes nothing and fails only when a run's results are wrong.
 *
 *   npm run bench:restate                      W3's full size (500 agents, 100 at a time), 3 rounds
 *   npm run bench:restate -- --agents 100      a smaller swarm
 *   npm run bench:restate -- --rounds 5        more rounds
 *   npm run bench:restate -- --smoke           6 agents, 1 round: a quick check that it all runs
 *   npm run bench:restate -- --hosts           instead: Troupe's host against @restatedev/xstate (restate-hosts.ts)
 *   npm run bench:restate -- --tree            instead: W3 as one hosted tree (a root's swarm of every agent), its
 *                                              open tasks counted for maxAgents against not counted
 *
 * Everything is on loopback: `restate-server` from the dev dependency (ports chosen by the server), workers on free
 * ports. Each round runs every row once in turn (embedded in its own process, as `npm run bench` does), so load that
 * comes and goes on a shared machine falls on every row alike; read the ratios, not the milliseconds.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type RestateDevServer, startRestateDevServer } from '../src/restate/dev-server.js';
import { type AgentBalancer, agentClient, balanceAgents } from '../src/restate/index.js';
import { FINAL_TEXT } from './fixtures.js';
import type { Measurement } from './measure.js';
import { median } from './measure.js';
import { compareHosts } from './restate-hosts.js';
import { check, pool } from './workload.js';

const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const size = smoke
  ? { agents: 6, toolSteps: 1, latencyMs: 1, concurrency: 3 }
  : { agents: option('--agents', 500), toolSteps: 3, latencyMs: 5, concurrency: option('--concurrency', 100) };
const rounds = smoke ? 1 : option('--rounds', 3);
const steps = size.agents * (size.toolSteps + 1);

const run = promisify(execFile);
const childScript = fileURLToPath(new URL('./child.ts', import.meta.url));
const workerScript = fileURLToPath(new URL('./restate-worker.ts', import.meta.url));
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Embedded W3 (the supervisor's swarm), one measured run in its own process on XState's production build. */
async function embedded(): Promise<{ ms: number; cpuMs: number }> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const argv = ['--expose-gc', '--import', 'tsx', childScript, 'W3', 'troupe', '--size', JSON.stringify(size)];
  const { stdout } = await run(process.execPath, [...argv, '--warmup', '1', '--runs', '1'], { env });
  const measurement = JSON.parse(stdout.trim().split('\n').pop() ?? '') as Measurement;
  return { ms: measurement.median, cpuMs: measurement.cpuMedian ?? Number.NaN };
}

/** A worker process serving W3's agents as the object `name`; answers a line on stdin with its tool-call count. */
interface Worker {
  url: string;
  process: ChildProcess;
  lines: Interface;
}

async function startWorker(name: string, tree: string[] = []): Promise<Worker> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const argv = ['--import', 'tsx', workerScript, '0', String(size.toolSteps), String(size.latencyMs), name, ...tree];
  const child = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'], env });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`a worker exited (${code}) before listening`)));
    lines.once('line', resolve);
  });
  return { url, process: child, lines };
}

async function toolCalls(workers: readonly Worker[]): Promise<number> {
  let sum = 0;
  for (const worker of workers) {
    const answer = new Promise<string>((resolve) => worker.lines.once('line', resolve));
    worker.process.stdin?.write('count\n');
    sum += Number(await answer);
  }
  return sum;
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux). */
function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
}

/** One hosting of W3 on Restate: a service name, the workers serving it, and what was registered for it. */
interface Hosting {
  label: string;
  object: string;
  workers: Worker[];
  balancer?: AgentBalancer;
}

async function host(server: RestateDevServer, object: string, workerCount: number, tree?: string[]): Promise<Hosting> {
  const workers = await Promise.all(Array.from({ length: workerCount }, () => startWorker(object, tree)));
  // Restate sends an object's invocations to its latest deployment: several workers need one address in front.
  const balancer = workerCount > 1 ? await balanceAgents(workers.map((worker) => worker.url)) : undefined;
  await server.register(balancer?.url ?? (workers[0] as Worker).url);
  const label = `Troupe on Restate, ${workerCount} worker${workerCount > 1 ? 's' : ''}`;
  return { label, object, workers, ...(balancer ? { balancer } : {}) };
}

/** W3 on Restate: every agent's turn is a `prompt` to its own object, `concurrency` in flight (the swarm's cap). */
async function swarmOn(server: RestateDevServer, hosting: Hosting, runId: string, agents = size.agents) {
  const client = agentClient(server.ingressUrl, hosting.object);
  const before = await toolCalls(hosting.workers);
  const pids = [server.pid, ...hosting.workers.map((worker) => worker.process.pid)];
  const cpuBefore = pids.map(cpuMsOf);
  const ownCpu = process.cpuUsage();
  const start = performance.now();
  const outcomes = await pool(agents, size.concurrency, (n) => client.prompt(`${runId}.${n}`, `task ${n}`));
  const ms = performance.now() - start;
  const own = process.cpuUsage(ownCpu);
  const cpuAfter = pids.map(cpuMsOf);
  const wrong = outcomes.filter((outcome) => outcome.stopReason !== 'completed' || outcome.text !== FINAL_TEXT);
  check(wrong.length === 0, `${wrong.length} of ${agents} agents did not complete with the final text`);
  const ran = (await toolCalls(hosting.workers)) - before;
  check(ran === agents * size.toolSteps, `expected ${agents * size.toolSteps} tool calls to run once, ${ran} ran`);
  const serverCpu = (cpuAfter[0] as number) - (cpuBefore[0] as number);
  const workersCpu = cpuAfter.slice(1).reduce((sum, after, i) => sum + after - (cpuBefore[i + 1] as number), 0);
  // The client (and the balancer, in this process) is the bench's own share.
  const benchCpu = (own.user + own.system) / 1000;
  return { ms, serverCpu, workersCpu, benchCpu };
}

interface JournalCount {
  entry_type: string;
  kind: string;
  n: number;
}

/** The journal entries of one object's invocations, by type, and by what a `Run` was for (model, tool marker, tool). */
async function journalOf(
  server: RestateDevServer,
  object: string,
): Promise<{ invocations: number; rows: JournalCount[] }> {
  const query = async <T>(sql: string): Promise<T[]> => {
    const response = await fetch(`${server.adminUrl}/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: sql }),
    });
    if (!response.ok) throw new Error(`query failed: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { rows: T[] }).rows;
  };
  const of = `FROM sys_invocation WHERE target_service_name = '${object}' AND target_handler_name = 'prompt' AND status = 'completed'`;
  const [{ n: invocations } = { n: 0 }] = await query<{ n: number }>(`SELECT count(*) AS n ${of}`);
  const rows = await query<JournalCount>(
    `SELECT j.entry_type, CASE WHEN j.name LIKE 'model %' THEN 'model' WHEN j.name LIKE 'tool % started' THEN ` +
      `'tool marker' WHEN j.name LIKE 'tool %' THEN 'tool result' ELSE '' END AS kind, count(*) AS n ` +
      `FROM sys_journal j WHERE j.id IN (SELECT id ${of}) GROUP BY 1, 2 ORDER BY 3 DESC`,
  );
  return { invocations, rows };
}

const fmt = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));

const server = await startRestateDevServer();
const hostings: Hosting[] = [];
try {
  if (args.includes('--hosts')) {
    const hostsSize = smoke ? { steps: 2, turns: 4, concurrency: 2 } : { steps: 4, turns: 200, concurrency: 50 };
    const lines = await compareHosts(server, { ...hostsSize, rounds });
    process.stdout.write(`${lines.join('\n')}\n`);
  } else if (args.includes('--tree')) await w3Tree();
  else await w3();
} finally {
  for (const hosting of hostings) {
    await hosting.balancer?.close();
    for (const worker of hosting.workers) worker.process.kill('SIGKILL');
  }
  await server.stop();
}

async function w3(): Promise<void> {
  hostings.push(await host(server, 'w3one', 1), await host(server, 'w3three', 3));
  // Warm each hosting (JIT, connections, the server's partitions) with a small swarm before measuring.
  for (const hosting of hostings) await swarmOn(server, hosting, 'warm', Math.min(size.agents, size.concurrency));
  const rows = new Map<string, { ms: number[]; cpu: number[]; serverCpu: number[] }>();
  const add = (label: string, ms: number, cpu: number, serverCpu = 0) => {
    const row = rows.get(label) ?? { ms: [], cpu: [], serverCpu: [] };
    row.ms.push(ms);
    row.cpu.push(cpu);
    row.serverCpu.push(serverCpu);
    rows.set(label, row);
  };
  for (let round = 1; round <= rounds; round++) {
    const own = await embedded();
    log(`round ${round}/${rounds} embedded: ${fmt(own.ms)} ms`);
    add('Troupe embedded', own.ms, own.cpuMs);
    for (const hosting of hostings) {
      const measured = await swarmOn(server, hosting, `r${round}`);
      log(`round ${round}/${rounds} ${hosting.label}: ${fmt(measured.ms)} ms`);
      const cpu = measured.serverCpu + measured.workersCpu + measured.benchCpu;
      add(hosting.label, measured.ms, cpu, measured.serverCpu);
    }
  }

  const ideal = Math.ceil(size.agents / size.concurrency) * (size.toolSteps + 1) * size.latencyMs;
  const base = median(rows.get('Troupe embedded')?.ms ?? []);
  const baseCpu = median(rows.get('Troupe embedded')?.cpu ?? []);
  const out: string[] = [
    `## W3 on Restate (${new Date().toISOString()}, ${rounds} round${rounds > 1 ? 's' : ''})`,
    '',
    `${size.agents} agents, ${size.toolSteps} tool steps + a final answer each, model latency ${size.latencyMs} ms, ` +
      `${size.concurrency} at a time; ideal ${ideal} ms. CPU: every process of the row (server, workers, the ` +
      'bench client and balancer; embedded: its one process).',
    '',
    '| hosting | wall ms (median) | × embedded | µs wall per step | CPU ms | CPU × embedded | server CPU ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [label, row] of rows) {
    const ms = median(row.ms);
    const cpu = median(row.cpu);
    const serverCpu = label === 'Troupe embedded' ? '' : fmt(median(row.serverCpu));
    out.push(
      `| ${label} | ${fmt(ms)} | ${(ms / base).toFixed(2)}× | ${fmt((ms * 1000) / steps)} | ${fmt(cpu)} | ` +
        `${(cpu / baseCpu).toFixed(2)}× | ${serverCpu} |`,
    );
  }

  const journal = await journalOf(server, 'w3one');
  const turns = journal.invocations;
  const total = journal.rows.reduce((sum, row) => sum + row.n, 0);
  // Every `Run` command waits for its completion (`Notification: Run`) before the handler goes on: a round-trip.
  // The other commands are sent without waiting (state writes, the output) or answered from the eagerly sent state.
  const count = (type: string, kind?: string) =>
    journal.rows
      .filter((row) => row.entry_type === type && (kind === undefined || row.kind === kind))
      .reduce((s, r) => s + r.n, 0);
  const roundTrips = count('Notification: Run');
  const perTurn = (n: number) => fmt(n / turns);
  out.push(
    '',
    `Journal of ${turns} turns (${turns * (size.toolSteps + 1)} steps, the 1-worker hosting, read from sys_journal):`,
    '',
    '| per | entries | round-trips |',
    '| --- | ---: | ---: |',
    `| model call | ${fmt((count('Command: Run', 'model') * 2) / turns / (size.toolSteps + 1))} | ` +
      `${fmt(count('Command: Run', 'model') / turns / (size.toolSteps + 1))} |`,
    `| tool call | ${fmt(((count('Command: Run', 'tool marker') + count('Command: Run', 'tool result')) * 2) / turns / size.toolSteps)} | ` +
      `${fmt((count('Command: Run', 'tool marker') + count('Command: Run', 'tool result')) / turns / size.toolSteps)} |`,
    `| step (W3's mean: ${size.toolSteps} of ${size.toolSteps + 1} steps call a tool) | ` +
      `${fmt(total / turns / (size.toolSteps + 1))} | ${fmt(roundTrips / turns / (size.toolSteps + 1))} |`,
    `| turn, besides its calls (input, state reads and writes, output) | ` +
      `${perTurn(total - count('Command: Run') - count('Notification: Run'))} | 0 |`,
    '',
    'Entries by type: ' +
      journal.rows.map((row) => `${row.entry_type}${row.kind ? ` (${row.kind})` : ''} ${perTurn(row.n)}`).join(', ') +
      ' per turn.',
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

/**
 * W3 as one hosted tree: a root whose one `swarm` call runs every agent as its subagent (`concurrency` at a time),
 * with the tree's open tasks counted (`maxAgents`' default: a journaled call per batch, a release per task) and not
 * (`maxAgents: Infinity`), alternated in each round on one server; the ratio is what counting costs.
 */
async function w3Tree(): Promise<void> {
  const concurrency = String(size.concurrency);
  hostings.push(
    await host(server, 'w3counted', 1, ['counted', concurrency]),
    await host(server, 'w3free', 1, ['free', concurrency]),
  );
  const once = async (hosting: Hosting, runId: string, agents: number) => {
    const client = agentClient(server.ingressUrl, hosting.object);
    const before = await toolCalls(hosting.workers);
    const pids = [server.pid, ...hosting.workers.map((worker) => worker.process.pid)];
    const cpuBefore = pids.map(cpuMsOf);
    const start = performance.now();
    const outcome = await client.prompt(runId, `swarm ${agents}`);
    const ms = performance.now() - start;
    const cpu = pids.map(cpuMsOf).reduce((sum, after, i) => sum + after - (cpuBefore[i] as number), 0);
    check(outcome.text === FINAL_TEXT, `the root answered ${JSON.stringify(outcome.text)}`);
    const ran = (await toolCalls(hosting.workers)) - before;
    check(ran === agents * size.toolSteps, `expected ${agents * size.toolSteps} tool calls to run once, ${ran} ran`);
    return { ms, cpu };
  };
  for (const hosting of hostings) await once(hosting, 'warm', Math.min(size.agents, size.concurrency));
  const rows = new Map(hostings.map((hosting) => [hosting.object, { ms: [] as number[], cpu: [] as number[] }]));
  for (let round = 1; round <= rounds; round++) {
    for (const hosting of round % 2 ? hostings : [...hostings].reverse()) {
      const measured = await once(hosting, `r${round}`, size.agents);
      log(`round ${round}/${rounds} ${hosting.object}: ${fmt(measured.ms)} ms`);
      rows.get(hosting.object)?.ms.push(measured.ms);
      rows.get(hosting.object)?.cpu.push(measured.cpu);
    }
  }
  const free = rows.get('w3free') ?? { ms: [], cpu: [] };
  const out = [
    `## W3 as one hosted tree (${new Date().toISOString()}, ${rounds} round${rounds > 1 ? 's' : ''})`,
    '',
    `A root's swarm of ${size.agents} subagents, ${size.concurrency} at a time, each ${size.toolSteps} tool steps + ` +
      `a final answer, model latency ${size.latencyMs} ms; 1 worker. CPU: server and worker.`,
    '',
    '| maxAgents | wall ms (median) | × not counted | CPU ms | CPU × not counted |',
    '| --- | ---: | ---: | ---: | ---: |',
  ];
  for (const [object, row] of rows) {
    const label = object === 'w3free' ? 'not counted (Infinity)' : 'counted (default 10,000)';
    out.push(
      `| ${label} | ${fmt(median(row.ms))} | ${(median(row.ms) / median(free.ms)).toFixed(2)}× | ` +
        `${fmt(median(row.cpu))} | ${(median(row.cpu) / median(free.cpu)).toFixed(2)}× |`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}
