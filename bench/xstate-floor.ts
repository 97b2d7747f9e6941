/**
 * Where the performance floor is: how much of Troupe's W1 / W3 cost over the peer harness's naive XState loop is
 * XState's price for the states Troupe's chart shows, and how much is Troupe's own code.
 *
 *   npm run build -- --bench && node --expose-gc dist/bench/xstate-floor.js
 *
 * Compiled, as the peer harness runs its rows: Troupe's row loads the production build, and no TypeScript loader
 * sits in the processes whose RSS is measured (under `node --import tsx bench/xstate-floor.ts` every row's RSS is
 * tens of MB higher, and the rows' ratios closer to 1).
 *
 * Four rows, the peer harness's workloads (W1: one agent, 200 steps of one synchronous echo call, then the final
 * text; W3: 500 subagents of 3 tool steps and an answer, model latency 5 ms, 100 at once):
 * - `naive`: the peer harness's `xstate-loop` (a `fromPromise` per model call and tool batch, the history copied
 *   by `assign`);
 * - `shape`: Troupe's charts rebuilt in plain XState with no Troupe code (bench/floor/): the agent's states,
 *   nesting, transitions, guards, worker protocol and context, and for W3 the batch → pool → pool → task → agent
 *   tree, with effects that do nothing. The counts it prints first show it takes Troupe's events, microsteps and
 *   actors per step and per subagent;
 * - `collapsed`: the same with the tool phases (validate → authorize → execute → finalize) folded into one state;
 * - `troupe`: Troupe itself, driven as the peer harness drives it.
 *
 * The memory table has one row more, `naive + zod`: the naive loop in a process that has also imported zod, as every
 * Troupe process has (the card's schema library; the peer harness's Troupe row defines its tool with it). It is the
 * floor for W3's peak RSS of any runtime on XState and zod, before a line of that runtime's own code.
 *
 * W1 and W3 run in this process, alternated, a forced `gc()` before each run, as the harness does (W1 63 times, not
 * 21: a 30 ms run is easily moved by a shared machine's other tenants), wall and CPU time. One child process per row
 * gives W3's memory: RSS after import, peak RSS over the harness's runs, the heap each running subagent holds (a
 * swarm held at every subagent's third model call, collected, less the heap before it, ÷ the subagents running) and
 * what a swarm allocates per subagent, by who allocates (XState, Troupe, the benchmark's code, Node). `shape ÷
 * naive` is XState's price for the chart's shape; `troupe ÷ shape` is ours. The load average is printed beside every
 * figure. For where Troupe's own time goes, profile one row alone: `node --expose-gc --import tsx --cpu-prof
 * bench/xstate-floor.ts w1 troupe` (or `w3`, or another row), then `npx tsx bench/profile.ts <file>.cpuprofile`.
 * `BENCH_NO_GC=1` skips the collections before runs, as it does in the peer harness. `w7 [N] [row]` runs W7's shape
 * in every row (or one) instead: N subagents at once (default 5,000), one tool step, 1.5 s latency, three alternated
 * runs; wall time ÷ the ideal and CPU per subagent.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { InspectionEvent } from 'xstate';
import { agentShape, shapeRun } from './floor/agent.js';
import { allocated } from './floor/alloc.js';
import { naiveRun } from './floor/naive.js';
import { counters, FINAL_TEXT, pooled, Script } from './floor/script.js';
import { shapeSwarm, swarmShape } from './floor/swarm.js';

const W1 = { steps: 200, warmup: 10, runs: 63 };
const W3 = { agents: 500, concurrency: 100, toolSteps: 3, latencyMs: 5, warmup: 2, runs: 7 };
/** W3's ideal: waves of `concurrency` subagents, each of its model calls waiting the latency. */
const IDEAL_W3_MS = Math.ceil(W3.agents / W3.concurrency) * (W3.toolSteps + 1) * W3.latencyMs;
const ROWS = ['naive', 'shape', 'collapsed', 'troupe'] as const;
type Row = (typeof ROWS)[number];
/** A memory row only: the naive loop with zod imported (see the header). */
const NAIVE_ZOD = 'naive + zod';
type Inspect = (event: InspectionEvent) => void;

interface Impl {
  /** One W1 run: the final text. */
  w1(script: Script, inspect?: Inspect): Promise<string>;
  /** One W3 swarm: how many subagents completed with the final text. */
  w3(mkScript: () => Script, inspect?: Inspect): Promise<number>;
  /** W7: `n` subagents all at once; how many completed with the final text. */
  w7(n: number, mkScript: () => Script): Promise<number>;
}

const shapes = { shape: agentShape(false), collapsed: agentShape(true) };
const swarms = { shape: swarmShape(shapes.shape), collapsed: swarmShape(shapes.collapsed) };
const { agents, concurrency } = W3;

