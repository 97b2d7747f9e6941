/**
 * `npm run build` in a checkout: the bin it writes runs by its path, as it does once npm has installed the
 * package. Built into a temporary folder laid out like the checkout (its package.json, its node_modules), so the
 * checkout's own dist/ is left alone.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../cli/helpers.js';

const run = promisify(execFile);
const { bin } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const checkout = mkdtempSync(join(tmpdir(), 'troupe-build-'));

afterAll(() => rmSync(checkout, { recursive: true, force: true }));

describe('npm run build', () => {
  it('writes every bin executable, so it runs by its path', async () => {
    copyFileSync(join(REPO, 'package.json'), join(checkout, 'package.json'));
    symlinkSync(join(REPO, 'node_modules'), join(checkout, 'node_modules'));
    await run(process.execPath, ['--import', 'tsx', join(REPO, 'scripts/build.ts'), join(checkout, 'dist')], {
      cwd: REPO,
    });
    expect(Object.keys(bin)).toEqual(['troupe']);
    for (const file of Object.values(bin)) {
      const path = join(checkout, file);
      expect((statSync(path).mode & 0o777).toString(8)).toBe('755');
      // Run with no node in front: the kernel needs the mode and the #! line, as a shell in a clone does.
      const { stdout } = await run(path, ['--help'], { cwd: checkout });
      expect(stdout).toMatch(/^Usage: troupe <command>/);
    }
  }, 300_000);
});
