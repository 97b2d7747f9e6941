/**
 * Two rows of one workload alternated in one process: what a variant costs against its base row (a session's
 * journal against none), on a shared machine where separate child processes see different loads.
 *
 *   node --expose-gc --import tsx bench/ab-rows.ts W1 troupe troupe.session [pairs] [--gc]
 *
 * Reports the median wall and CPU figure of each row (the workload's figure: W1 µs per step, W3 wall ms; CPU as
 * `process.cpuUsage`, every thread) and the medians of the per-pair ratios second ÷ first, the order within a pair
 * alternating. `--gc` collects before every run, as `npm run bench` does. Facts of the second row's last run
 * (write counts, journal size) are printed too.
 */
import { loadavg } from 'node:os';
import { median } from './measure.js';
import type { Timed } from './workload.js';
import { WORKLOADS } from './workloads.js';

const args = process.argv.slice(2);
const collect = args.includes('--gc');
const [workloadId, baseId, variantId, pairsArg] = args.filter((arg) => !arg.startsWith('--'));
const found = workloadId ? WORKLOADS[workloadId] : undefined;
if (!found || !baseId || !variantId) {
  throw new Error('usage: bench/ab-rows.ts <workload> <base row> <variant row> [pairs] [--gc]');
}
const workload = found;
const size = workload.sizes.full;
const rows = [baseId, variantId].map((id) => {
  const run = workload.impls[id];
  if (!run) throw new Error(`${workload.id} has no row "${id}"`);
  return run;
});
const pairs = Number(pairsArg ?? 40);
const gc = (globalThis as { gc?: () => void }).gc;

async function measure(row: number): Promise<{ wall: number; cpu: number; facts?: Timed['facts'] }> {
  if (collect) gc?.();
  const timed = await (rows[row] as (size: unknown) => Promise<Timed>)(size);
  const wall = workload.figure(timed, size);
  const cpu = workload.figure({ ms: timed.cpuMs ?? Number.NaN }, size);
  return { wall, cpu, facts: timed.facts };
}

for (let i = 0; i < workload.runs.warmup; i++) {
  await measure(0);
  await measure(1);
}
const wall: [number[], number[]] = [[], []];
const cpu: [number[], number[]] = [[], []];
const wallRatios: number[] = [];
const cpuRatios: number[] = [];
let facts: Timed['facts'];
for (let pair = 0; pair < pairs; pair++) {
  const first = pair % 2;
  const one = await measure(first);
  const other = await measure(1 - first);
  const [base, variant] = first === 0 ? [one, other] : [other, one];
  wall[0].push(base.wall);
  wall[1].push(variant.wall);
  cpu[0].push(base.cpu);
  cpu[1].push(variant.cpu);
  wallRatios.push(variant.wall / base.wall);
  cpuRatios.push(variant.cpu / base.cpu);
  facts = variant.facts;
}
const fixed = (value: number) => Number(value.toFixed(1));
process.stdout.write(
  `${JSON.stringify({
    workload: workload.id,
    unit: workload.unit,
    rows: [baseId, variantId],
    pairs,
    gc: collect,
    load: loadavg().map((x) => x.toFixed(1)),
    wall: [fixed(median(wall[0])), fixed(median(wall[1]))],
    cpu: [fixed(median(cpu[0])), fixed(median(cpu[1]))],
    wallRatio: median(wallRatios).toFixed(3),
    cpuRatio: median(cpuRatios).toFixed(3),
    facts,
  })}\n`,
);