async function implOf(row: Row): Promise<Impl> {
  if (row === 'naive')
    return {
      w1: naiveRun,
      async w3(mkScript, inspect) {
        const texts = await pooled(agents, concurrency, () => naiveRun(mkScript(), inspect));
        return texts.filter((text) => text === FINAL_TEXT).length;
      },
      async w7(n, mkScript) {
        const texts = await pooled(n, n, () => naiveRun(mkScript()));
        return texts.filter((text) => text === FINAL_TEXT).length;
      },
    };
  if (row === 'troupe') {
    const { troupeRun, troupeSwarm } = await import('./floor/troupe.js');
    return {
      w1: (script, inspect) => troupeRun(script, W1.steps + 1, inspect),
      async w3(mkScript, inspect) {
        const texts = await troupeSwarm(agents, concurrency, mkScript, inspect);
        return texts.filter((text) => text === FINAL_TEXT).length;
      },
      async w7(n, mkScript) {
        const texts = await troupeSwarm(n, n, mkScript);
        return texts.filter((text) => text === FINAL_TEXT).length;
      },
    };
  }
  const [machine, swarm] = [shapes[row], swarms[row]];
  return {
    async w1(script, inspect) {
      const reason = await shapeRun(machine, script, W1.steps + 1, inspect);
      return reason === 'completed' ? FINAL_TEXT : reason;
    },
    w3: (mkScript, inspect) => shapeSwarm(swarm, agents, concurrency, mkScript, 25, inspect),
    w7: (n, mkScript) => shapeSwarm(swarm, n, n, mkScript, 25),
  };
}

const exposed = (globalThis as { gc?: () => void }).gc;
if (!exposed) throw new Error('run with node --expose-gc');
/** The collection before each run (not with BENCH_NO_GC=1); the memory probe collects regardless. */
const gc = process.env.BENCH_NO_GC ? undefined : exposed;
const load = () => loadavg()[0]?.toFixed(2) ?? '?';
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
const w1Script = () => new Script(W1.steps);
const w3Script = () => new Script(W3.toolSteps, W3.latencyMs);

function checked(what: string, ok: boolean, detail: string) {
  if (!ok) throw new Error(`${what} did not do its work: ${detail}`);
}

/** Wall and CPU time of one run (W1: µs per step; W3: ms). */
interface Timing {
  wall: number;
  cpu: number;
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; wallMs: number; cpuMs: number }> {
  gc?.();
  const [start, cpu] = [performance.now(), process.cpuUsage()];
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { value, wallMs: performance.now() - start, cpuMs: (used.user + used.system) / 1000 };
}

async function w1Once(impl: Impl, inspect?: Inspect): Promise<Timing> {
  counters.toolExecs = 0;
  counters.modelCalls = 0;
  const { value: text, wallMs, cpuMs } = await timed(() => impl.w1(w1Script(), inspect));
  checked('W1', text === FINAL_TEXT && counters.toolExecs === W1.steps, `${text}, ${counters.toolExecs} tools`);
  return { wall: (wallMs * 1000) / W1.steps, cpu: (cpuMs * 1000) / W1.steps };
}

async function w3Once(impl: Impl, mkScript = w3Script, inspect?: Inspect): Promise<Timing> {
  counters.toolExecs = 0;
  counters.modelCalls = 0;
  const { value: done, wallMs, cpuMs } = await timed(() => impl.w3(mkScript, inspect));
  const ok = done === agents && counters.toolExecs === agents * W3.toolSteps;
  checked('W3', ok && counters.modelCalls === agents * (W3.toolSteps + 1), `${done} done, ${counters.toolExecs} tools`);
  return { wall: wallMs, cpu: cpuMs };
}

/** Events, microsteps and actors per W1 step and per W3 subagent, from XState's inspection events. */
async function counts(impls: Map<Row, Impl>) {
  process.stdout.write('\nXState work (inspection events): per W1 step | per W3 subagent\n');
  process.stdout.write('row        events  microsteps  actors | events  microsteps  actors\n');
  for (const [row, impl] of impls) {
    const figures: number[] = [];
    for (const [run, per] of [
      [(inspect: Inspect) => w1Once(impl, inspect), W1.steps],
      [(inspect: Inspect) => w3Once(impl, w3Script, inspect), agents],
    ] as const) {
      const seen = { events: 0, microsteps: 0, actors: 0 };
      await run((event) => {
        if (event.type === '@xstate.event') seen.events++;
        else if (event.type === '@xstate.microstep') seen.microsteps++;
        else if (event.type === '@xstate.actor') seen.actors++;
      });
      figures.push(seen.events / per, seen.microsteps / per, seen.actors / per);
    }
    const cells = figures.map((n) => n.toFixed(2).padStart(7));
    process.stdout.write(`${row.padEnd(9)} ${cells.slice(0, 3).join('    ')} | ${cells.slice(3).join('    ')}\n`);
  }
}

