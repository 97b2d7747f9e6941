/**
 * `npm run bench`: every workload × implementation in its own child process, one after the other; medians, ratios
 * to both baselines in the same run, peak RSS. Writes the table to stdout, bench/results.md and bench/results.json.
 *
 * It first compiles the bench with the package (`npm run build -- --bench`, into dist/): each child runs plain node
 * on dist/bench/child.js, so Troupe's row loads the production build of Troupe and XState, as the peer harness
 * does, and no TypeScript loader sits in the process whose peak RSS is measured (tsx adds tens of MB to it, more
 * to a row that loads more modules, which drew the rows' RSS together).
 *
 *   npm run bench                      all workloads, full sizes
 *   npm run bench -- --only W1,W4      some workloads
 *   npm run bench -- --impls troupe,naive,pi   some rows (of every workload that has them)
 *   npm run bench -- --rounds 5        more rounds (default 3)
 *   npm run bench -- --smoke           tiny sizes, few runs, nothing written (a quick check that it all runs)
 *
 * The machine is shared, so the load moves while the bench runs: each workload runs in rounds, every round one
 * child process per implementation in turn, and a row's median is over the runs of all its rounds. Load that
 * comes and goes then falls on every implementation alike, and the ratios of the same run stay meaningful.
 */
import { execFile, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Measurement, median } from './measure.js';
import { type ReportInput, renderMarkdown } from './report.js';
import { restateSection } from './restate-section.js';
import type { WorkloadId } from './workload.js';
import { implsOf, WORKLOADS } from './workloads.js';

const run = promisify(execFile);
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const write = !smoke && !args.includes('--no-write');
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? new Set((args[onlyAt + 1] ?? '').split(',')) : undefined;
const implsAt = args.indexOf('--impls');
const onlyImpls = implsAt >= 0 ? new Set((args[implsAt + 1] ?? '').split(',')) : undefined;
const roundsAt = args.indexOf('--rounds');
const rounds = smoke ? 1 : roundsAt >= 0 ? Number(args[roundsAt + 1]) : 3;

const root = fileURLToPath(new URL('..', import.meta.url));
const child = fileURLToPath(new URL('../dist/bench/child.js', import.meta.url));
const resultsMd = fileURLToPath(new URL('./results.md', import.meta.url));
const resultsJson = fileURLToPath(new URL('./results.json', import.meta.url));

/** Children must not inherit a development condition (or anything else) from NODE_OPTIONS. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

/** `npm run build -- --bench`: the package and the bench, compiled into dist/. */
function build(): void {
  const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts', '--bench'], {
    cwd: root,
    env: childEnv(),
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error(`npm run build -- --bench failed (exit ${built.status})`);
}

async function measureInChild(workload: WorkloadId, impl: string): Promise<Measurement> {
  // --expose-gc: W5 weighs the heap after a full collection.
  const argv = ['--expose-gc', child, workload, impl, ...(smoke ? ['--smoke', '--warmup', '1', '--runs', '3'] : [])];
  try {
    const { stdout } = await run(process.execPath, argv, { env: childEnv(), maxBuffer: 16 << 20 });
    const line = stdout.trim().split('\n').pop() ?? '';
    return JSON.parse(line) as Measurement;
  } catch (error) {
    const failure = error as { stderr?: string; message: string };
    throw new Error(`${workload} ${impl} failed:\n${failure.stderr || failure.message}`);
  }
}

build();
const measurements: Measurement[] = [];
for (const workload of Object.values(WORKLOADS)) {
  if (only && !only.has(workload.id)) continue;
  if (workload.pending) {
    process.stderr.write(`${workload.id} pending: ${workload.pending}\n`);
    continue;
  }
  const byImpl = new Map<string, Measurement[]>();
  const workloadRounds = smoke ? 1 : Math.min(rounds, workload.rounds ?? rounds);
  for (let round = 1; round <= workloadRounds; round++) {
    for (const impl of implsOf(workload)) {
      if (onlyImpls && !onlyImpls.has(impl)) continue;
      process.stderr.write(`${workload.id} round ${round}/${workloadRounds} ${impl} … `);
      const measurement = await measureInChild(workload.id, impl);
      byImpl.set(impl, [...(byImpl.get(impl) ?? []), measurement]);
      process.stderr.write(`${measurement.median.toFixed(2)} ${measurement.unit}\n`);
    }
  }
  for (const parts of byImpl.values()) measurements.push(pool(parts));
}

/** One row from the rounds of one implementation: every measured run counts once. */
function pool(parts: Measurement[]): Measurement {
  const first = parts[0] as Measurement;
  const figures = parts.flatMap((m) => m.figures);
  const cpuFigures = parts.flatMap((m) => m.cpuFigures ?? []);
  const pooled: Measurement = {
    ...first,
    figures,
    median: median(figures),
    min: Math.min(...figures),
    max: Math.max(...figures),
    medianMs: median(parts.map((m) => m.medianMs)),
    maxRssKB: Math.max(...parts.map((m) => m.maxRssKB)),
    xstate: [...new Set(parts.flatMap((m) => m.xstate))],
  };
  if (cpuFigures.length === figures.length) {
    pooled.cpuFigures = cpuFigures;
    pooled.cpuMedian = median(cpuFigures);
  }
  const facts = pooledFacts(parts);
  if (facts) pooled.facts = facts;
  return pooled;
}

/** A row's facts: each number the median of its rounds' (as the figure is), anything else the first round's. */
function pooledFacts(parts: Measurement[]): Measurement['facts'] {
  const first = parts[0]?.facts;
  if (!first) return undefined;
  const facts: NonNullable<Measurement['facts']> = { ...first };
  for (const [key, value] of Object.entries(first)) {
    if (typeof value !== 'number') continue;
    facts[key] = median(parts.map((m) => m.facts?.[key]).filter((n): n is number => typeof n === 'number'));
  }
  return facts;
}

const input: ReportInput = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: `${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'unknown'}`,
  scale: smoke ? 'smoke' : 'full',
  measurements,
};
const markdown = renderMarkdown(input);
process.stdout.write(`${markdown}\n`);
if (write) {
  // bench:restate's report, kept at the end.
  const kept = restateSection();
  await writeFile(resultsMd, kept ? `${markdown}\n${kept}` : markdown);
  await writeFile(resultsJson, `${JSON.stringify(input, null, 2)}\n`);
  process.stderr.write('wrote bench/results.md and bench/results.json\n');
}
const failed = input.measurements.length === 0;
if (failed) process.exitCode = 1;
