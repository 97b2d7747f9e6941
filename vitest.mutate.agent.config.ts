import config from './vitest.mutate.config.js';

// The suites that pin the agent chart without a runtime (see stryker.agent.config.mjs): the general mutation config
// with a narrower `include`. The model-based and real-actor suites kill more, but each of them runs for minutes per
// mutant; this run's score is a lower bound of the agent chart's.
export default {
  ...config,
  test: {
    ...config.test,
    include: ['test/agent/transitions.test.ts', 'test/agent/compaction-transitions.test.ts', 'test/agent/goal.test.ts'],
  },
};
