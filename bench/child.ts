/**
 * One workload × implementation in its own process: `node --import tsx bench/child.ts W1 troupe [--smoke]
 * [--runs N] [--warmup N]`. Prints one JSON line (a Measurement); a failed check exits non-zero.
 */
import { measure } from './measure.js';
import type { ImplId, WorkloadId } from './workload.js';
import { WORKLOADS } from './workloads.js';

const args = process.argv.slice(2);
const [workloadId, impl] = args as [WorkloadId, ImplId];
const option = (name: string): number | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : undefined;
};

const workload = WORKLOADS[workloadId];
if (!workload) throw new Error(`unknown workload ${workloadId}`);
const result = await measure(workload, impl, args.includes('--smoke') ? 'smoke' : 'full', {
  warmup: option('--warmup'),
  runs: option('--runs'),
  production: true,
});
process.stdout.write(`${JSON.stringify(result)}\n`);
