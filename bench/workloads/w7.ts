import type { Model } from '../../src/protocol/index.js';
import { naiveLoop } from '../baselines/naive-xstate.js';
import { plainLoop, toolTable } from '../baselines/plain-loop.js';
import { echoTool, swarmModel, ToolCounter } from '../fixtures.js';
import { piRunner, troupe } from '../impls.js';
import { check, pool, settledHeap, type Timed, timed, type Workload } from '../workload.js';
import { swarmCheck } from './checks.js';

/**
 * W7 (issue 12): thousands of subagents started at once. Each makes two slow model calls with one tool call
 * between them, so the ideal is two latencies whatever their number; what a subagent costs must not grow with the
 * number of its live siblings. One run sweeps the sizes upwards (after a short warm-up swarm, so the first size
 * does not pay for the JIT): the figure is the wall time of the largest; the facts are every size's wall time
 * and CPU time per subagent, and the heap each live subagent holds while it waits for its first answer (weighed in
 * one more swarm of the largest size, after the timed ones).
 */
interface SiblingsSize {
  /** Swarm sizes, ascending; each swarm starts all of its subagents at once. */
  siblings: number[];
  latencyMs: number;
}

const TOOL_STEPS = 1;
const idealMs = ({ latencyMs }: SiblingsSize) => (TOOL_STEPS + 1) * latencyMs;

const counter = new ToolCounter();
const tools = [echoTool(counter)];
const table = toolTable(tools);
const pi = piRunner(tools);

type Swarm = (agents: number, latencyMs: number) => Promise<string[]>;

/** Waits half a latency (every subagent is then waiting for its first answer) and weighs the heap. */
function heapWhileWaiting(latencyMs: number): Promise<number> {
  return new Promise((resolve) => setTimeout(() => resolve(settledHeap()), latencyMs / 2));
}

async function sweep(size: SiblingsSize, swarm: Swarm): Promise<Timed> {
  const largest = size.siblings[size.siblings.length - 1] ?? 0;
  counter.calls = 0;
  await swarm(Math.min(100, largest), 1);
  const facts: Record<string, number> = {};
  let last = { ms: 0, cpuMs: 0 };
  for (const agents of size.siblings) {
    counter.calls = 0;
    const { ms, cpuMs, value: texts } = await timed(() => swarm(agents, size.latencyMs));
    swarmCheck(texts, counter, agents, agents * TOOL_STEPS);
    facts[`wallMs@${agents}`] = ms;
    facts[`cpuUsPerAgent@${agents}`] = (cpuMs * 1000) / agents;
    last = { ms, cpuMs };
  }
  // The heap is weighed in a swarm of its own, untimed: weighing collects everything twice while every subagent
  // waits, a pause as long as the heap is large (0.3 s at 10,000), which the timed swarm must not include.
  counter.calls = 0;
  const before = settledHeap();
  const weighed = heapWhileWaiting(size.latencyMs);
  swarmCheck(await swarm(largest, size.latencyMs), counter, largest, largest * TOOL_STEPS);
  facts.heapKBPerLiveAgent = ((await weighed) - before) / largest / 1024;
  // Flat from 1,000 up: below that a subagent still pays for code the JIT has not optimised yet.
  const from = size.siblings.find((n) => n >= 1000) ?? size.siblings[0] ?? 0;
  facts.cpuGrowth = (facts[`cpuUsPerAgent@${largest}`] ?? 0) / (facts[`cpuUsPerAgent@${from}`] ?? 1);
  const second = size.siblings[size.siblings.length - 2] ?? largest;
  facts.idealRatioBelowLargest = (facts[`wallMs@${second}`] ?? 0) / idealMs(size);
  return { ...last, facts };
}

/** The baselines' fan-out: every loop at once, all sharing one model (as Troupe's subagents share theirs). */
function allAtOnce(loop: (model: Model, prompt: string) => Promise<{ text: string }>): Swarm {
  return async (agents, latencyMs) => {
    const model = swarmModel({ toolSteps: TOOL_STEPS, latencyMs });
    const results = await pool(agents, agents, (n) => loop(model, `task ${n}`));
    return results.map((result) => result.text);
  };
}

