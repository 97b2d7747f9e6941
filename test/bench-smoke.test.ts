import { describe, expect, it } from 'vitest';
import { measure } from '../bench/measure.js';
import { renderMarkdown, targetOutcomes } from '../bench/report.js';
import { W1 } from '../bench/workloads/w1.js';
import { implsOf, WORKLOADS } from '../bench/workloads.js';

// Not timed: only that the benchmark code runs with tiny sizes and that every workload's own checks pass.
// (Vitest loads XState's development build; `npm run bench` runs each workload in plain node on the production one.)
describe('bench smoke run', () => {
  const ready = Object.values(WORKLOADS).filter((workload) => !workload.pending);

  for (const workload of ready) {
    it(`${workload.id} runs every implementation and its checks pass`, async () => {
      const measurements = [];
      for (const impl of implsOf(workload)) {
        const m = await measure(workload, impl, 'smoke', { warmup: 0, runs: 1 });
        expect(m.figures).toHaveLength(1);
        expect(Number.isFinite(m.median)).toBe(true);
        measurements.push(m);
      }
      const outcomes = targetOutcomes(measurements);
      expect(outcomes).toHaveLength(workload.targets.length);
      expect(renderMarkdown({ date: '', node: '', cpus: '', scale: 'smoke', measurements })).toContain(workload.id);
    });
  }

  it('W1 verification counts every tool phase of every step', async () => {
    const m = await measure(W1, 'troupe', 'smoke', { warmup: 0, runs: 1 });
    const steps = W1.sizes.smoke.steps;
    expect(m.verified?.['running.turn.step.tools.finalizing']).toBe(steps);
    expect(m.verified?.['running.turn.step.model']).toBe(steps + 1);
    expect(m.verified?.['running.turn.step.tools.executing']).toBe(steps);
    // Nothing can refuse a call: the answer goes from `model` straight to `executing`.
    expect(m.verified?.['running.turn.step.tools.validating']).toBe(0);
    expect(m.verified?.['running.turn.step.tools.authorizing']).toBe(0);
  });
});
