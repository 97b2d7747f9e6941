import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/index.js';
import { resultText } from '../agent/helpers.js';
import { ToolDriver, tempDir, writeTree } from './helpers.js';

// A path deny rule is about files, not names: every way of reaching private/ inside the workspace is the same.
let ws: string;
let driver: ToolDriver;
const SECRET = 'classified: 1234';

beforeAll(async () => {
  ws = await tempDir();
  await writeTree(ws, {
    'private/secret.txt': `${SECRET}\n`,
    'private/deep/more.txt': `${SECRET} (deeper)\n`,
    'public/note.txt': 'classified: nothing\n',
  });
  await fs.symlink('private', path.join(ws, 'pub'));
  await fs.symlink('pub', path.join(ws, 'chain'));
  await fs.symlink('private/secret.txt', path.join(ws, 'alias.txt'));
  await fs.mkdir(path.join(ws, 'docs'));
  await fs.symlink('../private', path.join(ws, 'docs/inner'));
  const rules = ['read_file', 'grep', 'glob', 'list', 'tree'].map((tool) => `${tool}(private/**)`);
  driver = await ToolDriver.open({ roots: ws, shell: false, grep: { ripgrep: false } }, 'denied', {
    cwd: ws,
    deny: rules,
  });
});

afterAll(async () => {
  await driver.close();
  await fs.rm(ws, { recursive: true, force: true });
});

const ways: Array<[string, JsonObject]> = [
  ['read_file', { path: 'private/secret.txt' }],
  ['read_file', { path: 'pub/secret.txt' }],
  ['read_file', { path: './pub/secret.txt' }],
  ['read_file', { path: 'pub//secret.txt' }],
  ['read_file', { path: 'public/../pub/secret.txt' }],
  ['read_file', { path: 'pub/deep/../secret.txt' }],
  ['read_file', { path: 'chain/secret.txt' }],
  ['read_file', { path: 'chain/deep/more.txt' }],
  ['read_file', { path: 'alias.txt' }],
  ['read_file', { path: 'docs/inner/secret.txt' }],
  ['read_file', { path: '<ws>/pub/secret.txt' }],
  ['read_file', { path: '<ws>/docs/inner/deep/more.txt' }],
  ['grep', { pattern: 'classified' }],
  ['grep', { pattern: 'classified', path: '.' }],
  ['grep', { pattern: 'classified', path: 'pub' }],
  ['grep', { pattern: 'classified', path: 'chain' }],
  ['grep', { pattern: 'classified', path: 'docs' }],
  ['grep', { pattern: 'classified', path: 'docs/inner' }],
  ['grep', { pattern: 'classified', path: 'alias.txt' }],
  ['grep', { pattern: 'classified', path: 'pub/secret.txt' }],
  ['grep', { pattern: 'classified', glob: '*.txt' }],
  ['grep', { pattern: 'classified', path: '<ws>' }],
  ['glob', { pattern: '**/*.txt' }],
  ['glob', { pattern: '**' }],
  ['glob', { pattern: '**', path: 'pub' }],
  ['glob', { pattern: '*.txt', path: 'docs/inner' }],
  ['list', { path: 'pub' }],
  ['list', { path: 'chain' }],
  ['list', { path: 'private/deep' }],
  ['tree', {}],
  ['tree', { path: 'pub' }],
  ['tree', { path: 'docs/inner' }],
];

describe('a path deny rule holds whatever name leads to the denied files', () => {
  it.each(ways)('%s %o shows nothing of private/', async (tool, given) => {
    const args = JSON.parse(JSON.stringify(given).replaceAll('<ws>', ws)) as JsonObject;
    const part = await driver.call(tool, args);
    const text = resultText(part);
    expect(text).not.toContain('1234');
    expect(text).not.toMatch(/secret\.txt|more\.txt|deep/);
  });

  it(`counts: 0 of ${ways.length} ways leak, and the public files are still found`, async () => {
    let leaks = 0;
    for (const [tool, given] of ways) {
      const args = JSON.parse(JSON.stringify(given).replaceAll('<ws>', ws)) as JsonObject;
      if (/1234|secret\.txt|more\.txt/.test(resultText(await driver.call(tool, args)))) leaks++;
    }
    expect(leaks).toBe(0);
    expect(await driver.ok('grep', { pattern: 'classified' })).toBe('public/note.txt:1:classified: nothing');
    expect(await driver.ok('glob', { pattern: '**/*.txt' })).toBe('public/note.txt');
    expect(await driver.ok('read_file', { path: 'public/note.txt' })).toContain('classified: nothing');
  });
});
