// Mutation testing of the pure machines (`npm run mutate`; not in CI: a full run takes most of an hour here).
// The score that matters is machines/'s, over the guards, actions and planning functions: mutants of the static
// chart definition (`createMachine({...})`'s literal) are excluded by `ignoreStatic`, and Stryker's own
// `// Stryker disable` comments mark any literal that only names states.
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  dryRunTimeoutMinutes: 20,
  mutate: ['machines/**/*.ts'],
  ignoreStatic: true,
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
