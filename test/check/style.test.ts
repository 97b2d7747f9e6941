import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, root, runCli, TOOL_TIMEOUT } from './cli.js';

interface Diagnostic {
  category: string;
  severity: string;
  location: { path: string };
}

// biome.json excludes test/check/fixtures from the real check, so the fixtures are copied out of the repo and
// checked there with the real biome.json (`--config-path`): the same rules `npm run check` applies to src/.
let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'troupe-biome-'));
  await cp(fixture('biome'), dir, { recursive: true, filter: (source) => !source.endsWith('.md') });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const biome = (args: string[]) =>
  runCli('@biomejs/biome/bin/biome', ['ci', '--config-path', `${root}biome.json`, '--colors=off', ...args, '.'], dir);

describe('Biome (biome.json) against test/check/fixtures/biome', () => {
  it(
    'rejects unformatted code, `any` without a reason, non-null assertions, unsorted and unused code',
    async () => {
      // The json reporter is marked experimental; the Biome version is pinned, and this test notices a change.
      const { code, stdout } = await biome(['--reporter=json']);
      const json = stdout.slice(stdout.indexOf('{'));
      const { diagnostics } = JSON.parse(json) as { diagnostics: Diagnostic[] };
      const found = diagnostics.map((d) => `${d.location.path}: ${d.category} (${d.severity})`).sort();

      expect(found).toEqual(
        [
          'unformatted.ts: format (error)',
          'explicit-any.ts: lint/suspicious/noExplicitAny (error)',
          // a biome-ignore without a reason is itself an error, and does not suppress
          'any-without-reason.ts: suppressions/parse (error)',
          'any-without-reason.ts: lint/suspicious/noExplicitAny (error)',
          'non-null-assertion.ts: lint/style/noNonNullAssertion (error)',
          'unsorted-imports.ts: assist/source/organizeImports (error)',
          'unused-variable.ts: lint/correctness/noUnusedVariables (error)',
        ].sort(),
      );
      // any-with-reason.ts is the allowed form and is not reported.
      expect(found.some((f) => f.startsWith('any-with-reason.ts'))).toBe(false);
      expect(code).not.toBe(0);
    },
    TOOL_TIMEOUT,
  );

  it(
    'accepts `any` with a biome-ignore comment that says why',
    async () => {
      const { code, stderr, stdout } = await runCli(
        '@biomejs/biome/bin/biome',
        ['ci', '--config-path', `${root}biome.json`, '--colors=off', 'any-with-reason.ts'],
        dir,
      );
      expect({ code, output: stdout + stderr }).toMatchObject({ code: 0 });
    },
    TOOL_TIMEOUT,
  );
});
