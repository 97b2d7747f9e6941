import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/check/fixtures holds deliberately broken trees that the check tests feed to the tools, never tests.
    exclude: [...configDefaults.exclude, 'test/check/fixtures/**'],
    testTimeout: 20_000,
    // `expect.poll` waits for something another process or a page does. Its 1 s default is a timing assumption that
    // a loaded machine breaks (a page that has not re-rendered yet); a state that never comes still fails the test.
    expect: { poll: { timeout: 10_000 } },
    // Every test process dies of any unhandled rejection (issue 11: no promise the runtime starts may reject
    // unhandled), so the whole suite proves it, not only the odd-throw cases.
    execArgv: ['--unhandled-rejections=strict'],
    // `npm test` runs `vitest run --coverage`, so CI prints this table and fails under the thresholds;
    // `npx vitest run <file>` (no --coverage) stays quick while working on one suite.
    coverage: {
      provider: 'v8',
      // Only the library is measured: examples, bench, test helpers and fixtures are programs that use it.
      // Files no test loads still count (as 0 %), because they are matched by `include`.
      include: ['src/**/*.ts', 'machines/**/*.ts'],
      // Type-only modules compile to nothing and have no lines to cover; v8 reports them as empty, which
      // neither helps nor hurts, so nothing is excluded by name here (see CONTRIBUTING.md, "Coverage").
      reporter: [['text', { skipFull: true }], 'text-summary', 'html', 'json-summary'],
      // Print the numbers even when a test failed: CI's log is where they are read.
      reportOnFailure: true,
      thresholds: {
        'src/**/*.ts': { lines: 85, branches: 85 },
        'machines/**/*.ts': { lines: 85, branches: 85 },
      },
    },
  },
});
