import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

// The suites that pin the supervision machines without a runtime (see stryker.supervisor.config.mjs).
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
  include: ['test/supervisor/machine.test.ts', 'test/supervisor/join.test.ts', 'test/model-based/supervisor.test.ts'],
};

export default config;
