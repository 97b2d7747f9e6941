import config from './vitest.mutate.config.js';

// The suites that pin the supervision machines without a runtime (see stryker.supervisor.config.mjs): the general
// mutation config with a narrower `include`.
export default {
  ...config,
  test: {
    ...config.test,
    include: [
      'test/supervisor/machine.test.ts',
      'test/supervisor/join.test.ts',
      'test/model-based/supervisor.test.ts',
      'test/model-based/pool.test.ts',
      'test/supervisor/strategies.test.ts',
      'test/model-based/strategies.test.ts',
    ],
  },
};
