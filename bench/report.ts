import type { Measurement } from './measure.js';
import { type ImplId, type Target, WORKLOADS } from './workloads.js';

export interface ReportInput {
  date: string;
  node: string;
  cpus: string;
  scale: 'full' | 'smoke';
  measurements: Measurement[];
}

const NAMES: Record<ImplId, string> = {
  troupe: 'Troupe',
  'troupe.on': "Troupe, agent.on('message_update')",
  'troupe.stream': 'Troupe, agent.stream()',
  plain: 'plain while loop',
  naive: 'naive XState loop',
  model: 'scripted model alone',
};

function format(value: number): string {
  if (value >= 100_000) return Math.round(value).toLocaleString('en-US');
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** The wall-time ratio, and the CPU-time one in parentheses. */
function ratio(m: Measurement, base: Measurement | undefined): string {
  if (!base || m === base) return '';
  const cpu = m.cpuMedian !== undefined && base.cpuMedian ? ` (${(m.cpuMedian / base.cpuMedian).toFixed(2)}×)` : '';
  return `${(m.median / base.median).toFixed(2)}×${cpu}`;
}

export interface TargetOutcome extends Target {
  workload: string;
  actual: number;
  /** The same ratio from CPU time. */
  cpu?: number;
  met: boolean;
}

export function targetOutcomes(measurements: readonly Measurement[]): TargetOutcome[] {
  const outcomes: TargetOutcome[] = [];
  for (const workload of Object.values(WORKLOADS)) {
    for (const target of workload.targets) {
      const m = measurements.find((x) => x.workload === workload.id && x.impl === target.impl);
      const base = measurements.find((x) => x.workload === workload.id && x.impl === target.baseline);
      if (!m || !base) continue;
      const actual = m.median / base.median;
      const met = target.bound === 'max' ? actual <= target.ratio : actual >= target.ratio;
      const outcome: TargetOutcome = { ...target, workload: workload.id, actual, met };
      if (m.cpuMedian !== undefined && base.cpuMedian) outcome.cpu = m.cpuMedian / base.cpuMedian;
      outcomes.push(outcome);
    }
  }
  return outcomes;
}

/** The results table: one row per workload × implementation, ratios to both baselines of the same run. */
export function renderMarkdown(input: ReportInput): string {
  const lines: string[] = [];
  const builds = new Set(input.measurements.flatMap((m) => m.xstate.filter((f) => /xstate\.cjs\.js$/.test(f))));
  lines.push('# Benchmarks', '');
  lines.push(
    `${input.date} · Node ${input.node} · ${input.cpus} · XState production build (${[...builds].join(', ') || 'n/a'}) · ` +
      `${input.scale} sizes · each row its own process, median of the measured runs after a warm-up. ` +
      'Ratios are of wall time, with the ratio of process CPU time in parentheses (it moves less with the load ' +
      'of other processes on a shared machine). Reproduce with `npm run bench`.',
    '',
  );
  lines.push(
    '| workload | implementation | median | min – max | runs | ÷ plain loop | ÷ naive XState | scripted model share | peak RSS |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const workload of Object.values(WORKLOADS)) {
    const size = workload.sizes[input.scale];
    const label = `${workload.id} ${workload.title}`;
    if (workload.pending) {
      lines.push(`| ${label} | **pending**: ${workload.pending} | | | | | | | |`);
      continue;
    }
    const rows = input.measurements.filter((m) => m.workload === workload.id);
    if (rows.length === 0) continue;
    const plain = rows.find((m) => m.impl === 'plain');
    const naive = rows.find((m) => m.impl === 'naive');
    const model = rows.find((m) => m.impl === 'model');
    for (const m of rows) {
      const share = model && m !== model ? `${((100 * model.medianMs) / m.medianMs).toFixed(1)} %` : '';
      lines.push(
        `| ${label} | ${NAMES[m.impl]} | ${format(m.median)} ${workload.unit} | ${format(m.min)} – ${format(m.max)} | ` +
          `${m.figures.length} | ${ratio(m, plain)} | ${ratio(m, naive)} | ${share} | ${(m.maxRssKB / 1024).toFixed(0)} MB |`,
      );
    }
    lines.push(`| | _${workload.describe(size)}_ | | | | | | | |`);
  }
  lines.push(
    '',
    '## Targets',
    '',
    '| workload | target | actual (wall) | actual (CPU) | met |',
    '| --- | --- | ---: | ---: | --- |',
  );
  for (const outcome of targetOutcomes(input.measurements)) {
    const bound = outcome.bound === 'max' ? '≤' : '≥';
    lines.push(
      `| ${outcome.workload} | ${NAMES[outcome.impl]} ${bound} ${outcome.ratio}× ${outcome.baseline === 'plain' ? 'plain loop' : 'naive XState loop'} | ` +
        `${outcome.actual.toFixed(2)}× | ${outcome.cpu === undefined ? '' : `${outcome.cpu.toFixed(2)}×`} | ` +
        `${outcome.met ? 'yes' : '**no**'} |`,
    );
  }
  const verified = input.measurements.filter((m) => m.verified);
  if (verified.length > 0) {
    lines.push('', '## Checks', '');
    lines.push(
      'Every run checks its own result (all tool calls executed, results in call order, every delta and character ' +
        'arrived) and fails loudly otherwise. Untimed verification runs:',
      '',
    );
    for (const m of verified) {
      const facts = Object.entries(m.verified ?? {})
        .map(([key, value]) => `\`${key}\` ${value}`)
        .join(', ');
      lines.push(`- ${m.workload} ${NAMES[m.impl]}: state entries counted with the inspect option: ${facts}`);
    }
  }
  const stream = input.measurements.find((m) => m.impl === 'troupe.stream' && m.facts?.events !== undefined);
  if (stream) {
    lines.push(
      `- ${stream.workload} ${NAMES[stream.impl]}: all characters arrived in order in ${stream.facts?.events} ` +
        'message_update events (the stream merges consecutive deltas only when its reader falls behind).',
    );
  }
  return `${lines.join('\n')}\n`;
}
