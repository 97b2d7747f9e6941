import type { Measurement } from './measure.js';
import { BASELINES, implName, type Target } from './workload.js';
import { WORKLOADS } from './workloads.js';

export interface ReportInput {
  date: string;
  node: string;
  cpus: string;
  scale: 'full' | 'smoke';
  measurements: Measurement[];
}

const AGAINST = {
  plain: 'plain loop',
  naive: 'naive XState loop',
  pi: 'pi-agent-core row',
  ideal: 'ideal',
  absolute: '',
} as const;

/** A row's name, from its workload. */
function nameOf(m: Pick<Measurement, 'workload' | 'impl'>): string {
  const workload = WORKLOADS[m.workload];
  return workload ? implName(workload, m.impl) : m.impl;
}

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
      if (!m) continue;
      const baseline = typeof target.baseline === 'object' ? target.baseline.row : target.baseline;
      let actual: number;
      let cpu: number | undefined;
      if (typeof target.metric === 'object') {
        const fact = m.facts?.[target.metric.fact];
        if (typeof fact !== 'number') continue;
        actual = fact;
      } else if (target.metric === 'rss') {
        const base = measurements.find((x) => x.workload === workload.id && x.impl === baseline);
        if (!base) continue;
        actual = m.maxRssKB / base.maxRssKB;
      } else if (target.baseline === 'absolute') {
        actual = m.median;
      } else if (target.baseline === 'ideal') {
        const ideal = workload.ideal?.(workload.sizes[m.scale]);
        if (!ideal) continue;
        actual = m.median / ideal;
      } else {
        const base = measurements.find((x) => x.workload === workload.id && x.impl === baseline);
        if (!base) continue;
        actual = m.median / base.median;
        if (m.cpuMedian !== undefined && base.cpuMedian) cpu = m.cpuMedian / base.cpuMedian;
      }
      const met = target.bound === 'max' ? actual <= target.ratio : actual >= target.ratio;
      const outcome: TargetOutcome = { ...target, workload: workload.id, actual, met };
      if (cpu !== undefined) outcome.cpu = cpu;
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
      'of other processes on a shared machine). Reproduce with `npm run bench`. Earlier runs, and what each ' +
      'change of the design did to the figures, are in [history.md](history.md), which this run leaves alone.',
    '',
  );
  lines.push(
    '| workload | implementation | median | min – max | runs | ÷ plain loop | ÷ naive XState | ÷ pi-agent-core | scripted model share | peak RSS |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const workload of Object.values(WORKLOADS)) {
    const size = workload.sizes[input.scale];
    const label = `${workload.id} ${workload.title}`;
    if (workload.pending) {
      lines.push(`| ${label} | **pending**: ${workload.pending} | | | | | | | | |`);
      continue;
    }
    const rows = input.measurements.filter((m) => m.workload === workload.id);
    if (rows.length === 0) continue;
    const [plain, naive, pi] = BASELINES.map((id) => rows.find((m) => m.impl === id));
    const model = rows.find((m) => m.impl === 'model');
    for (const m of rows) {
      const share =
        model && m !== model && m.impl !== 'statechart' ? `${((100 * model.medianMs) / m.medianMs).toFixed(1)} %` : '';
      lines.push(
        `| ${label} | ${nameOf(m)} | ${format(m.median)} ${workload.unit} | ${format(m.min)} – ${format(m.max)} | ` +
          `${m.figures.length} | ${ratio(m, plain)} | ${ratio(m, naive)} | ${ratio(m, pi)} | ${share} | ` +
          `${(m.maxRssKB / 1024).toFixed(0)} MB |`,
      );
    }
    lines.push(`| | _${workload.describe(size)}_ | | | | | | | | |`);
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
    const fact = typeof outcome.metric === 'object' ? outcome.metric : undefined;
    const unit = fact ? '×' : outcome.baseline === 'absolute' ? ` ${WORKLOADS[outcome.workload]?.unit ?? ''}` : '×';
    const what = outcome.metric === 'rss' ? 'peak RSS' : (fact?.label ?? '');
    const against =
      typeof outcome.baseline === 'object'
        ? ` ${nameOf({ workload: outcome.workload, impl: outcome.baseline.row })}`
        : outcome.baseline === 'absolute'
          ? ''
          : ` ${AGAINST[outcome.baseline]}`;
    lines.push(
      `| ${outcome.workload} | ${nameOf(outcome)}${what ? ` ${what}` : ''} ${bound} ${outcome.ratio}${unit}${outcome.metric === 'rss' ? ` ${what} of the` : ''}${against} | ` +
        `${format(outcome.actual)}${unit} | ${outcome.cpu === undefined ? '' : `${outcome.cpu.toFixed(2)}×`} | ` +
        `${outcome.met ? 'yes' : '**no**'} |`,
    );
  }
  lines.push('', '## Checks', '');
  lines.push(
    'Every run checks its own result (all tool calls executed, results in call order, every delta and character ' +
      'arrived, every subagent result delivered) and fails loudly otherwise.',
    '',
  );
  for (const m of input.measurements.filter((x) => x.verified)) {
    const facts = Object.entries(m.verified ?? {})
      .map(([key, value]) => `\`${key}\` ${value}`)
      .join(', ');
    lines.push(`- ${m.workload} ${nameOf(m)}, untimed run: state entries counted with the inspect option: ${facts}`);
  }
  for (const m of input.measurements) {
    const workload = WORKLOADS[m.workload];
    const ideal = workload?.ideal?.(workload.sizes[m.scale]);
    if (ideal) lines.push(`- ${m.workload} ${nameOf(m)}: ${(m.median / ideal).toFixed(2)}× the ideal ${ideal} ms.`);
    for (const note of workload?.notes?.({ impl: m.impl, median: m.median, facts: m.facts ?? {} }) ?? []) {
      lines.push(`- ${m.workload} ${nameOf(m)}: ${note}`);
    }
  }
  const floor = input.measurements.find((m) => m.impl === 'statechart');
  const floorNaive = input.measurements.find((m) => m.workload === floor?.workload && m.impl === 'naive');
  if (floor && floorNaive) {
    lines.push(
      `- ${floor.workload} ${nameOf(floor)}: ${format(floor.median)} ${floor.unit}, ` +
        `${(floor.median / floorNaive.median).toFixed(2)}× the naive XState loop: what XState alone costs to run the ` +
        'turn, step and tool-phase states of one step, with no model, tools, bus or transcript.',
    );
  }
  return `${lines.join('\n')}\n`;
}
