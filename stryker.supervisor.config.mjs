// `npm run mutate:supervisor`: the supervision machines only, against the suites that pin them in isolation (pure
// transitions, joins and the model-based batch paths), so that it fits in a few minutes. `npm run mutate` is the
// whole of machines/ against the agent, supervisor and model-based suites.
import base from './stryker.config.mjs';

export default {
  ...base,
  mutate: ['machines/supervisor/**/*.ts'],
  vitest: { ...base.vitest, configFile: 'vitest.mutate.supervisor.config.ts' },
  jsonReporter: { fileName: 'reports/mutation/supervisor.json' },
};
