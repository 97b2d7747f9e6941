import type { SupervisionStrategy } from '../../src/protocol/index.js';
import { type FaultConfig, faultScenario, type StepOutcome } from '../helpers/strategy-faults.js';

/**
 * A batch of the fault generator for a process that may be killed: its supervision, with backoffs long enough for
 * a kill to land in one (20–59 ms), and each task's outcomes in the order its model calls get them. A killed run
 * interleaves the tasks' calls differently than the generator's steps, so the checks are the strategies'
 * invariants (see strategy-faults.test.ts), not the oracle's one ending.
 */
export function faultBatch(
  seed: number,
  strategy: SupervisionStrategy,
): { config: FaultConfig; outcomes: StepOutcome[][] } {
  const scenario = faultScenario(seed, strategy);
  const config = { ...scenario.config, restartDelayMs: 20 + (seed % 40) };
  const outcomes: StepOutcome[][] = Array.from({ length: config.size }, () => []);
  for (const step of scenario.steps) outcomes[step.task]?.push(step.outcome);
  return { config, outcomes };
}
