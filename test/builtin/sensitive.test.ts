/**
 * Files that hold secrets are refused to every built-in tool unless allowed, whatever their spelling: every name
 * that starts with `.env`, and the common credential files.
 */
import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolDriver, tempDir, writeTree } from './helpers.js';

const MARK = 'planted-credential-3f9a1c';
const SECRET_FILES: Array<[string, RegExp]> = [
  ['.envrc', /environment file/],
  ['.env-prod', /environment file/],
  ['.env_local', /environment file/],
  ['.ENV.production', /environment file/],
  ['.pgpass', /credentials file/],
  ['infra/prod.tfvars', /credentials file/],
  ['infra/prod.auto.tfvars.json', /credentials file/],
  ['infra/terraform.tfstate', /credentials file/],
  ['gcp-credentials.json', /credentials file/],
  ['service_credentials_prod.json', /credentials file/],
  ['.netrc', /credentials file/],
  ['.git-credentials', /credentials file/],
];

let dir: string;
let driver: ToolDriver;

beforeAll(async () => {
  dir = await tempDir('troupe-sensitive-');
  await writeTree(dir, {
    ...Object.fromEntries(SECRET_FILES.map(([name]) => [name, `secret=${MARK}\n`])),
    '.env.example': 'secret=\n',
    'notes.md': 'no secrets here\n',
  });
  driver = await ToolDriver.open({ roots: dir, shell: false });
});

afterAll(async () => {
  await driver.close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe('secret files', () => {
  it.each(SECRET_FILES)('refuses %s to read_file and write_file', async (name, reason) => {
    expect(await driver.refused('read_file', { path: name })).toMatch(reason);
    expect(await driver.refused('write_file', { path: name, content: 'x' })).toMatch(reason);
  });

  it('leaves their contents out of grep', async () => {
    expect(await driver.ok('grep', { pattern: 'secret=' })).toBe('.env.example:1:secret=');
  });

  it('reads templates and ordinary files', async () => {
    expect(await driver.ok('read_file', { path: '.env.example' })).toContain('secret=');
    expect(await driver.ok('read_file', { path: 'notes.md' })).toContain('no secrets');
  });

  it('opens what allowSensitive names', async () => {
    const allowed = await ToolDriver.open(
      { roots: dir, shell: false, allowSensitive: ['.envrc', 'infra/*.tfvars'] },
      'allowed',
    );
    try {
      expect(await allowed.ok('read_file', { path: '.envrc' })).toContain(MARK);
      expect(await allowed.ok('read_file', { path: 'infra/prod.tfvars' })).toContain(MARK);
      expect(await allowed.refused('read_file', { path: '.pgpass' })).toMatch(/credentials file/);
    } finally {
      await allowed.close();
    }
  });
});
