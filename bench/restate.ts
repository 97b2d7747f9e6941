/**
 * `npm run bench:restate`: W3 (the swarm: agents of 3 tool steps and a final answer, model latency 5 ms, CPU-bound)
 * hosted on Restate with 1 and with 3 worker processes, and a latency-bound swarm (1,000 agents at once, two model
 * calls of 1.5 s with a tool call between) on 1 worker, each against the same swarm embedded in the same run; then
 * what a turn and a step cost in invocations, journal entries and round-trips, read back from the server's own
 * journal (the admin API's `sys_journal`), CPU per turn by process beside an empty handler's, and the targets as ratios
 * of this run. The report is appended to bench/results.md (`--smoke` writes nothing); the run fails only when a
 * run's results are wrong.
 *
 *   npm run bench:restate                      W3's full size (500 agents, 100 at a time), 3 rounds
 *   npm run bench:restate -- --agents 100      a smaller W3
 *   npm run bench:restate -- --latency-agents 200   a smaller latency-bound swarm (0: none)
 *   npm run bench:restate -- --rounds 5        more rounds
 *   npm run bench:restate -- --smoke           6 agents, 1 round: a quick check that it all runs
 *   npm run bench:restate -- --hosts           instead: Troupe's host against @restatedev/xstate (restate-hosts.ts)
 *   npm run bench:restate -- --tree            instead: W3 as one hosted tree (a root's swarm of every agent), its
 *                                              open tasks counted for maxAgents against not counted
 *   npm run bench:restate -- --background      instead: invocations and journal entries per background subagent
 *                                              (restate-background.ts; `--children n`, default 100)
 *
 * Everything is on loopback: `restate-server` from the dev dependency (ports chosen by the server), workers on free
 * ports. Each round runs every row once in turn (embedded in its own process, as `npm run bench` does), so load that
 * comes and goes on a shared machine falls on every row alike; read the ratios, not the milliseconds.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type RestateDevServer, startRestateDevServer } from '../src/restate/dev-server.js';
import { type AgentBalancer, agentClient, balanceAgents } from '../src/restate/index.js';
import { FINAL_TEXT } from './fixtures.js';
import type { Measurement } from './measure.js';
import { median } from './measure.js';
import { adminQuery } from './restate-admin.js';
import { backgroundCosts } from './restate-background.js';
import { compareHosts } from './restate-hosts.js';
import { writeRestateSection } from './restate-section.js';
import { check, pool } from './workload.js';

const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
/** A swarm of independent agents: each `toolSteps` echo calls then a final answer, each model call `latencyMs`. */
interface Swarm {
  agents: number;
  toolSteps: number;
  latencyMs: number;
  concurrency: number;
}
const size: Swarm = smoke
  ? { agents: 6, toolSteps: 1, latencyMs: 1, concurrency: 3 }
  : { agents: option('--agents', 500), toolSteps: 3, latencyMs: 5, concurrency: option('--concurrency', 100) };
// Latency-bound: every agent at once, so the wall time is the model's (two calls of 1.5 s) plus what hosting adds.
const latencyAgents = smoke ? 6 : option('--latency-agents', 1000);
const latencySize: Swarm = {
  agents: latencyAgents,
  toolSteps: 1,
  latencyMs: smoke ? 50 : 1500,
  concurrency: latencyAgents,
};
const rounds = smoke ? 1 : option('--rounds', 3);

const run = promisify(execFile);
const childScript = fileURLToPath(new URL('./child.ts', import.meta.url));
const workerScript = fileURLToPath(new URL('./restate-worker.ts', import.meta.url));
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Embedded W3 (the supervisor's swarm), one measured run in its own process on XState's production build. */
async function embedded(swarm: Swarm = size): Promise<{ ms: number; cpuMs: number }> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const argv = ['--expose-gc', '--import', 'tsx', childScript, 'W3', 'troupe', '--size', JSON.stringify(swarm)];
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

async function startWorker(name: string, swarm: Swarm, tree: string[] = []): Promise<Worker> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const argv = ['--import', 'tsx', workerScript, '0', String(swarm.toolSteps), String(swarm.latencyMs), name, ...tree];
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
  swarm: Swarm;
  workers: Worker[];
  balancer?: AgentBalancer;
}

