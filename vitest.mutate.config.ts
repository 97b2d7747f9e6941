import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

// The suites that pin the machines' behaviour, for `npm run mutate` (Stryker runs them for every mutant): the pure
// transition tests, the model-based paths, and the agents and trees driven through the real actors.
// mergeConfig concatenates arrays: `include` given there would be added to the base's `test/**`, so it is set after.
const config = mergeConfig(
  base,
  defineConfig({
    test: {
      coverage: { enabled: false },
    },
  }),
);
config.test = {
  ...config.test,
  include: ['test/agent/**/*.test.ts', 'test/supervisor/**/*.test.ts', 'test/model-based/**/*.test.ts'],
};

export default config;
