import { describe, expect, it } from 'vitest';
import { fixture, root, runCli, TOOL_TIMEOUT } from './cli.js';

interface FileIssues {
  file: string;
  [kind: string]: string | { name: string }[];
}

describe('knip (knip.jsonc) against test/check/fixtures/knip', () => {
  it(
    'reports the unused file, export, type and dependency, and the unlisted one',
    async () => {
      const { code, stdout, stderr } = await runCli(
        'knip/bin/knip.js',
        ['--directory', fixture('knip'), '--config', `${root}knip.jsonc`, '--reporter', 'json', '--no-progress'],
        root,
      );
      if (!stdout.startsWith('{')) throw new Error(`knip printed no JSON (exit ${code}): ${stderr}`);
      const { issues } = JSON.parse(stdout) as { issues: FileIssues[] };
      const found = issues
        .flatMap((entry) =>
          Object.entries(entry)
            .filter((pair): pair is [string, { name: string }[]] => Array.isArray(pair[1]))
            .flatMap(([kind, list]) => list.map((issue) => `${entry.file}: ${kind} ${issue.name}`)),
        )
        .sort();

      expect(found).toEqual([
        'package.json: dependencies nanoid', // declared, never imported
        'src/index.ts: unlisted zod', // imported, not declared
        'src/orphan.ts: files src/orphan.ts', // reachable from no entry point
        'src/used.ts: exports neverImported',
        'src/used.ts: types NeverNamed',
      ]);
      expect(code).toBe(1);
    },
    TOOL_TIMEOUT,
  );
});