async function host(
  server: RestateDevServer,
  object: string,
  workerCount: number,
  swarm: Swarm = size,
  tree?: string[],
): Promise<Hosting> {
  const workers = await Promise.all(Array.from({ length: workerCount }, () => startWorker(object, swarm, tree)));
  // Restate sends an object's invocations to its latest deployment: several workers need one address in front.
  const balancer = workerCount > 1 ? await balanceAgents(workers.map((worker) => worker.url)) : undefined;
  await server.register(balancer?.url ?? (workers[0] as Worker).url);
  const label = `Troupe on Restate, ${workerCount} worker${workerCount > 1 ? 's' : ''}`;
  return { label, object, swarm, workers, ...(balancer ? { balancer } : {}) };
}

/** W3 on Restate: every agent's turn is a `prompt` to its own object, `concurrency` in flight (the swarm's cap). */
async function swarmOn(server: RestateDevServer, hosting: Hosting, runId: string, agents = hosting.swarm.agents) {
  const { concurrency, toolSteps } = hosting.swarm;
  const client = agentClient(server.ingressUrl, hosting.object);
  const before = await toolCalls(hosting.workers);
  const pids = [server.pid, ...hosting.workers.map((worker) => worker.process.pid)];
  const cpuBefore = pids.map(cpuMsOf);
  const ownCpu = process.cpuUsage();
  const start = performance.now();
  const outcomes = await pool(agents, concurrency, (n) => client.prompt(`${runId}.${n}`, `task ${n}`));
  const ms = performance.now() - start;
  const own = process.cpuUsage(ownCpu);
  const cpuAfter = pids.map(cpuMsOf);
  const wrong = outcomes.filter((outcome) => outcome.stopReason !== 'completed' || outcome.text !== FINAL_TEXT);
  check(wrong.length === 0, `${wrong.length} of ${agents} agents did not complete with the final text`);
  const ran = (await toolCalls(hosting.workers)) - before;
  check(ran === agents * toolSteps, `expected ${agents * toolSteps} tool calls to run once, ${ran} ran`);
  const serverCpu = (cpuAfter[0] as number) - (cpuBefore[0] as number);
  const workersCpu = cpuAfter.slice(1).reduce((sum, after, i) => sum + after - (cpuBefore[i + 1] as number), 0);
  // The client (and the balancer, in this process) is the bench's own share.
  const benchCpu = (own.user + own.system) / 1000;
  return { ms, serverCpu, workersCpu, benchCpu };
}

interface JournalCount {
  handler: string;
  entry_type: string;
  kind: string;
  n: number;
}

/**
 * What the prompt turns of one object cost the server: the turns, every invocation of the object's family (its
 * control object, task book and slots) per turn, and the journal entries of all of them by handler, type and what a
 * `Run` was for (model, tool marker, tool result).
 */
async function journalOf(
  server: RestateDevServer,
  object: string,
): Promise<{ turns: number; invocations: number; rows: JournalCount[] }> {
  const query = <T>(sql: string) => adminQuery<T>(server, sql);
  const family = ['', '-control', '-tasks', '-slots'].map((suffix) => `'${object}${suffix}'`).join(', ');
  const of = `FROM sys_invocation WHERE target_service_name IN (${family}) AND status = 'completed'`;
  const [{ n: turns } = { n: 0 }] = await query<{ n: number }>(
    `SELECT count(*) AS n ${of} AND target_handler_name = 'prompt'`,
  );
  const [{ n: invocations } = { n: 0 }] = await query<{ n: number }>(`SELECT count(*) AS n ${of}`);
  const rows = await query<JournalCount>(
    `SELECT i.target_handler_name AS handler, j.entry_type, CASE WHEN j.name LIKE 'model %' THEN 'model' ` +
      `WHEN j.name LIKE 'tool % started' THEN 'tool marker' WHEN j.name LIKE 'tool %' THEN 'tool result' ` +
      `WHEN j.name = 'turn end' THEN 'turn end' ` +
      `ELSE '' END AS kind, count(*) AS n FROM sys_journal j JOIN sys_invocation i ON j.id = i.id ` +
      `WHERE i.target_service_name IN (${family}) AND i.status = 'completed' GROUP BY 1, 2, 3 ORDER BY 4 DESC`,
  );
  return { turns, invocations, rows };
}

/**
 * The journal of a turn by what each entry is for, per turn: entries, and round-trips (a `Run` or a `Call` waits for
 * its completion before the handler goes on; state writes, a one-way send and the output are sent without waiting,
 * and state reads are answered from the state sent with the invocation).
 */