export const W7: Workload<SiblingsSize> = {
  id: 'W7',
  title: 'siblings',
  unit: 'wall ms',
  better: 'lower',
  sizes: {
    full: { siblings: [100, 1000, 2000, 5000, 10_000], latencyMs: 1500 },
    smoke: { siblings: [4, 8], latencyMs: 5 },
  },
  describe: (size) =>
    `${size.siblings.join(', ')} subagents started at once (concurrency = their number), each two model calls of ` +
    `${size.latencyMs} ms with one tool call between; the figure is the largest swarm's wall time (ideal ` +
    `${idealMs(size)} ms); CPU per subagent at every size`,
  figure: (run) => run.ms,
  ideal: idealMs,
  // One sweep (and the swarm that weighs the heap) takes about 50 s: one run per round, in the bench's three rounds.
  // A single sweep is at the mercy of the machine (the same build gave 1.45× and 1.70× the ideal at 10,000 within
  // minutes, the naive XState loop 1.28× and 1.52×): the figure and the facts are medians of the rounds.
  runs: { warmup: 0, measured: 1 },
  targets: [
    // The largest swarm (10,000) within 1.5× the ideal, the one below it (5,000) within 1.3×.
    { impl: 'troupe', baseline: 'ideal', bound: 'max', ratio: 1.5 },
    {
      impl: 'troupe',
      baseline: 'absolute',
      bound: 'max',
      ratio: 1.3,
      metric: { fact: 'idealRatioBelowLargest', label: 'the second-largest swarm (5,000) ÷ the ideal' },
    },
    {
      impl: 'troupe',
      baseline: 'absolute',
      bound: 'max',
      // "Flat": the CPU a subagent costs at the largest size, within the noise of the 1,000's.
      ratio: 1.25,
      metric: { fact: 'cpuGrowth', label: 'CPU per subagent, largest swarm ÷ 1,000' },
    },
  ],
  notes: ({ facts }) => {
    const sizes = Object.keys(facts)
      .filter((key) => key.startsWith('cpuUsPerAgent@'))
      .map((key) => key.slice('cpuUsPerAgent@'.length));
    const perSize = sizes
      .map(
        (n) =>
          `${n}: ${Number(facts[`wallMs@${n}`]).toFixed(0)} ms, ${(Number(facts[`cpuUsPerAgent@${n}`]) / 1000).toFixed(2)} ms CPU`,
      )
      .join('; ');
    return [
      `wall time and CPU per subagent by swarm size: ${perSize}; CPU per subagent grows ` +
        `${Number(facts.cpuGrowth).toFixed(2)}× from 1,000 (or the smallest) to the largest; ` +
        `${Number(facts.heapKBPerLiveAgent).toFixed(1)} KB of heap per live subagent.`,
    ];
  },
  impls: {
    async troupe(size) {
      const { createSupervisor } = await troupe();
      return sweep(size, async (agents, latencyMs) => {
        const supervisor = createSupervisor({
          model: swarmModel({ toolSteps: TOOL_STEPS, latencyMs }),
          tools,
          concurrency: agents,
          maxRestarts: 0,
        });
        const results = await supervisor.swarm(Array.from({ length: agents }, (_, n) => `task ${n}`));
        await supervisor.stop();
        const failed = results.filter((result) => result.status !== 'completed').length;
        check(failed === 0, `${failed} of ${agents} subagents did not complete`);
        return results.map((result) => result.text);
      });
    },
    plain: (size) =>
      sweep(
        size,
        allAtOnce((model, prompt) => plainLoop(model, table, prompt, { maxSteps: TOOL_STEPS + 1 })),
      ),
    naive: (size) =>
      sweep(
        size,
        allAtOnce((model, prompt) => naiveLoop(model, table, prompt, { maxSteps: TOOL_STEPS + 1 })),
      ),
    async pi(size) {
      const run = await pi();
      return sweep(size, allAtOnce(run));
    },
  },
};
