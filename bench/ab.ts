/**
 * Two builds of Troupe alternated in one process on W1 (one agent, 200 tool steps): the finest comparison of two
 * commits this shared machine allows, since both see the same load at the same moments. Each directory is a
 * checkout (or `git archive` of one) with `npm run build` done and a `node_modules`:
 *
 *   node --expose-gc --import tsx bench/ab.ts /tmp/base /tmp/head [pairs] [--gc] [--w3] [--session]
 *
 * `--w3` runs W3 instead (500 subagents through a supervisor's swarm, 3 tool steps and an answer each, model latency
 * 5 ms, concurrency 100; ideal 100 ms) and reports its CPU and wall time per run in milliseconds. `--session`
 * journals each run to a JSONL session of its own (durability `step`, in a new folder removed after the run): the
 * rows `troupe.session` of `npm run bench`, compared between two commits.
 *
 * Reports the CPU per step (`process.cpuUsage`: every thread, so background GC and compilation count) and the
 * wall time per step of each, medians over the pairs, and the median of the per-pair ratios head ÷ base. The order
 * within a pair alternates; the median of the per-pair wall-time ratios is printed too. Run it twice with the directories swapped, and once with a build against a copy of
 * itself (in another directory: a module is loaded once per path) for the noise floor. `--gc` collects before
 * every run, as the peer benchmark does (docs/architecture/xstate.md, on what that measures).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from './measure.js';
import { W3 } from './workloads/w3.js';

const STEPS = 200;
const args = process.argv.slice(2);
const collect = args.includes('--gc');
const swarm = args.includes('--w3');
const journaled = args.includes('--session');
/** W3's shape, as the peer benchmark has it. */
const w3 = W3.sizes.full;
const [dirA, dirB, pairsArg] = args.filter((arg) => !arg.startsWith('--'));
if (!dirA || !dirB) throw new Error('usage: bench/ab.ts <dirA> <dirB> [pairs] [--gc] [--w3] [--session]');
const pairs = Number(pairsArg ?? 200);

type Run = () => Promise<void>;
// biome-ignore lint/suspicious/noExplicitAny: a build's public API, loaded at run time.
type Troupe = any;