function journalTable(journal: Awaited<ReturnType<typeof journalOf>>, swarm: Swarm): string[] {
  const { turns } = journal;
  const stepsPerTurn = swarm.toolSteps + 1;
  const count = (test: (row: JournalCount) => boolean) =>
    journal.rows.filter(test).reduce((sum, row) => sum + row.n, 0);
  const ofTurn = (row: JournalCount) => row.handler === 'prompt';
  const runs = (kind: string) => count((row) => ofTurn(row) && row.entry_type === 'Command: Run' && row.kind === kind);
  const types = (...entryTypes: string[]) => count((row) => ofTurn(row) && entryTypes.includes(row.entry_type));
  const calls = types('Command: Call');
  const purposes: [string, number, number][] = [
    ['input and output', types('Command: Input', 'Command: Output'), 0],
    ['model calls (a `Run` and its completion each)', runs('model') * 2, runs('model')],
    ['tool `started` markers', runs('tool marker') * 2, runs('tool marker')],
    ['tool results', runs('tool result') * 2, runs('tool result')],
    [
      'state reads: the ledger (turns, usage, doorbell); with subagents, kept notifications',
      types('Command: GetEagerState', 'Command: GetLazyState', 'Command: GetEagerStateKeys'),
      0,
    ],
    [
      "state writes: the ledger with the doorbell, the turn's messages, the ledger without it",
      types('Command: SetState', 'Command: ClearState', 'Command: ClearAllState'),
      0,
    ],
    [
      "the turn's end: a no-op `Run` raced with the doorbell (a steer that rang as it ended)",
      runs('turn end') * 2,
      runs('turn end'),
    ],
    [
      "calls to other objects (the control object's `take`, after a ring)",
      types('Command: Call', 'Notification: CallInvocationId', 'Notification: Call'),
      calls,
    ],
  ];
  const listed = purposes.reduce((sum, [, n]) => sum + n, 0);
  const ownTotal = count(ofTurn);
  purposes.push(['other', ownTotal - listed, 0]);
  const others = count((row) => !ofTurn(row));
  const roundTrips = purposes.reduce((sum, [, , n]) => sum + n, 0);
  const per = (n: number) => fmt(n / turns);
  const handlers = [...new Set(journal.rows.filter((row) => !ofTurn(row)).map((row) => row.handler))].join(', ');
  return [
    `Journal of ${turns} turns (${turns * stepsPerTurn} steps; the 1-worker hosting, read from sys_journal), per turn:`,
    '',
    '| entries for | entries | round-trips |',
    '| --- | ---: | ---: |',
    ...purposes.map(([what, n, trips]) => `| ${what} | ${per(n)} | ${per(trips)} |`),
    `| the turn's journal | ${per(ownTotal)} | ${per(roundTrips)} |`,
    `| journals of the other invocations it caused (${handlers || 'none'}) | ${per(others)} | |`,
    '',
    `Invocations per turn: ${per(journal.invocations)}. Per step (W3's mean: ${swarm.toolSteps} of ${stepsPerTurn} ` +
      `steps call a tool): ${fmt(ownTotal / turns / stepsPerTurn)} entries of the turn's journal, ` +
      `${fmt(roundTrips / turns / stepsPerTurn)} round-trips. Per turn besides its model and tool calls: ` +
      `${per(ownTotal - (runs('model') + runs('tool marker') + runs('tool result')) * 2)} entries.`,
  ];
}

const fmt = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));

