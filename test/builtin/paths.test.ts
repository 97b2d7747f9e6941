/**
 * The hostile-path suite: every way a model (or a file it was shown) could steer a built-in tool outside the
 * workspace or onto a secret. Each case goes through a real agent, so the refusal is what the model would read.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workspace } from '../../src/tools/builtin/index.js';
import { ToolDriver, tempDir, writeTree } from './helpers.js';

let base: string;
let ws: string;
let outside: string;
let driver: ToolDriver;

async function outsideListing(): Promise<string[]> {
  return (await fs.readdir(outside)).sort();
}

beforeAll(async () => {
  base = await tempDir('troupe-hostile-');
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await writeTree(base, {
    'ws/docs/readme.md': 'hello\n',
    'ws/.env': 'OPENAI_API_KEY=sk-secret\n',
    'ws/.env.example': 'OPENAI_API_KEY=\n',
    'ws/keys/id_rsa': '-----BEGIN OPENSSH PRIVATE KEY-----\n',
    'ws/keys/server.pem': 'pem\n',
    'outside/secret.txt': 'outside secret\n',
    'ws-evil/x.txt': 'sibling with the root as a prefix\n',
  });
  await fs.symlink('/', path.join(ws, 'to-root'));
  await fs.symlink('../outside', path.join(ws, 'to-outside'));
  await fs.symlink('/etc/passwd', path.join(ws, 'passwd'));
  await fs.symlink('../outside/new.txt', path.join(ws, 'dangling'));
  await fs.symlink('../outside/nowhere', path.join(ws, 'dangling-dir'));
  await fs.symlink('loop-b', path.join(ws, 'loop-a'));
  await fs.symlink('loop-a', path.join(ws, 'loop-b'));
  await fs.symlink('docs/readme.md', path.join(ws, 'inner-link'));
  await fs.symlink('../ws-evil', path.join(ws, 'prefix'));
  await fs.symlink('/dev/zero', path.join(ws, 'zero'));
  await fs.symlink('.env', path.join(ws, 'innocent.txt'));
  execFileSync('/usr/bin/mkfifo', [path.join(ws, 'pipe')]);
  await fs.symlink(ws, path.join(base, 'link-root'));
  driver = await ToolDriver.open({ roots: ws, shell: false });
});

afterAll(async () => {
  await driver.close();
  await fs.rm(base, { recursive: true, force: true });
});

describe('paths that leave the workspace are refused', () => {
  const escapes: Array<[string, string, RegExp]> = [
    ['parent traversal', '../outside/secret.txt', /outside the workspace/],
    ['deep traversal', 'docs/../../outside/secret.txt', /outside the workspace/],
    ['many parents', '../../../../../../etc/passwd', /outside the workspace/],
    ['an absolute path', '/etc/passwd', /outside the workspace/],
    ['a device by absolute path', '/dev/zero', /outside the workspace/],
    ['a link to / inside the workspace', 'to-root/etc/passwd', /symbolic link to \/etc\/passwd, outside/],
    ['a link to a folder outside', 'to-outside/secret.txt', /symbolic link to .*outside\/secret.txt, outside/],
    ['a link as the last component', 'passwd', /symbolic link to \/etc\/passwd, outside/],
    ['a link to a device', 'zero', /symbolic link to \/dev\/zero, outside/],
    ['a sibling whose name starts with the root', 'prefix/x.txt', /outside the workspace/],
  ];
  it.each(escapes)('read_file: %s', async (_name, input, message) => {
    expect(await driver.refused('read_file', { path: input })).toMatch(message);
  });

  it('refuses the sibling folder by absolute path too (a prefix test would let it through)', async () => {
    expect(await driver.refused('read_file', { path: path.join(base, 'ws-evil/x.txt') })).toMatch(
      /outside the workspace/,
    );
  });

  it.each(escapes)('write_file: %s', async (_name, input, message) => {
    const before = await outsideListing();
    expect(await driver.refused('write_file', { path: input, content: 'pwned' })).toMatch(message);
    expect(await outsideListing()).toEqual(before);
  });

  it('refuses to write through a dangling link, which would create the file where it points', async () => {
    expect(await driver.refused('write_file', { path: 'dangling', content: 'pwned' })).toMatch(/dangling/);
    expect(await driver.refused('write_file', { path: 'dangling-dir/x.txt', content: 'pwned' })).toMatch(/dangling/);
    expect(await outsideListing()).toEqual(['secret.txt']);
  });

  it('refuses a new file in a folder reached through a link outside (the deepest existing ancestor is checked)', async () => {
    expect(await driver.refused('write_file', { path: 'to-outside/new/deep.txt', content: 'x' })).toMatch(/outside/);
    expect(await outsideListing()).toEqual(['secret.txt']);
  });

  it('names a loop of links instead of hanging or crashing', async () => {
    expect(await driver.refused('read_file', { path: 'loop-a' })).toMatch(/loop of symbolic links/);
    expect(await driver.refused('write_file', { path: 'loop-a/x', content: 'x' })).toMatch(/loop of symbolic links/);
  });

  it('refuses a named pipe instead of blocking on it', async () => {
    expect(await driver.refused('read_file', { path: 'pipe' })).toMatch(/not a regular file/);
  });

  it('refuses names the file system would reject, with a sentence', async () => {
    expect(await driver.refused('read_file', { path: 'a'.repeat(300) })).toMatch(/at most 255 bytes/);
    expect(await driver.refused('read_file', { path: 'a/'.repeat(2100) })).toMatch(/at most 4096 characters/);
    expect(await driver.refused('read_file', { path: 'docs/readme.md\0.txt' })).toMatch(/NUL/);
  });

  it('takes encoded and home-relative names literally: they stay inside the workspace', async () => {
    expect(await driver.refused('read_file', { path: '%2e%2e/outside/secret.txt' })).toMatch(/does not exist/);
    expect(await driver.refused('read_file', { path: '..%2foutside%2fsecret.txt' })).toMatch(/does not exist/);
    expect(await driver.refused('read_file', { path: '~/../outside/secret.txt' })).toMatch(/does not exist/);
    expect(await driver.refused('read_file', { path: 'file:///etc/passwd' })).toMatch(/does not exist/);
  });
});

describe('paths inside the workspace work', () => {
  it('reads through a link that stays inside, and by absolute path', async () => {
    expect(await driver.ok('read_file', { path: 'inner-link' })).toContain('hello');
    expect(await driver.ok('read_file', { path: path.join(ws, 'docs/readme.md') })).toContain('hello');
    expect(await driver.ok('read_file', { path: './docs/../docs/readme.md' })).toContain('hello');
  });

  it('works when the root itself is a link, by either name', async () => {
    const linked = await ToolDriver.open({ roots: path.join(base, 'link-root'), shell: false }, 'linked');
    try {
      expect(await linked.ok('read_file', { path: 'docs/readme.md' })).toContain('hello');
      expect(await linked.ok('read_file', { path: path.join(base, 'link-root/docs/readme.md') })).toContain('hello');
      expect(await linked.refused('read_file', { path: '../outside/secret.txt' })).toMatch(/outside the workspace/);
      expect(await linked.ok('write_file', { path: 'made/new.txt', content: 'x' })).toMatch(/Created made\/new.txt/);
      expect(await fs.readFile(path.join(ws, 'made/new.txt'), 'utf8')).toBe('x');
    } finally {
      await linked.close();
    }
  });

  it('resolves relative paths against the first root and takes absolute paths in any root', async () => {
    const multi = await ToolDriver.open({ roots: [ws, outside], shell: false }, 'multi');
    try {
      expect(await multi.ok('read_file', { path: path.join(outside, 'secret.txt') })).toContain('outside secret');
      expect(await multi.ok('read_file', { path: 'to-outside/secret.txt' })).toContain('outside secret');
      expect(await multi.refused('read_file', { path: 'secret.txt' })).toMatch(/does not exist/);
    } finally {
      await multi.close();
    }
  });
});

describe('sensitive files', () => {
  it.each([
    ['.env', /environment file/],
    ['keys/id_rsa', /private key/],
    ['keys/server.pem', /private key/],
    ['innocent.txt', /environment file/],
  ])('refuses %s unless allowed', async (input, reason) => {
    expect(await driver.refused('read_file', { path: input })).toMatch(reason);
    expect(await driver.refused('write_file', { path: input, content: 'x' })).toMatch(reason);
  });

  it('reads templates that hold no values', async () => {
    expect(await driver.ok('read_file', { path: '.env.example' })).toContain('OPENAI_API_KEY=');
  });

  it('hides secrets from grep, which would otherwise print them', async () => {
    const found = await driver.ok('grep', { pattern: 'OPENAI_API_KEY' });
    expect(found).toBe('.env.example:1:OPENAI_API_KEY=');
  });

  it('opens a sensitive file a rule allows', async () => {
    const allowed = await ToolDriver.open({ roots: ws, shell: false, allowSensitive: ['.env'] }, 'allowed');
    try {
      expect(await allowed.ok('read_file', { path: '.env' })).toContain('sk-secret');
      expect(await allowed.refused('read_file', { path: 'keys/id_rsa' })).toMatch(/private key/);
    } finally {
      await allowed.close();
    }
  });
});

describe('Workspace.open', () => {
  it('refuses a root that does not exist or is a file', async () => {
    await expect(Workspace.open({ roots: path.join(base, 'missing') })).rejects.toThrow(/Workspace folder not found/);
    await expect(Workspace.open({ roots: path.join(ws, 'docs/readme.md') })).rejects.toThrow(/not a folder/);
    await expect(Workspace.open({ roots: [] })).rejects.toThrow(/at least one root/);
  });
});
