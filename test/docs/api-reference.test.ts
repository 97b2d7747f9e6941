/**
 * The API reference (docs/api/, written by `npm run docs:api`) covers every public entry, and the TypeDoc settings
 * CI builds it with refuse a public export without a doc comment and a doc comment that would leave a dead link.
 * The fixture's typedoc.json extends the real one, so these are the settings `npm run docs:build` uses.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixture, root, runCli, TOOL_TIMEOUT } from '../check/cli.js';

const json = (file: string): unknown => JSON.parse(readFileSync(`${root}${file}`, 'utf8'));

/** Runs TypeDoc with the fixture's config on one entry, writing nothing (runCli sets NO_COLOR: plain output). */
async function typedoc(entry: string): Promise<{ code: number; output: string }> {
  const { code, stdout, stderr } = await runCli(
    'typedoc/bin/typedoc',
    ['--options', 'typedoc.json', '--entryPoints', entry, '--emit', 'none'],
    fixture('typedoc'),
  );
  return { code, output: `${stdout}${stderr}` };
}

describe('the API reference', () => {
  it('documents exactly the entries package.json exports', () => {
    const { exports } = json('package.json') as { exports: Record<string, { types: string }> };
    const sources = Object.values(exports).map(({ types }) =>
      types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'),
    );
    const { entryPoints } = json('typedoc.json') as { entryPoints: string[] };
    // troupe/restate loads its modules once it has found the Restate SDK (an optional peer): its exports are the
    // loaded module's, documented where they are defined.
    const documented = sources.map((source) => (source === 'src/restate/index.ts' ? 'src/restate/api.ts' : source));
    expect([...entryPoints].sort()).toEqual(documented.sort());
  });

  it(
    'fails on a public export without a doc comment, naming each one',
    async () => {
      const { code, output } = await typedoc('undocumented.ts');
      const undocumented = [...output.matchAll(/(\S+) \((\w+)\), defined in .* does not have any documentation/g)];
      expect(undocumented.map(([, name, kind]) => `${name} (${kind})`).sort()).toEqual([
        'Undocumented (Interface)',
        'undocumentedFunction (CallSignature)',
      ]);
      expect(code).not.toBe(0);
    },
    TOOL_TIMEOUT,
  );

  it(
    'fails on a doc comment that links to a name the entry does not export',
    async () => {
      const { code, output } = await typedoc('dead-link.ts');
      expect(output).toContain('The comment for documented links to "hidden"');
      expect(code).not.toBe(0);
    },
    TOOL_TIMEOUT,
  );

  it(
    'passes an entry whose exports are documented and link only to what it exports',
    async () => {
      const { code, output } = await typedoc('documented.ts');
      expect(output).not.toContain('[warning]');
      expect(code).toBe(0);
    },
    TOOL_TIMEOUT,
  );

  it(
    'asks a statechart for its own doc comment only, not for the members of the config XState infers',
    async () => {
      const { code, output } = await typedoc('machine.ts');
      expect(output).not.toContain('[warning]');
      expect(code).toBe(0);
    },
    TOOL_TIMEOUT,
  );
});