const server = await startRestateDevServer();
const hostings: Hosting[] = [];
try {
  if (args.includes('--hosts')) {
    const hostsSize = smoke ? { steps: 2, turns: 4, concurrency: 2 } : { steps: 4, turns: 200, concurrency: 50 };
    const lines = await compareHosts(server, { ...hostsSize, rounds });
    process.stdout.write(`${lines.join('\n')}\n`);
  } else if (args.includes('--background')) {
    const lines = await backgroundCosts(server, smoke ? 3 : option('--children', 100), smoke);
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
  const latency = latencySize.agents > 0 ? await host(server, 'swarm', 1, latencySize) : undefined;
  if (latency) hostings.push(latency);
  // An object whose `prompt` answers at once: what the server, a worker and the client spend on an invocation alone.
  const empty = await host(server, 'empty', 1, { ...size, toolSteps: 0, latencyMs: 0 }, ['empty']);
  hostings.push(empty);
  // Warm each hosting (JIT, connections, the server's partitions) with a small swarm before measuring.
  for (const hosting of hostings) await swarmOn(server, hosting, 'warm', Math.min(size.agents, size.concurrency));
  type Row = { ms: number[]; cpu: number[]; server: number[]; workers: number[]; bench: number[] };
  const rows = new Map<string, Row>();
  const add = (label: string, ms: number, cpu: number, by?: Awaited<ReturnType<typeof swarmOn>>) => {
    const row = rows.get(label) ?? { ms: [], cpu: [], server: [], workers: [], bench: [] };
    row.ms.push(ms);
    row.cpu.push(cpu);
    row.server.push(by?.serverCpu ?? 0);
    row.workers.push(by?.workersCpu ?? 0);
    row.bench.push(by?.benchCpu ?? 0);
    rows.set(label, row);
  };
  const hosted = (label: string, measured: Awaited<ReturnType<typeof swarmOn>>) =>
    add(label, measured.ms, measured.serverCpu + measured.workersCpu + measured.benchCpu, measured);
  const EMBEDDED = 'Troupe embedded';
  const LATENCY_EMBEDDED = 'latency-bound swarm, embedded';
  const LATENCY_HOSTED = 'latency-bound swarm, on Restate, 1 worker';
  const EMPTY = 'an empty handler on Restate, 1 worker';
  for (let round = 1; round <= rounds; round++) {
    const own = await embedded();
    log(`round ${round}/${rounds} embedded: ${fmt(own.ms)} ms`);
    add(EMBEDDED, own.ms, own.cpuMs);
    for (const hosting of hostings) {
      if (hosting === latency || hosting === empty) continue;
      const measured = await swarmOn(server, hosting, `r${round}`);
      log(`round ${round}/${rounds} ${hosting.label}: ${fmt(measured.ms)} ms`);
      hosted(hosting.label, measured);
    }
    const nothing = await swarmOn(server, empty, `r${round}`);
    log(`round ${round}/${rounds} ${EMPTY}: ${fmt(nothing.ms)} ms`);
    hosted(EMPTY, nothing);
    if (latency) {
      const ownSwarm = await embedded(latencySize);
      log(`round ${round}/${rounds} ${LATENCY_EMBEDDED}: ${fmt(ownSwarm.ms)} ms`);
      add(LATENCY_EMBEDDED, ownSwarm.ms, ownSwarm.cpuMs);
      const measured = await swarmOn(server, latency, `r${round}`);
      log(`round ${round}/${rounds} ${LATENCY_HOSTED}: ${fmt(measured.ms)} ms`);
      hosted(LATENCY_HOSTED, measured);
    }
  }

  const ideal = (swarm: Swarm) => Math.ceil(swarm.agents / swarm.concurrency) * (swarm.toolSteps + 1) * swarm.latencyMs;
  const medianOf = (label: string, of: keyof Row) => median(rows.get(label)?.[of] ?? []);
  const out: string[] = [
    `## W3 on Restate (${new Date().toISOString()}, ${rounds} round${rounds > 1 ? 's' : ''}, load average ` +
      `${loadavg()
        .map((n) => n.toFixed(1))
        .join(' / ')} at the end, ${availableParallelism()} cores)`,
    '',
    `W3: ${size.agents} agents, ${size.toolSteps} tool steps + a final answer each, model latency ${size.latencyMs} ` +
      `ms, ${size.concurrency} at a time; ideal ${ideal(size)} ms.` +
      (latency
        ? ` Latency-bound swarm: ${latencySize.agents} agents at once, two model calls of ${latencySize.latencyMs} ` +
          `ms with a tool call between; ideal ${ideal(latencySize)} ms.`
        : '') +
      ' CPU: every process of the row (server, workers, the bench client and balancer; embedded: its one process).',
    '',
    '| hosting | wall ms (median) | × embedded | µs wall per step | CPU ms | CPU × embedded | server CPU ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [label, row] of rows) {
    if (label === EMPTY) continue;
    const latencyRow = label === LATENCY_EMBEDDED || label === LATENCY_HOSTED;
    const base = latencyRow ? LATENCY_EMBEDDED : EMBEDDED;
    const swarm = latencyRow ? latencySize : size;
    const ms = median(row.ms);
    const cpu = median(row.cpu);
    const serverCpu = label === base ? '' : fmt(median(row.server));
    out.push(
      `| ${label} | ${fmt(ms)} | ${(ms / medianOf(base, 'ms')).toFixed(2)}× | ` +
        `${fmt((ms * 1000) / (swarm.agents * (swarm.toolSteps + 1)))} | ${fmt(cpu)} | ` +
        `${(cpu / medianOf(base, 'cpu')).toFixed(2)}× | ${serverCpu} |`,
    );
  }

  // CPU per turn by process: where a hosted turn's CPU goes, and what an invocation that does nothing costs.
  const one = hostings[0]?.label ?? '';
  const three = hostings[1]?.label ?? '';
  const perTurn = (label: string, agents: number) => {
    const of = (key: keyof Row) => medianOf(label, key) / agents;
    return { server: of('server'), workers: of('workers'), bench: of('bench'), all: of('cpu') };
  };
  const embeddedTurn = medianOf(EMBEDDED, 'cpu') / size.agents;
  const byProcess: [string, ReturnType<typeof perTurn>][] = [
    [`W3 turn (${size.toolSteps + 1} steps), ${one}`, perTurn(one, size.agents)],
    [`W3 turn, ${three}`, perTurn(three, size.agents)],
    ['an empty invocation (answers at once)', perTurn(EMPTY, size.agents)],
  ];
  if (latency) byProcess.push([`latency-bound turn (2 steps), 1 worker`, perTurn(LATENCY_HOSTED, latencySize.agents)]);
  out.push(
    '',
    `CPU per turn by process, ms (embedded W3: ${fmt(embeddedTurn)} ms a turn, one process):`,
    '',
    '| turn | server | workers | client + balancer | all | × embedded W3 turn |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...byProcess.map(
      ([what, cpu]) =>
        `| ${what} | ${fmt(cpu.server)} | ${fmt(cpu.workers)} | ${fmt(cpu.bench)} | ${fmt(cpu.all)} | ` +
        `${(cpu.all / embeddedTurn).toFixed(2)}× |`,
    ),
  );
  // Embedded W3 runs in one process on one core; hosted, the server, the workers and the client run in parallel. On
  // n cores a hosted W3 takes at least its CPU ÷ n (and its ideal): what that predicts against embedded's wall time.
  const hostedCpu = medianOf(one, 'cpu');
  const predicted = [2, 4, 8, 16].map((cores) => {
    const ms = Math.max(hostedCpu / cores, ideal(size));
    return `${cores} cores ${(ms / medianOf(EMBEDDED, 'ms')).toFixed(2)}×`;
  });
  out.push(
    '',
    `Hosted W3's CPU (${fmt(hostedCpu)} ms) spread over n cores, as a floor of its wall time ÷ embedded's: ` +
      `${predicted.join(', ')}. An invocation alone costs ${fmt(perTurn(EMPTY, size.agents).all)} ms of CPU ` +
      `(${fmt(perTurn(EMPTY, size.agents).server)} ms of it the server's): ` +
      `${(perTurn(EMPTY, size.agents).all / embeddedTurn).toFixed(2)}× a whole embedded W3 turn.`,
  );

  out.push('', ...journalTable(await journalOf(server, 'w3one'), size));

  const targets: [string, number, number][] = [
    ['W3 on 1 worker ÷ embedded, wall', medianOf(one, 'ms') / medianOf(EMBEDDED, 'ms'), 3],
    ['W3 on 1 worker ÷ embedded, CPU', medianOf(one, 'cpu') / medianOf(EMBEDDED, 'cpu'), 3],
    ['W3 on 3 workers ÷ on 1 worker, wall', medianOf(three, 'ms') / medianOf(one, 'ms'), 1],
  ];
  if (latency) {
    const ratio = medianOf(LATENCY_HOSTED, 'ms') / medianOf(LATENCY_EMBEDDED, 'ms');
    targets.push(['latency-bound swarm hosted ÷ embedded, wall', ratio, 1.5]);
  }
  out.push(
    '',
    'Targets, as ratios of this run:',
    '',
    '| target | this run | met |',
    '| --- | ---: | --- |',
    ...targets.map(
      ([what, ratio, limit]) => `| ${what} ≤ ${limit}× | ${ratio.toFixed(2)}× | ${ratio <= limit ? 'yes' : 'no'} |`,
    ),
  );
  process.stdout.write(`${out.join('\n')}\n`);
  if (!smoke) {
    writeRestateSection(out.join('\n'));
    log('appended its report to bench/results.md');
  }
}

/**
 * W3 as one hosted tree: a root whose one `swarm` call runs every agent as its subagent (`concurrency` at a time),
 * with the tree's open tasks counted (`maxAgents`' default: a journaled call per batch, a release per task) and not
 * (`maxAgents: Infinity`), alternated in each round on one server; the ratio is what counting costs.
 */
async function w3Tree(): Promise<void> {
  const concurrency = String(size.concurrency);
  hostings.push(
    await host(server, 'w3counted', 1, size, ['counted', concurrency]),
    await host(server, 'w3free', 1, size, ['free', concurrency]),
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
