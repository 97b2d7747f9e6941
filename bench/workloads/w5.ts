import { echoTool, FINAL_TEXT, swarmModel, ToolCounter } from '../fixtures.js';
import { troupe } from '../impls.js';
import { check, settledHeap, timed, type Workload } from '../workload.js';

interface ScaleSize {
  idle: number;
  subagents: number;
  concurrency: number;
}

export const W5: Workload<ScaleSize> = {
  id: 'W5',
  title: 'scale',
  unit: 'KB heap/idle agent',
  better: 'lower',
  sizes: {
    full: { idle: 10_000, subagents: 10_000, concurrency: 200 },
    smoke: { idle: 20, subagents: 20, concurrency: 5 },
  },
  describe: (size) =>
    `${size.idle} idle agents (heap per agent); then ${size.subagents} subagents, one tool step + a final answer ` +
    `each, run to completion under one supervisor, concurrency ${size.concurrency} (wall; heap after ÷ before)`,
  figure: (run, size) => Number(run.facts?.idleHeapBytes ?? 0) / size.idle / 1024,
  // A run takes tens of seconds (see the report): fewer runs than the others, in one round.
  runs: { warmup: 0, measured: 3 },
  rounds: 1,
  targets: [
    { impl: 'troupe', baseline: 'absolute', bound: 'max', ratio: 10 },
    {
      impl: 'troupe',
      baseline: 'absolute',
      bound: 'max',
      ratio: 1.1,
      metric: { fact: 'heapAfterRatio', label: 'heap after the subagents ÷ before' },
    },
  ],
  notes: ({ median, facts: f }) => [
    `${median.toFixed(2)} KB heap per idle agent; ${Number(f.swarmWallMs).toFixed(0)} ms wall for the subagents; ` +
      `heap ${Number(f.heapStartMB).toFixed(1)} MB before, ${Number(f.heapEndMB).toFixed(1)} MB after ` +
      `(${Number(f.heapAfterRatio).toFixed(2)}×, last run).`,
  ],
  impls: {
    async troupe(size) {
      const { createAgent, createSupervisor } = await troupe();
      // 1. Idle agents: what each one costs in heap, created and left idle.
      const model = swarmModel({ toolSteps: 1, latencyMs: 0 });
      const counter = new ToolCounter();
      const tools = [echoTool(counter)];
      const before = settledHeap();
      const agents = Array.from({ length: size.idle }, () => createAgent({ model, tools }));
      const idleHeapBytes = settledHeap() - before;
      check(
        agents.every((agent) => agent.actor.getSnapshot().matches('idle')),
        'expected every created agent to be idle',
      );
      await Promise.all(agents.map((agent) => agent.stop()));
      agents.length = 0;

      // 2. Subagents run to completion under one supervisor; the heap must come back.
      // The harness's own data (the prompts in, the results out) is made before the first reading and dropped
      // before the second: the ratio is what the runtime keeps, not what the benchmark holds on to.
      const supervisor = createSupervisor({ model, tools, concurrency: size.concurrency, maxRestarts: 0 });
      const prompts = Array.from({ length: size.subagents }, (_, n) => `task ${n}`);
      const start = settledHeap();
      const { ms, cpuMs, value: results } = await timed(() => supervisor.swarm(prompts));
      let completed = 0;
      for (const result of results) if (result.status === 'completed' && result.text === FINAL_TEXT) completed++;
      check(completed === size.subagents, `${size.subagents - completed} subagents did not complete`);
      check(counter.calls === size.subagents, `expected ${size.subagents} tool calls, got ${counter.calls}`);
      results.length = 0;
      prompts.length = 0;
      const end = settledHeap();
      await supervisor.stop();
      return {
        ms,
        cpuMs,
        facts: {
          idleHeapBytes,
          swarmWallMs: ms,
          heapStartMB: start / 2 ** 20,
          heapEndMB: end / 2 ** 20,
          heapAfterRatio: end / start,
        },
      };
    },
  },
};
