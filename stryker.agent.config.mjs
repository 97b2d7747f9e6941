// `npm run mutate:agent`: the agent chart's part of machines/ (machines/agent/**, machines/goal/**/*.ts) against its pure
// transition suites only (vitest.mutate.agent.config.ts), so that it fits in a quarter of an hour (its score is a
// lower bound: `npm run mutate` also runs the model-based and real-actor suites). With `npm run mutate:supervisor` it
// covers machines/: add the two reports' counts for the score of machines/.
import base from './stryker.config.mjs';

export default {
  ...base,
  mutate: ['machines/agent/**/*.ts', 'machines/goal/**/*.ts'],
  vitest: { ...base.vitest, configFile: 'vitest.mutate.agent.config.ts' },
  jsonReporter: { fileName: 'reports/mutation/agent.json' },
};
