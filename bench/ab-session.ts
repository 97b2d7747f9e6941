/**
 * Two builds of Troupe alternated in one process on W1 and W3 journaled to a JSONL session (durability `step`),
 * the rows `troupe.session` of `npm run bench`: whether journaling got slower between two commits, on a machine
 * whose load moves too much for two separate bench runs to compare. Each directory is a checkout (or `git archive`
 * of one) with `npm run build` done and a `node_modules`:
 *
 *   node --import tsx bench/ab-session.ts /tmp/base /tmp/head [pairs]
 *
 * Per workload: the median CPU (`process.cpuUsage`, every thread) and wall time of a run of each, and the median
 * of the per-pair ratios head ÷ base (B ÷ A) of each; the order within a pair alternates, so each order runs
 * `pairs / 2` times. W1: one agent, 200 tool steps. W3: 200 subagents of 3 tool steps under a supervisor, model
 * latency 2 ms, concurrency 50 (smaller than the bench's, so that a pair takes a second, not ten).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const W1_STEPS = 200;
const W3 = { agents: 200, toolSteps: 3, latencyMs: 2, concurrency: 50 };
const args = process.argv.slice(2);
const [dirA, dirB, pairsArg] = args;
if (!dirA || !dirB) throw new Error('usage: bench/ab-session.ts <dirA> <dirB> [pairs]');
const pairs = Number(pairsArg ?? 20);

type Run = () => Promise<void>;
// biome-ignore lint/suspicious/noExplicitAny: two builds of the public API, loaded at run time.
type Troupe = any;

const usage = () => ({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
const answer = (content: unknown[], stopReason: string) => ({
  role: 'assistant',
  content,
  provider: 'bench',
  model: 'scripted',
  stopReason,
  usage: usage(),
});
const done = (message: ReturnType<typeof answer>) => ({ type: 'done', message, stopReason: message.stopReason });

/** The build in `dir`'s public API and its own zod (the one its registry checks), with an echo tool. */
async function load(dir: string): Promise<{ troupe: Troupe; tool: unknown; calls: () => number }> {
  const root = resolve(dir);
  const troupe = await import(pathToFileURL(join(root, 'dist/src/index.js')).href);
  const { z } = await import(pathToFileURL(createRequire(join(root, 'package.json')).resolve('zod')).href);
  let executed = 0;
  const tool = troupe.defineTool({
    name: 'echo',
    description: 'echo',
    schema: z.object({ i: z.number() }),
    execute: async (input: { i: number }) => {
      executed++;
      return JSON.stringify({ echo: input.i });
    },
  });
  return { troupe, tool, calls: () => executed };
}

/** A session of its own in a new folder, removed after the run. */
async function withSession(troupe: Troupe, run: (session: Troupe) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-ab-session-'));
  try {
    const session = troupe.sessions({ dir }).create();
    await run(session);
    session.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let seq = 0;

/** W1 on a session: one agent, `W1_STEPS` tool steps and a final answer. */
async function w1Of(dir: string): Promise<Run> {
  const { troupe, tool, calls } = await load(dir);
  const model = () => {
    let n = 0;
    return {
      id: 'scripted',
      provider: 'bench',
      async *stream() {
        const k = n++;
        if (k >= W1_STEPS) {
          yield done(answer([{ type: 'text', text: 'done' }], 'stop'));
          return;
        }
        yield done(
          answer([{ type: 'tool_call', id: `call_${++seq}`, name: 'echo', arguments: { i: k } }], 'tool_calls'),
        );
      },
    };
  };
  return () =>
    withSession(troupe, async (session) => {
      const before = calls();
      const agent = troupe.createAgent({ model: model(), tools: [tool], maxSteps: W1_STEPS + 1, session });
      const result = await agent.prompt('go');
      await agent.stop();
      if (result.text !== 'done' || calls() - before !== W1_STEPS) throw new Error(`${dir}: a W1 run failed`);
    });
}

/** W3 on a session: a supervisor's swarm of `W3.agents`, each `W3.toolSteps` tool steps and an answer. */
async function w3Of(dir: string): Promise<Run> {
  const { troupe, tool, calls } = await load(dir);
  const model = {
    id: 'scripted',
    provider: 'bench',
    async *stream(request: { messages: Array<{ role: string }> }) {
      const step = request.messages.filter((m) => m.role === 'assistant').length;
      await new Promise((wake) => setTimeout(wake, W3.latencyMs));
      if (step >= W3.toolSteps) {
        yield done(answer([{ type: 'text', text: 'done' }], 'stop'));
        return;
      }
      yield done(
        answer([{ type: 'tool_call', id: `call_${++seq}`, name: 'echo', arguments: { i: step } }], 'tool_calls'),
      );
    },
  };
  return () =>
    withSession(troupe, async (session) => {
      const before = calls();
      const supervisor = troupe.createSupervisor({
        model,
        tools: [tool],
        concurrency: W3.concurrency,
        maxRestarts: 0,
        session,
      });
      const prompts = Array.from({ length: W3.agents }, (_, n) => `task ${n}`);
      const results: Array<{ status: string }> = await supervisor.swarm(prompts);
      await supervisor.stop();
      const completed = results.filter((result) => result.status === 'completed').length;
      if (completed !== W3.agents || calls() - before !== W3.agents * W3.toolSteps) {
        throw new Error(`${dir}: a W3 run failed (${completed} of ${W3.agents} completed)`);
      }
    });
}

async function measure(run: Run): Promise<{ cpu: number; wall: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / 1000, wall };
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1] ?? Number.NaN;
const fixed = (value: number) => value.toFixed(2);

async function compare(name: string, a: Run, b: Run): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await measure(a);
    await measure(b);
  }
  const cpu = { a: [] as number[], b: [] as number[] };
  const wall = { a: [] as number[], b: [] as number[] };
  const cpuRatios: number[] = [];
  const wallRatios: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const aFirst = pair % 2 === 0;
    const first = await measure(aFirst ? a : b);
    const second = await measure(aFirst ? b : a);
    const [ofA, ofB] = aFirst ? [first, second] : [second, first];
    cpu.a.push(ofA.cpu);
    cpu.b.push(ofB.cpu);
    wall.a.push(ofA.wall);
    wall.b.push(ofB.wall);
    cpuRatios.push(ofB.cpu / ofA.cpu);
    wallRatios.push(ofB.wall / ofA.wall);
  }
  process.stdout.write(
    `${JSON.stringify({
      workload: name,
      a: dirA,
      b: dirB,
      pairs,
      load: loadavg().map((x) => x.toFixed(1)),
      cpuMs: { a: fixed(median(cpu.a)), b: fixed(median(cpu.b)) },
      wallMs: { a: fixed(median(wall.a)), b: fixed(median(wall.b)) },
      cpuRatioBoverA: median(cpuRatios).toFixed(3),
      wallRatioBoverA: median(wallRatios).toFixed(3),
    })}\n`,
  );
}

await compare('W1.session', await w1Of(dirA), await w1Of(dirB));
await compare('W3.session', await w3Of(dirA), await w3Of(dirB));