/** Runs every row in turn, `runs` times after `warmup`; the median wall and CPU of each, and the load at the end. */
async function alternated(impls: Map<Row, Impl>, once: (impl: Impl) => Promise<Timing>, warmup: number, runs: number) {
  const figures = new Map<Row, Timing[]>([...impls.keys()].map((row) => [row, []]));
  for (let k = 0; k < warmup + runs; k++)
    for (const [row, impl] of impls) {
      const figure = await once(impl);
      if (k >= warmup) figures.get(row)?.push(figure);
    }
  const medians = new Map<Row, Timing>();
  for (const [row, values] of figures)
    medians.set(row, { wall: median(values.map((t) => t.wall)), cpu: median(values.map((t) => t.cpu)) });
  return { medians, load: load() };
}

/** A child's W3 memory: peak RSS over the harness's runs, then the heap each running subagent holds. */
/**
 * The heap each running subagent holds: a swarm held at every subagent's third model call (after two tool steps),
 * collected, less the heap collected before it, ÷ the subagents running.
 */
async function heldKB(impl: Impl): Promise<number> {
  exposed?.();
  exposed?.();
  const before = process.memoryUsage().heapUsed;
  let held = 0;
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const until = () => {
    held++;
    return gate;
  };
  const swarm = w3Once(impl, () => new Script(W3.toolSteps, W3.latencyMs, { call: 2, until }));
  while (held < concurrency) await new Promise((resolve) => setTimeout(resolve, 5));
  exposed?.();
  exposed?.();
  const kb = (process.memoryUsage().heapUsed - before) / 1024 / concurrency;
  release();
  await swarm;
  return kb;
}

/** A child's W3 memory: RSS after import, peak RSS over the harness's runs, held heap (median of 3), allocation. */
async function memory(impl: Impl) {
  const importedMB = process.memoryUsage().rss / 2 ** 20;
  for (let k = 0; k < W3.warmup + W3.runs; k++) await w3Once(impl);
  const peakRssMB = (process.resourceUsage().maxRSS * 1024) / 2 ** 20;
  const held = [await heldKB(impl), await heldKB(impl), await heldKB(impl)];
  const bytes = await allocated(() => w3Once(impl));
  const perAgentKB = (n: number) => n / 1024 / agents;
  const allocKB = Object.fromEntries(Object.entries(bytes).map(([group, n]) => [group, perAgentKB(n)]));
  return { importedMB, peakRssMB, heldKB: median(held), allocKB };
}

