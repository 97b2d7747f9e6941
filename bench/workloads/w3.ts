import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InspectionEvent } from 'xstate';
import { naiveLoop } from '../baselines/naive-xstate.js';
import { plainLoop, toolTable } from '../baselines/plain-loop.js';
import { echoTool, swarmModel, ToolCounter } from '../fixtures.js';
import { piRunner, troupe } from '../impls.js';
import { check, pool, timed, type Workload } from '../workload.js';
import { swarmCheck } from './checks.js';

interface SwarmSize {
  agents: number;
  toolSteps: number;
  latencyMs: number;
  concurrency: number;
}

/** The swarm's ideal wall time: waves of `concurrency` agents, each of its model calls waiting `latencyMs`. */
function idealSwarmMs({ agents, toolSteps, latencyMs, concurrency }: SwarmSize): number {
  return Math.ceil(agents / concurrency) * (toolSteps + 1) * latencyMs;
}

const counter = new ToolCounter();
const tools = [echoTool(counter)];
const table = toolTable(tools);
const pi = piRunner(tools);

type Troupe = Awaited<ReturnType<typeof troupe>>;

/** What Troupe's swarm may be given beyond W3's size: an inspector (`bench/w3-counts.ts`), a session to journal to. */
interface SwarmExtras {
  inspect?: (event: InspectionEvent) => void;
  session?: ReturnType<ReturnType<Troupe['sessions']>['create']>;
}

/**
 * Troupe's W3 run: one supervisor swarms `size.agents` subagents, timed, then checked (every subagent completed,
 * every tool call made once, results in order). A session is closed once the swarm is done, before the supervisor
 * stops.
 */
export async function troupeSwarm(size: SwarmSize, extras: SwarmExtras = {}): Promise<{ ms: number; cpuMs: number }> {
  const { createSupervisor } = await troupe();
  counter.calls = 0;
  const supervisor = createSupervisor({
    model: swarmModel(size),
    tools,
    concurrency: size.concurrency,
    maxRestarts: 0,
    ...extras,
  });
  const prompts = Array.from({ length: size.agents }, (_, n) => `task ${n}`);
  const { ms, cpuMs, value: results } = await timed(() => supervisor.swarm(prompts));
  extras.session?.close();
  await supervisor.stop();
  const failed = results.filter((result) => result.status !== 'completed').length;
  check(failed === 0, `${failed} of ${size.agents} subagents did not complete`);
  swarmCheck(
    results.map((result) => result.text),
    counter,
    size.agents,
    size.agents * size.toolSteps,
  );
  return { ms, cpuMs };
}

/** Runs a swarm of independent loops under a pool of `concurrency` lanes (the baselines' fan-out). */
async function pooled(size: SwarmSize, loop: (prompt: string) => Promise<{ text: string }>) {
  counter.calls = 0;
  const { ms, cpuMs, value } = await timed(() => pool(size.agents, size.concurrency, (n) => loop(`task ${n}`)));
  swarmCheck(
    value.map((result) => result.text),
    counter,
    size.agents,
    size.agents * size.toolSteps,
  );
  return { ms, cpuMs };
}

export const W3: Workload<SwarmSize> = {
  id: 'W3',
  title: 'swarm',
  unit: 'wall ms',
  better: 'lower',
  sizes: {
    full: { agents: 500, toolSteps: 3, latencyMs: 5, concurrency: 100 },
    smoke: { agents: 6, toolSteps: 1, latencyMs: 1, concurrency: 3 },
  },
  describe: (size) =>
    `${size.agents} subagents through a supervisor, ${size.toolSteps} tool steps + a final answer each, model ` +
    `latency ${size.latencyMs} ms, concurrency ${size.concurrency}; ideal ${idealSwarmMs(size)} ms`,
  figure: (run) => run.ms,
  ideal: idealSwarmMs,
  runs: { warmup: 1, measured: 7 },
  // Issue 12: at pi-agent-core's level (1.5× the ideal), with a peak RSS no larger than pi-agent-core's.
  targets: [
    { impl: 'troupe', baseline: 'ideal', bound: 'max', ratio: 1.5 },
    { impl: 'troupe', baseline: 'pi', bound: 'max', ratio: 1, metric: 'rss' },
  ],
  labels: { 'troupe.session': 'Troupe journaling to a JSONL session (durability step)' },
  notes: ({ impl, facts }) =>
    impl === 'troupe.session'
      ? [`W3 session journal: ${facts.journalKB} KB, ${facts.writes} writes, ${facts.records} records per run`]
      : [],
  impls: {
    troupe: (size) => troupeSwarm(size),
    /** Issue 13: the same swarm journaled to a JSONL session (≤ 1.3× Troupe's row; the journal under 2 MB). */
    async 'troupe.session'(size) {
      const { sessions } = await troupe();
      const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-'));
      try {
        const session = sessions({ dir }).create();
        const { ms, cpuMs } = await troupeSwarm(size, { session });
        const stats = session.stats;
        check(stats !== undefined && stats.writes > 0, 'expected the session to have written its journal');
        const bytes = statSync(join(dir, `${session.id}.jsonl`)).size;
        return {
          ms,
          cpuMs,
          facts: { journalKB: Math.round(bytes / 1024), writes: stats.writes, records: stats.records },
        };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    async plain(size) {
      const model = swarmModel(size);
      return pooled(size, (prompt) => plainLoop(model, table, prompt, { maxSteps: size.toolSteps + 1 }));
    },
    async naive(size) {
      const model = swarmModel(size);
      return pooled(size, (prompt) => naiveLoop(model, table, prompt, { maxSteps: size.toolSteps + 1 }));
    },
    async pi(size) {
      const run = await pi();
      const model = swarmModel(size);
      return pooled(size, (prompt) => run(model, prompt));
    },
  },
};
