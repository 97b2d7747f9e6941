import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRipgrep } from '../../src/tools/builtin/grep.js';
import { missing } from '../helpers/requires.js';
import { ToolDriver, tempDir, writeTree } from './helpers.js';

let ws: string;
let driver: ToolDriver;
let fallback: ToolDriver;
const noRipgrep = missing('rg', 'the grep tests that compare the fallback with ripgrep');

beforeAll(async () => {
  ws = await tempDir();
  await writeTree(ws, {
    '.gitignore': 'dist/\n*.log\n/build\n!keep.log\n',
    'README.md': '# Demo\nTODO: write docs\n',
    'src/index.ts': 'export const answer = 42; // TODO tidy\n',
    'src/util/strings.ts': 'export function shout(s: string) {\n  return s.toUpperCase();\n}\n',
    'src/util/.gitignore': 'generated.ts\n',
    'src/util/generated.ts': 'TODO: ignored by a nested .gitignore\n',
    'src/build/kept.ts': '// an unanchored "build" elsewhere is not ignored: TODO\n',
    'dist/bundle.js': 'TODO: ignored\n',
    'build/out.js': 'TODO: ignored\n',
    'debug.log': 'TODO: ignored\n',
    'keep.log': 'TODO: re-included\n',
    '.env': 'TODO=secret\n',
    '.github/workflows/ci.yml': 'name: ci # TODO\n',
    '.git/HEAD': 'ref: TODO\n',
  });
  await fs.writeFile(path.join(ws, 'image.bin'), Buffer.from([0, 1, 2, 84, 79, 68, 79]));
  await fs.symlink('/etc', path.join(ws, 'etc-link'));
  driver = await ToolDriver.open({ roots: ws, shell: false });
  fallback = await ToolDriver.open({ roots: ws, shell: false, grep: { ripgrep: false } }, 'fallback');
});

afterAll(async () => {
  await driver.close();
  await fallback.close();
  await fs.rm(ws, { recursive: true, force: true });
});

describe('tree and list', () => {
  it('draws the tree to a depth, honouring .gitignore files at every level, never following links', async () => {
    expect(await driver.ok('tree', { depth: 3 })).toBe(
      [
        './',
        '  .env',
        '  .github/',
        '    workflows/',
        '      ci.yml',
        '  .gitignore',
        '  README.md',
        '  etc-link -> /etc',
        '  image.bin',
        '  keep.log',
        '  src/',
        '    build/',
        '      kept.ts',
        '    index.ts',
        '    util/',
        '      .gitignore',
        '      strings.ts',
      ].join('\n'),
    );
    expect(await driver.ok('tree', { path: 'src', depth: 1 })).toBe('src/\n  build/\n  index.ts\n  util/');
  });

  it('lists one folder with sizes', async () => {
    expect(await driver.ok('list', { path: 'src/util' })).toBe('.gitignore  (13 bytes)\nstrings.ts  (63 bytes)');
  });

  it('cuts a long listing and says so', async () => {
    const small = await ToolDriver.open({ roots: ws, shell: false, search: { maxEntries: 2 } }, 'small');
    try {
      expect(await small.ok('list', {})).toBe(
        '.env  (12 bytes)\n.github/\n(cut at 2 entries: narrow the path or the depth)',
      );
    } finally {
      await small.close();
    }
  });

  it('refuses a file where a folder is expected', async () => {
    expect(await driver.refused('tree', { path: 'README.md' })).toBe('README.md is not a folder');
  });
});

describe('glob', () => {
  it('finds files by pattern, ignored ones left out', async () => {
    expect(await driver.ok('glob', { pattern: '**/*.ts' })).toBe(
      'src/build/kept.ts\nsrc/index.ts\nsrc/util/strings.ts',
    );
    expect(await driver.ok('glob', { pattern: '*.ts', path: 'src/util' })).toBe('src/util/strings.ts');
    expect(await driver.ok('glob', { pattern: '**/*.py' })).toBe('No files match **/*.py under ..');
  });
});

describe('grep', () => {
  const expected = [
    '.github/workflows/ci.yml:1:name: ci # TODO',
    'README.md:2:TODO: write docs',
    'keep.log:1:TODO: re-included',
    'src/build/kept.ts:1:// an unanchored "build" elsewhere is not ignored: TODO',
    'src/index.ts:1:export const answer = 42; // TODO tidy',
  ].join('\n');

  it('prints path:line:text sorted by path, skipping ignored, binary and secret files', async () => {
    expect(await fallback.ok('grep', { pattern: 'TODO' })).toBe(expected);
  });

  it.skipIf(noRipgrep)('gives the same output with ripgrep', async () => {
    expect(await findRipgrep()).toBeDefined();
    expect(await driver.ok('grep', { pattern: 'TODO' })).toBe(expected);
  });

  it.skipIf(noRipgrep).each([
    ['a glob', { pattern: 'todo', glob: '*.ts', ignore_case: true }],
    ['a folder', { pattern: 'return', path: 'src' }],
    ['one file', { pattern: '^#', path: 'README.md' }],
    ['no match', { pattern: 'nowhere-to-be-found' }],
  ])('agrees with ripgrep on %s', async (_name, args) => {
    expect(await driver.ok('grep', args)).toBe(await fallback.ok('grep', args));
  });

  it('caps its matches and says so', async () => {
    const capped = await ToolDriver.open(
      { roots: ws, shell: false, grep: { maxMatches: 2, ripgrep: false } },
      'capped',
    );
    try {
      expect(await capped.ok('grep', { pattern: 'TODO' })).toBe(
        '.github/workflows/ci.yml:1:name: ci # TODO\nREADME.md:2:TODO: write docs\n(more than 2 matches: narrow the pattern or the path)',
      );
    } finally {
      await capped.close();
    }
  });

  it('reports a bad pattern as an error the model can fix', async () => {
    expect(await fallback.refused('grep', { pattern: '(' })).toMatch(/^grep: error parsing regexp: missing closing \)/);
  });

  it.skipIf(noRipgrep)('reports a bad pattern from ripgrep the same way', async () => {
    expect(await driver.refused('grep', { pattern: '(' })).toMatch(/^grep: .*unclosed group/);
  });
});
