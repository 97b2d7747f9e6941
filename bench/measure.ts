import { createRequire } from 'node:module';
import type { ImplId, Scale, Timed, Workload } from './workload.js';

/** What one child process reports for one workload × implementation. */
export interface Measurement {
  workload: string;
  impl: ImplId;
  scale: Scale;
  unit: string;
  warmup: number;
  /** The figure of every measured run, in run order. */
  figures: number[];
  median: number;
  min: number;
  max: number;
  /** Median wall time of a run, in ms. */
  medianMs: number;
  /**
   * The figure computed from the process's CPU time instead of wall time: on a shared machine it moves less with
   * the other processes' load, so it is kept beside the wall-time figure (the table's figure).
   */
  cpuMedian?: number;
  cpuFigures?: number[];
  /** Peak resident set size of the whole process, in KB. */
  maxRssKB: number;
  /** The XState build files this process loaded. */
  xstate: string[];
  verified?: Record<string, number | string>;
  facts?: Record<string, number | string>;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * The XState build files loaded in this process. `xstate`'s import condition loads a `.cjs.mjs` wrapper around
 * CommonJS files, which the require cache lists; the development build's files have `development` in their names.
 */
export function loadedXStateBuild(): string[] {
  const require = createRequire(import.meta.url);
  return Object.keys(require.cache)
    .filter((file) => /[\\/]xstate[\\/]dist[\\/]/.test(file))
    .map((file) => file.replace(/^.*[\\/]xstate[\\/]dist[\\/]/, 'xstate/dist/'));
}

export function assertProductionXState(): string[] {
  const files = loadedXStateBuild();
  const resolved = import.meta.resolve('xstate');
  if (files.length === 0) throw new Error(`XState is not loaded from a CommonJS build (resolved ${resolved})`);
  const dev = files.filter((file) => file.includes('development'));
  if (dev.length > 0 || resolved.includes('development')) {
    throw new Error(`The development build of XState is loaded (${[resolved, ...dev].join(', ')}): run plain node`);
  }
  return files;
}

export interface MeasureOptions {
  warmup?: number;
  runs?: number;
  /** Check the production build of XState (children do; the smoke test runs under vitest's development build). */
  production?: boolean;
  /** Called before the first and after the last measured run (a profiler is started and stopped there). */
  measuredSpan?: { start(): Promise<void>; stop(): Promise<void> };
}

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * A full collection before every measured run, outside the timed span, as the peer harness does: each run then
 * starts from the same heap instead of paying for the garbage of the runs before it, and the two harnesses
 * measure the same thing. It costs the next run more than its garbage: V8 drops optimised code whose every
 * function object died (per-actor closures) or whose hidden classes did, and the run warms it up again. A
 * workload's `uncollected` rows skip it, so that the table shows that cost beside the row that pays it.
 */
function collectGarbage(): void {
  gc?.();
}

/** Runs one implementation of one workload: verification (untimed), warm-up, then the measured runs. */
export async function measure<S>(
  workload: Workload<S>,
  impl: ImplId,
  scale: Scale,
  options: MeasureOptions = {},
): Promise<Measurement> {
  const run = workload.impls[impl];
  if (!run) throw new Error(`${workload.id} has no implementation "${impl}"`);
  const size = workload.sizes[scale];
  const warmup = options.warmup ?? workload.runs.warmup;
  const runs = options.runs ?? workload.runs.measured;

  const verify = workload.verify?.[impl];
  const verified = verify ? await verify(size) : undefined;
  for (let i = 0; i < warmup; i++) await run(size);
  const figures: number[] = [];
  const times: number[] = [];
  const cpuFigures: number[] = [];
  let facts: Timed['facts'];
  await options.measuredSpan?.start();
  const collects = !workload.uncollected?.includes(impl);
  for (let i = 0; i < runs; i++) {
    if (collects) collectGarbage();
    const timed = await run(size);
    figures.push(workload.figure(timed, size));
    times.push(timed.ms);
    if (timed.cpuMs !== undefined) cpuFigures.push(workload.figure({ ms: timed.cpuMs }, size));
    facts = timed.facts ?? facts;
  }
  await options.measuredSpan?.stop();
  const xstate = options.production ? assertProductionXState() : loadedXStateBuild();
  const result: Measurement = {
    workload: workload.id,
    impl,
    scale,
    unit: workload.unit,
    warmup,
    figures,
    median: median(figures),
    min: Math.min(...figures),
    max: Math.max(...figures),
    medianMs: median(times),
    maxRssKB: process.resourceUsage().maxRSS,
    xstate,
  };
  if (cpuFigures.length === figures.length) {
    result.cpuFigures = cpuFigures;
    result.cpuMedian = median(cpuFigures);
  }
  if (verified) result.verified = verified;
  if (facts) result.facts = facts;
  return result;
}
