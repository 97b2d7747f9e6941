/**
 * One workload × implementation in its own process: `node dist/bench/child.js W1 troupe [--smoke] [--runs N]
 * [--warmup N] [--size JSON]` after `npm run build -- --bench` (as `npm run bench` runs it; `node --import tsx
 * bench/child.ts …` runs the sources). Prints one JSON line (a Measurement); a failed check exits non-zero.
 * `--size` overrides fields of the full size, for profiling one size; `--cpu-profile FILE` writes a CPU profile of
 * the measured runs only (not the imports, the verification or the warm-up), which `bench/profile.ts` summarises:
 *
 *   node --expose-gc dist/bench/child.js W7 troupe --size '{"siblings":[2000]}' --cpu-profile w7.cpuprofile
 *   npx tsx bench/profile.ts w7.cpuprofile
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { measure } from './measure.js';
import type { ImplId, WorkloadId } from './workload.js';
import { WORKLOADS } from './workloads.js';

const args = process.argv.slice(2);
const [workloadId, impl] = args as [WorkloadId, ImplId];
const option = (name: string): number | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : undefined;
};

const registered = WORKLOADS[workloadId];
if (!registered) throw new Error(`unknown workload ${workloadId}`);
const sizeAt = args.indexOf('--size');
const workload =
  sizeAt >= 0
    ? {
        ...registered,
        sizes: { ...registered.sizes, full: { ...registered.sizes.full, ...JSON.parse(args[sizeAt + 1] ?? '{}') } },
      }
    : registered;
const profileAt = args.indexOf('--cpu-profile');
const profileFile = profileAt >= 0 ? args[profileAt + 1] : undefined;
const result = await measure(workload, impl, args.includes('--smoke') ? 'smoke' : 'full', {
  warmup: option('--warmup'),
  runs: option('--runs'),
  production: true,
  ...(profileFile ? { measuredSpan: profiler(profileFile) } : {}),
});
process.stdout.write(`${JSON.stringify(result)}\n`);

function profiler(file: string) {
  const session = new Session();
  return {
    async start() {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    },
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
