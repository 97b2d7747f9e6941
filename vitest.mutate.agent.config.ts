import config from './vitest.mutate.config.js';

// The suites that pin the agent chart without a runtime (see stryker.agent.config.mjs): the general mutation config
// with a narrower `include`: every pure transition suite of the agent chart (test/agent/*transitions, and the hook
// and budget ones of test/control) and the goal chart's. The model-based and real-actor suites kill more, but each
// of them runs for minutes per mutant; this run's score is a lower bound of the agent chart's.
export default {
  ...config,
  test: {
    ...config.test,
    include: [
      'test/agent/*transitions.test.ts',
      'test/agent/goal.test.ts',
      'test/control/budget-transitions.test.ts',
      'test/control/hook-transitions.test.ts',
    ],
  },
};
