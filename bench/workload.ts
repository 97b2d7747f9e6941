/**
 * What a workload is, and the helpers every workload file shares. A workload lives in its own file under
 * `bench/workloads/` and is registered with one line in `bench/workloads.ts`.
 */

/** An implementation's key in a workload's `impls`. The baselines have fixed keys, variants any other. */
export type ImplId = string;
export type WorkloadId = string;
export type Scale = 'full' | 'smoke';

/** The implementations that other rows are divided by, in the table's ratio columns. */
export const BASELINES = ['plain', 'naive', 'pi'] as const;
export type BaselineId = (typeof BASELINES)[number];

/** Names of the implementations every workload may have; a workload names its own variants in `labels`. */
export const IMPL_NAMES: Record<string, string> = {
  troupe: 'Troupe',
  plain: 'plain while loop',
  naive: 'naive XState loop',
  pi: 'pi-agent-core 0.73.1',
  model: 'scripted model alone',
};

/** One timed run: its wall time, and what it checked (a failed check throws). */
export interface Timed {
  ms: number;
  /** CPU time of the whole process over the same span (user + system, all threads), in ms. */
  cpuMs?: number;
  /** Extra facts the run observed, for the JSON report. */
  facts?: Record<string, number | string>;
}

export interface Target {
  impl: ImplId;
  /**
   * A baseline of the same run, the workload's ideal, `absolute` (the figure itself against `ratio`), or another row
   * of the same workload (`{ row }`: a variant against its base, such as W1 with and without a collection).
   */
  baseline: BaselineId | 'ideal' | 'absolute' | { row: ImplId };
  /** `max`: figure ÷ baseline must be at most `ratio`; `min`: at least. */
  bound: 'max' | 'min';
  ratio: number;
  /** What is compared: the workload's figure (default), the process's peak RSS, or a fact of the last run. */
  metric?: 'figure' | 'rss' | { fact: string; label: string };
}

export interface Workload<S = unknown> {
  id: WorkloadId;
  title: string;
  unit: string;
  better: 'lower' | 'higher';
  sizes: Record<Scale, S>;
  describe(size: S): string;
  /** The figure of one run. */
  figure(run: Timed, size: S): number;
  /** The best figure possible, where the workload has one (W3: waves × model latency). */
  ideal?(size: S): number;
  /** Table order is the order of this record. */
  impls: Record<ImplId, (size: S) => Promise<Timed>>;
  /** Names of the implementations that `IMPL_NAMES` does not know (variants such as `troupe.stream`). */
  labels?: Record<ImplId, string>;
  /**
   * Rows measured without the full collection every other row has before each run: beside the same row with it,
   * they show what a collection costs the code that runs next (optimised code V8 drops with the objects it served).
   */
  uncollected?: readonly ImplId[];
  /** A separate, untimed run that checks what timing must not pay for (e.g. counting transitions). */
  verify?: Partial<Record<ImplId, (size: S) => Promise<Record<string, number | string>>>>;
  runs: { warmup: number; measured: number };
  /** At most this many rounds of child processes (a long workload runs fewer). */
  rounds?: number;
  targets: Target[];
  /** Lines for the report's checks section, from one implementation's row (its median, its last run's facts). */
  notes?(row: { impl: ImplId; median: number; facts: Record<string, number | string> }): string[];
  /** Set when the workload cannot run yet; the table says why. */
  pending?: string;
}

export function implName(workload: Workload, impl: ImplId): string {
  return workload.labels?.[impl] ?? IMPL_NAMES[impl] ?? impl;
}

export class CheckFailed extends Error {
  override readonly name = 'CheckFailed';
}

export function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new CheckFailed(what);
}

/** Times `fn` in wall and process CPU time. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await fn();
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, value };
}

/** Runs `count` tasks with at most `concurrency` at once; results in task order. */
export async function pool<T>(count: number, concurrency: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
}

/** Heap in use after a full collection (when `--expose-gc` gave us `gc`; the smoke test runs without it). */
export function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}
