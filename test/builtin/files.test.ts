import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorkspaceTools } from '../../src/tools/builtin/index.js';
import { ToolDriver, tempDir, writeTree } from './helpers.js';

let ws: string;

/** Whether this machine lets an unprivileged process mount a tmpfs in namespaces of its own (a full disk). */
function canMountTmpfs(): boolean {
  const probe = spawnSync('unshare', ['-Urm', '/bin/sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /tmp'], {
    stdio: 'ignore',
  });
  return probe.status === 0;
}
let driver: ToolDriver;

beforeEach(async () => {
  ws = await tempDir();
  const lines = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n');
  await writeTree(ws, { 'notes.md': 'alpha\nbeta\ngamma\n', 'long.txt': `${lines}\n`, 'empty.txt': '' });
  driver = await ToolDriver.open({ roots: ws, shell: false, files: { maxReadBytes: 4096, defaultLines: 20 } });
});

afterEach(async () => {
  await driver.close();
  await fs.rm(ws, { recursive: true, force: true });
});

describe('read_file', () => {
  it('numbers lines and reads a range', async () => {
    expect(await driver.ok('read_file', { path: 'notes.md' })).toBe('     1\talpha\n     2\tbeta\n     3\tgamma');
    expect(await driver.ok('read_file', { path: 'long.txt', offset: 10, limit: 2 })).toBe(
      '    10\tline 10\n    11\tline 11\n(lines 10-11 of 50; continue with offset 12)',
    );
    expect(await driver.ok('read_file', { path: 'long.txt', offset: 60 })).toMatch(
      /has 50 lines; offset 60 is past its end/,
    );
    expect(await driver.ok('read_file', { path: 'empty.txt' })).toBe('empty.txt is empty.');
  });

  it('stops at its default line count and says how to go on', async () => {
    const text = await driver.ok('read_file', { path: 'long.txt' });
    expect(text.split('\n')).toHaveLength(21);
    expect(text).toMatch(/\(lines 1-20 of 50; continue with offset 21\)$/);
  });

  it('refuses a file over the size guard unless a range is asked for', async () => {
    await fs.writeFile(path.join(ws, 'big.log'), `${'x'.repeat(99)}\n`.repeat(100));
    expect(await driver.refused('read_file', { path: 'big.log' })).toMatch(
      /big.log is 9.8 KB, over the 4.0 KB read_file reads at once: read a range with offset and limit/,
    );
    expect(await driver.ok('read_file', { path: 'big.log', offset: 100, limit: 1 })).toContain('   100\txxx');
  });

  it('refuses a binary file with a clear message', async () => {
    await fs.writeFile(path.join(ws, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13]));
    expect(await driver.refused('read_file', { path: 'logo.png' })).toBe(
      'logo.png is a binary file (8 B); read_file shows text files only',
    );
  });

  it('refuses folders and missing files', async () => {
    expect(await driver.refused('read_file', { path: '.' })).toMatch(/is a folder: use list or tree/);
    expect(await driver.refused('read_file', { path: 'nope.md' })).toBe('nope.md does not exist');
  });

  it('rejects bad arguments before touching the disk', async () => {
    expect(await driver.refused('read_file', { path: 'notes.md', offset: 0 })).toMatch(
      /Invalid arguments for read_file/,
    );
  });
});

