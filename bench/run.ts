/**
 * `npm run bench`: every workload × implementation in its own child process (plain node with tsx, so the
 * production build of XState), one after the other; medians, ratios to both baselines in the same run, peak RSS.
 * Writes the table to stdout, bench/results.md and bench/results.json.
 *
 *   npm run bench                      all workloads, full sizes
 *   npm run bench -- --only W1,W4      some workloads
 *   npm run bench -- --smoke           tiny sizes, few runs, nothing written (a quick check that it all runs)
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Measurement } from './measure.js';
import { type ReportInput, renderMarkdown } from './report.js';
import { implsOf, WORKLOADS, type WorkloadId } from './workloads.js';

const run = promisify(execFile);
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const write = !smoke && !args.includes('--no-write');
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? new Set((args[onlyAt + 1] ?? '').split(',')) : undefined;

const child = fileURLToPath(new URL('./child.ts', import.meta.url));
const resultsMd = fileURLToPath(new URL('./results.md', import.meta.url));
const resultsJson = fileURLToPath(new URL('./results.json', import.meta.url));

/** Children must not inherit a development condition (or anything else) from NODE_OPTIONS. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

async function measureInChild(workload: WorkloadId, impl: string): Promise<Measurement> {
  const argv = [
    '--import',
    'tsx',
    child,
    workload,
    impl,
    ...(smoke ? ['--smoke', '--warmup', '1', '--runs', '3'] : []),
  ];
  try {
    const { stdout } = await run(process.execPath, argv, { env: childEnv(), maxBuffer: 16 << 20 });
    const line = stdout.trim().split('\n').pop() ?? '';
    return JSON.parse(line) as Measurement;
  } catch (error) {
    const failure = error as { stderr?: string; message: string };
    throw new Error(`${workload} ${impl} failed:\n${failure.stderr || failure.message}`);
  }
}

async function supervisorAvailable(): Promise<boolean> {
  const api = (await import('../src/index.js')) as Record<string, unknown>;
  return typeof api.createSupervisor === 'function';
}

const measurements: Measurement[] = [];
const hasSupervisor = await supervisorAvailable();
for (const workload of Object.values(WORKLOADS)) {
  if (only && !only.has(workload.id)) continue;
  if (workload.pending) {
    process.stderr.write(
      `${workload.id} pending: ${workload.pending}${hasSupervisor ? ' (createSupervisor exists now)' : ''}\n`,
    );
    continue;
  }
  for (const impl of implsOf(workload)) {
    process.stderr.write(`${workload.id} ${impl} … `);
    const measurement = await measureInChild(workload.id, impl);
    measurements.push(measurement);
    process.stderr.write(`${measurement.median.toFixed(2)} ${measurement.unit}\n`);
  }
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
  await writeFile(resultsMd, markdown);
  await writeFile(resultsJson, `${JSON.stringify(input, null, 2)}\n`);
  process.stderr.write('wrote bench/results.md and bench/results.json\n');
}
const failed = input.measurements.length === 0;
if (failed) process.exitCode = 1;
