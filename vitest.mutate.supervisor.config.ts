import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

// The suites that pin the supervision machines without a runtime (see stryker.supervisor.config.mjs).
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        'test/supervisor/machine.test.ts',
        'test/supervisor/join.test.ts',
        'test/model-based/supervisor.test.ts',
      ],
      coverage: { enabled: false },
    },
  }),
);