/** With `--session`, `run` on a session of its own in a new folder, removed after the run; else `run` alone. */
async function withSession(troupe: Troupe, run: (session?: Troupe) => Promise<void>): Promise<void> {
  if (!journaled) return run();
  const dir = mkdtempSync(join(tmpdir(), 'troupe-ab-session-'));
  try {
    const session = troupe.sessions({ dir }).create();
    await run(session);
    session.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One W1 (or W3) run of the build in `dir`, through its public API, with its own zod (the one its registry checks). */
async function runOf(dir: string): Promise<Run> {
  const root = resolve(dir);
  const troupe = await import(pathToFileURL(join(root, 'dist/src/index.js')).href);
  const { z } = await import(pathToFileURL(createRequire(join(root, 'package.json')).resolve('zod')).href);
  let executed = 0;
  const tool = troupe.defineTool({
    name: 'echo',
    description: 'echo',
    schema: z.object({ i: z.number() }),
    execute: async (args: { i: number }) => {
      executed++;
      return JSON.stringify({ echo: args.i });
    },
  });
  const usage = () => ({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
  const answer = (content: unknown[], stopReason: string) => ({
    role: 'assistant',
    content,
    provider: 'bench',
    model: 'scripted',
    stopReason,
    usage: usage(),
  });
  let seq = 0;
  const model = () => {
    let n = 0;
    return {
      id: 'scripted',
      provider: 'bench',
      async *stream() {
        const k = n++;
        if (k < STEPS) {
          const call = { type: 'tool_call', id: `call_${++seq}`, name: 'echo', arguments: { i: k } };
          yield { type: 'done', message: answer([call], 'tool_calls'), stopReason: 'tool_calls' };
        } else {
          yield { type: 'done', message: answer([{ type: 'text', text: 'done' }], 'stop'), stopReason: 'stop' };
        }
      },
    };
  };
  if (swarm) {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const shared = {
      id: 'scripted',
      provider: 'bench',
      async *stream(request: { messages: { role: string }[] }) {
        const k = request.messages.filter((message) => message.role === 'assistant').length;
        await sleep(w3.latencyMs);
        if (k < w3.toolSteps) {
          const call = { type: 'tool_call', id: `call_${++seq}`, name: 'echo', arguments: { i: k } };
          yield { type: 'done', message: answer([call], 'tool_calls'), stopReason: 'tool_calls' };
        } else {
          yield { type: 'done', message: answer([{ type: 'text', text: 'done' }], 'stop'), stopReason: 'stop' };
        }
      },
    };
    return () =>
      withSession(troupe, async (session) => {
        executed = 0;
        const supervisor = troupe.createSupervisor({
          model: shared,
          tools: [tool],
          concurrency: w3.concurrency,
          maxRestarts: 0,
          retry: false,
          ...(session ? { session } : {}),
        });
        const prompts = Array.from({ length: w3.agents }, (_, n) => `task ${n}`);
        const results: { status: string; text?: string }[] = await supervisor.swarm(prompts);
        await supervisor.stop();
        const done = results.filter((r) => r.status === 'completed' && r.text === 'done').length;
        if (done !== w3.agents || executed !== w3.agents * w3.toolSteps)
          throw new Error(`${dir}: a W3 run did not do its work`);
      });
  }
  return () =>
    withSession(troupe, async (session) => {
      executed = 0;
      const agent = troupe.createAgent({
        model: model(),
        tools: [tool],
        system: 'bench',
        maxSteps: STEPS + 1,
        ...(session ? { session } : {}),
      });
      const result = await agent.prompt('go');
      await agent.stop();
      if (result.text !== 'done' || executed !== STEPS) throw new Error(`${dir}: a W1 run did not do its work`);
    });
}

async function measure(run: Run): Promise<{ cpu: number; wall: number }> {
  if (collect) (globalThis as { gc?: () => void }).gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  // W1: µs per step; W3: ms per run.
  const per = swarm ? 1000 : STEPS;
  const wall = ((performance.now() - t0) * 1000) / per;
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / per, wall };
}

const a = await runOf(dirA);
const b = await runOf(dirB);
for (let i = 0; i < (swarm ? 2 : 15); i++) {
  await measure(a);
  await measure(b);
}
const cpuA: number[] = [];
const cpuB: number[] = [];
const wallA: number[] = [];
const wallB: number[] = [];
const ratios: number[] = [];
const wallRatios: number[] = [];
for (let pair = 0; pair < pairs; pair++) {
  const first = pair % 2 === 0 ? a : b;
  const one = await measure(first);
  const other = await measure(first === a ? b : a);
  const [ofA, ofB] = first === a ? [one, other] : [other, one];
  cpuA.push(ofA.cpu);
  cpuB.push(ofB.cpu);
  wallA.push(ofA.wall);
  wallB.push(ofB.wall);
  ratios.push(ofB.cpu / ofA.cpu);
  wallRatios.push(ofB.wall / ofA.wall);
}
const fixed = (value: number) => value.toFixed(1);
process.stdout.write(
  `${JSON.stringify({
    a: dirA,
    b: dirB,
    pairs,
    workload: swarm ? 'W3 (ms per run)' : 'W1 (µs per step)',
    gc: collect,
    session: journaled,
    load: loadavg().map((x) => x.toFixed(1)),
    cpu: { a: fixed(median(cpuA)), b: fixed(median(cpuB)) },
    wall: { a: fixed(median(wallA)), b: fixed(median(wallB)) },
    cpuRatioBoverA: median(ratios).toFixed(3),
    wallRatioBoverA: median(wallRatios).toFixed(3),
  })}\n`,
);