const self = fileURLToPath(import.meta.url);
const [mode, rowArg] = process.argv.slice(2);
const row = ROWS.find((r) => r === rowArg);
if (mode === 'memory' && row) {
  if (process.argv[4] === 'zod') await import('zod');
  process.stdout.write(`${JSON.stringify(await memory(await implOf(row)))}\n`);
} else if (mode === 'w7') {
  // W7's shape (every subagent at once, one tool step, 1.5 s latency) in every row, alternated: CPU per subagent.
  const n = Number(rowArg ?? 5000);
  const size = { n, latencyMs: 1500, runs: 3 };
  const only = ROWS.find((r) => r === process.argv[4]);
  const impls = new Map<Row, Impl>();
  for (const r of ROWS) if (!only || r === only) impls.set(r, await implOf(r));
  const once = async (impl: Impl): Promise<Timing> => {
    counters.toolExecs = 0;
    counters.modelCalls = 0;
    const { value: done, wallMs, cpuMs } = await timed(() => impl.w7(size.n, () => new Script(1, size.latencyMs)));
    checked('W7', done === size.n && counters.toolExecs === size.n, `${done} done, ${counters.toolExecs} tools`);
    return { wall: wallMs / (2 * size.latencyMs), cpu: (cpuMs * 1000) / size.n };
  };
  const { medians, load: after } = await alternated(impls, once, 1, size.runs);
  process.stdout.write(`W7 at ${n}: row, wall ÷ ideal, CPU µs per subagent (load after ${after})\n`);
  for (const [r, t] of medians) process.stdout.write(`${r.padEnd(9)} ${t.wall.toFixed(2)}× ${t.cpu.toFixed(0)} µs\n`);
} else if ((mode === 'w1' || mode === 'w3') && row) {
  // One row alone, five times the runs: for a CPU profile of it (see the header).
  const rows = new Map([[row, await implOf(row)]]);
  const { medians } =
    mode === 'w1'
      ? await alternated(rows, (impl) => w1Once(impl), W1.warmup, W1.runs * 5)
      : await alternated(rows, (impl) => w3Once(impl), W3.warmup, W3.runs * 5);
  const unit = mode === 'w1' ? 'µs/step' : 'ms';
  process.stdout.write(
    `${row} ${mode} ${medians.get(row)?.wall.toFixed(1)} ${unit} (CPU ${medians.get(row)?.cpu.toFixed(1)})\n`,
  );
} else {
  const impls = new Map<Row, Impl>();
  for (const r of ROWS) impls.set(r, await implOf(r));
  const { troupeSource } = await import('./floor/troupe.js');
  process.stdout.write(`Troupe from ${troupeSource}; load average at start ${loadavg().map((n) => n.toFixed(2))}\n`);
  await counts(impls);
  const w1 = await alternated(impls, (impl) => w1Once(impl), W1.warmup, W1.runs);
  const w3 = await alternated(impls, (impl) => w3Once(impl), W3.warmup, W3.runs);
  const mem = new Map<string, Awaited<ReturnType<typeof memory>> & { load: string }>();
  for (const [name, ...argv] of [...ROWS.map((r) => [r, r]), [NAIVE_ZOD, 'naive', 'zod']]) {
    const out = execFileSync(process.execPath, [...process.execArgv, self, 'memory', ...argv], { encoding: 'utf8' });
    mem.set(name as string, { ...JSON.parse(out.trim().split('\n').pop() as string), load: load() });
  }
  const ratio = (a: number | undefined, b: number | undefined) => `${((a ?? 0) / (b ?? 1)).toFixed(2)}×`;
  const table = (head: string[], rows: string[][]) =>
    process.stdout.write(
      `\n| ${head.join(' | ')} |\n| --- |${' ---: |'.repeat(head.length - 1)}\n${rows.map((r) => `| ${r.join(' | ')} |\n`).join('')}`,
    );
  table(
    [
      'row',
      'W1 µs/step (CPU)',
      'W3 ms (CPU)',
      'W3 ÷ ideal',
      'RSS after import MB',
      'W3 peak RSS MB',
      'W3 heap per running subagent KB',
      'W3 allocated per subagent KB: XState + Troupe + bench + Node',
    ],
    [...ROWS, NAIVE_ZOD].map((r) => {
      const [a, b, m] = [w1.medians.get(r as Row), w3.medians.get(r as Row), mem.get(r)];
      const alloc = Object.values(m?.allocKB ?? {}).map((kb) => kb.toFixed(0));
      return [
        r,
        a ? `${a.wall.toFixed(1)} (${a.cpu.toFixed(1)})` : '–',
        b ? `${b.wall.toFixed(0)} (${b.cpu.toFixed(0)})` : '–',
        b ? `${(b.wall / IDEAL_W3_MS).toFixed(2)}×` : '–',
        `${m?.importedMB.toFixed(0)}`,
        `${m?.peakRssMB.toFixed(0)}`,
        `${m?.heldKB.toFixed(1)}`,
        alloc.join(' + '),
      ];
    }),
  );
  process.stdout.write(
    `\nload average (1 min) after: W1 ${w1.load}, W3 ${w3.load}, memory ${mem.get('troupe')?.load}\n`,
  );
  const allocOf = (r: Row) => Object.values(mem.get(r)?.allocKB ?? {}).reduce((sum, kb) => sum + kb, 0);
  table(
    ['ratio', 'W1', 'W1 CPU', 'W3', 'W3 CPU', 'W3 peak RSS', 'W3 held heap', 'W3 allocated'],
    (
      [
        ['shape ÷ naive (XState, for the chart)', 'shape', 'naive'],
        ['collapsed ÷ naive', 'collapsed', 'naive'],
        ['shape ÷ collapsed (the tool phases)', 'shape', 'collapsed'],
        ['troupe ÷ shape (ours)', 'troupe', 'shape'],
        ['troupe ÷ naive', 'troupe', 'naive'],
      ] as const
    ).map(([name, a, b]) => {
      const [w1a, w1b, w3a, w3b] = [w1.medians.get(a), w1.medians.get(b), w3.medians.get(a), w3.medians.get(b)];
      const [ma, mb] = [mem.get(a), mem.get(b)];
      return [
        name,
        ratio(w1a?.wall, w1b?.wall),
        ratio(w1a?.cpu, w1b?.cpu),
        ratio(w3a?.wall, w3b?.wall),
        ratio(w3a?.cpu, w3b?.cpu),
        ratio(ma?.peakRssMB, mb?.peakRssMB),
        ratio(ma?.heldKB, mb?.heldKB),
        ratio(allocOf(a), allocOf(b)),
      ];
    }),
  );
}
