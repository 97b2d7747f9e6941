import { describe, expect, it } from 'vitest';
import { fixture, root, runCli, TOOL_TIMEOUT } from './cli.js';

/** Runs `npm run check:size`'s script over a tree, as `npm run check` does over the repository. */
const checkSize = (tree: string) => runCli('tsx/dist/cli.mjs', [`${root}scripts/check-size.ts`, tree], root);

describe('module size (scripts/check-size.ts)', () => {
  it(
    'reports every module of src/ or machines/ over 400 lines whose opening comment does not say why, and only those',
    async () => {
      const { code, stderr } = await checkSize(fixture('size'));
      expect(code).toBe(1);
      const reported = stderr
        .split('\n')
        .filter((line) => line.startsWith('  '))
        .map((line) => line.trim());
      expect(reported).toEqual([
        'machines/bad-long.mjs: 406 lines',
        'src/bad-long.ts: 401 lines',
        'src/deep/bad-long-without-why.ts: 401 lines',
      ]);
    },
    TOOL_TIMEOUT,
  );

  it(
    'finds nothing in the repository',
    async () => {
      const { code, stderr } = await checkSize(root);
      expect(stderr).toBe('');
      expect(code).toBe(0);
    },
    TOOL_TIMEOUT,
  );
});