describe('write_file', () => {
  it('creates a file and its folders', async () => {
    expect(await driver.ok('write_file', { path: 'src/new/a.ts', content: 'export {};\n' })).toBe(
      'Created src/new/a.ts (1 lines, 11 B).',
    );
    expect(await fs.readFile(path.join(ws, 'src/new/a.ts'), 'utf8')).toBe('export {};\n');
  });

  it('refuses to overwrite a file the agent has not read', async () => {
    expect(await driver.refused('write_file', { path: 'notes.md', content: 'x' })).toMatch(
      /exists and you have not read it yet/,
    );
    await driver.ok('read_file', { path: 'notes.md' });
    expect(await driver.ok('write_file', { path: 'notes.md', content: 'new\n' })).toMatch(/^Overwrote notes.md/);
    // Its own write counts as seen: it may write again.
    expect(await driver.ok('write_file', { path: 'notes.md', content: 'newer\n' })).toMatch(/^Overwrote/);
  });

  it('refuses a file modified after the agent read it', async () => {
    await driver.ok('read_file', { path: 'notes.md' });
    await fs.writeFile(path.join(ws, 'notes.md'), 'changed by someone else, and longer\n');
    expect(await driver.refused('write_file', { path: 'notes.md', content: 'x' })).toMatch(
      /was modified after you last read it/,
    );
    expect(await fs.readFile(path.join(ws, 'notes.md'), 'utf8')).toMatch(/someone else/);
  });

  it('keeps the old file whole when the disk refuses the new content part way', async () => {
    // The fixture runs under a file-size limit (ulimit -f, in 1 KB blocks for bash): a write past it fails with
    // EFBIG after the first 64 KB reached the disk, exactly as ENOSPC does on a full disk.
    const old = 'old line of text\n'.repeat(2300); // 39,100 bytes
    await fs.writeFile(path.join(ws, 'a.txt'), old);
    await fs.chmod(path.join(ws, 'a.txt'), 0o640);
    const script = path.join(import.meta.dirname, 'fixtures/write-over-limit.ts');
    const run = spawnSync(
      '/bin/bash',
      ['-c', 'ulimit -f 64 && exec "$0" --import tsx "$1" "$2"', process.execPath, script, ws],
      {
        encoding: 'utf8',
      },
    );
    const results = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { ok?: unknown; error?: string });
    expect(results).toHaveLength(4);
    expect(results[0]?.ok).toBeDefined();
    for (const result of results.slice(1, 3)) {
      expect(result.error).toMatch(/^a\.txt could not be written \(EFBIG: .*\); the file is unchanged$/);
    }
    expect(results[3]?.error).toMatch(/^fresh\.txt could not be written \(EFBIG: .*\); no file was created$/);
    expect(await fs.readFile(path.join(ws, 'a.txt'), 'utf8')).toBe(old);
    expect((await fs.stat(path.join(ws, 'a.txt'))).mode & 0o777).toBe(0o640);
    expect((await fs.readdir(ws)).sort()).toEqual(['a.txt', 'empty.txt', 'long.txt', 'notes.md']);
  });

  it.skipIf(!canMountTmpfs())('keeps the old file whole on a full disk (a 64 KB tmpfs: ENOSPC)', async () => {
    // The workspace is a tmpfs mounted in a user and mount namespace of its own; what is left in it is printed
    // before the namespace, and the tmpfs with it, goes away.
    const old = 'old line of text\n'.repeat(2300);
    const script = path.join(import.meta.dirname, 'fixtures/write-over-limit.ts');
    const disk = path.join(ws, 'disk');
    await fs.mkdir(disk);
    const run = spawnSync(
      'unshare',
      [
        '-Urm',
        '/bin/sh',
        '-c',
        'mount -t tmpfs -o size=64k tmpfs "$3" && printf %s "$4" > "$3/a.txt" && "$1" --import tsx "$2" "$3"; ' +
          'echo "--- a.txt"; cat "$3/a.txt"; echo "--- files"; ls -A "$3"',
        'sh',
        process.execPath,
        script,
        disk,
        old,
      ],
      { encoding: 'utf8' },
    );
    const [results = '', rest = ''] = run.stdout.split('--- a.txt\n');
    const [left = '', files = ''] = rest.split('--- files\n');
    const errors = results
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { error?: string }).error);
    expect(errors[0]).toBeUndefined();
    for (const error of errors.slice(1, 3)) {
      expect(error).toMatch(/^a\.txt could not be written \(ENOSPC: the disk is full\); the file is unchanged$/);
    }
    expect(errors[3]).toMatch(/^fresh\.txt could not be written \(ENOSPC: the disk is full\); no file was created$/);
    expect(left).toBe(old);
    expect(files.trim()).toBe('a.txt');
  });

  it('keeps the mode of the file it replaces', async () => {
    await fs.chmod(path.join(ws, 'notes.md'), 0o751);
    await driver.ok('read_file', { path: 'notes.md' });
    await driver.ok('write_file', { path: 'notes.md', content: 'new\n' });
    expect((await fs.stat(path.join(ws, 'notes.md'))).mode & 0o777).toBe(0o751);
    await driver.ok('edit', { path: 'notes.md', old_string: 'new', new_string: 'newer' });
    expect((await fs.stat(path.join(ws, 'notes.md'))).mode & 0o777).toBe(0o751);
    expect((await fs.readdir(ws)).sort()).toEqual(['empty.txt', 'long.txt', 'notes.md']);
  });

  it('refuses a trailing slash on a file: it names a folder', async () => {
    expect(await driver.refused('read_file', { path: 'notes.md/' })).toBe(
      'notes.md/ is not a folder (a path ending in / names a folder)',
    );
    expect(await driver.refused('read_file', { path: 'notes.md/.' })).toMatch(/is not a folder/);
    expect(await driver.refused('write_file', { path: 'brand-new.md/', content: 'x' })).toMatch(/is not a folder/);
    expect(await driver.ok('list', { path: './' })).toContain('notes.md');
  });

  it('keeps what each agent has read apart', async () => {
    const tools = await createWorkspaceTools({ roots: ws, shell: false });
    const first = new ToolDriver(tools, 'first');
    const second = new ToolDriver(tools, 'second');
    try {
      await first.ok('read_file', { path: 'notes.md' });
      expect(await second.refused('write_file', { path: 'notes.md', content: 'x' })).toMatch(/not read it yet/);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('edit', () => {
  it('replaces text that matches once and reports the changed lines', async () => {
    await driver.ok('read_file', { path: 'notes.md' });
    const report = await driver.ok('edit', { path: 'notes.md', old_string: 'beta', new_string: 'BETA\nbeta two' });
    expect(report).toBe('Edited notes.md: 1 replacement (lines 2-3).\n     2\tBETA\n     3\tbeta two');
    expect(await fs.readFile(path.join(ws, 'notes.md'), 'utf8')).toBe('alpha\nBETA\nbeta two\ngamma\n');
  });

  it('refuses an ambiguous match unless replace_all is set', async () => {
    await fs.writeFile(path.join(ws, 'dup.txt'), 'x = 1\ny = 2\nx = 1\n');
    await driver.ok('read_file', { path: 'dup.txt' });
    expect(await driver.refused('edit', { path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 3' })).toBe(
      'old_string matches 2 times in dup.txt (lines 1, 3): add surrounding text to make it unique, or pass replace_all',
    );
    const report = await driver.ok('edit', {
      path: 'dup.txt',
      old_string: 'x = 1',
      new_string: 'x = 3',
      replace_all: true,
    });
    expect(report).toBe('Edited dup.txt: 2 replacements (lines 1, 3).\n     1\tx = 3\n     3\tx = 3');
  });

  it('keeps line numbers right when replacements change the line count', async () => {
    await fs.writeFile(path.join(ws, 'multi.txt'), 'a\nTODO\nb\nTODO\nc\n');
    await driver.ok('read_file', { path: 'multi.txt' });
    const report = await driver.ok('edit', {
      path: 'multi.txt',
      old_string: 'TODO\n',
      new_string: 'done\nchecked\n',
      replace_all: true,
    });
    expect(report).toMatch(/^Edited multi.txt: 2 replacements \(lines 2-3, 5-6\)/);
    expect(report).toContain('     5\tdone\n     6\tchecked');
  });

  it('says what is wrong when nothing matches, the file is missing, or nothing would change', async () => {
    await driver.ok('read_file', { path: 'notes.md' });
    expect(await driver.refused('edit', { path: 'notes.md', old_string: 'delta', new_string: 'x' })).toMatch(
      /old_string was not found in notes.md/,
    );
    expect(await driver.refused('edit', { path: 'gone.md', old_string: 'a', new_string: 'b' })).toBe(
      'gone.md does not exist',
    );
    expect(await driver.refused('edit', { path: 'notes.md', old_string: 'beta', new_string: 'beta' })).toMatch(
      /the same/,
    );
  });

  it('refuses a file changed since it was read, and one never read', async () => {
    expect(await driver.refused('edit', { path: 'notes.md', old_string: 'beta', new_string: 'b' })).toMatch(
      /not read it yet/,
    );
    await driver.ok('read_file', { path: 'notes.md' });
    await fs.writeFile(path.join(ws, 'notes.md'), 'alpha\nbeta\ngamma\ndelta\n');
    expect(await driver.refused('edit', { path: 'notes.md', old_string: 'beta', new_string: 'b' })).toMatch(
      /modified after you last read it/,
    );
  });

  it('lets a read-only set leave out every tool that changes something', async () => {
    const tools = await createWorkspaceTools({ roots: ws, readOnly: true });
    expect(tools.tools.map((t) => t.name)).toEqual(['list', 'tree', 'glob', 'grep', 'read_file']);
    expect(tools.tools.every((t) => t.readOnly === true && 'path' in (t.ruleArgument ?? {}))).toBe(true);
  });
});
