import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PermissionMode } from '../../src/index.js';
import { PERMISSION_MODES } from '../../src/permissions/types.js';
import { resultText } from '../agent/helpers.js';
import { ToolDriver, tempDir } from '../builtin/helpers.js';

// Through a real agent and the real bash tool: a refused line never reaches a shell, so victim/ stays.
const spellings = [
  'time -p rm -rf victim',
  "trap 'rm -rf victim' EXIT",
  'cd victim && find . -delete',
  'rm -r victim',
  'nice -n 5 timeout 10 rm -rf victim',
  'echo victim | xargs -n1 rm -rf',
  'command rm --recursive --force victim',
  "bash -c 'exec rm -fr victim'",
  "flock /tmp/troupe-lock -c 'rm -rf victim'",
  'find victim -delete',
];

let ws: string;
beforeAll(async () => {
  ws = await tempDir();
});
afterAll(async () => {
  await fs.rm(ws, { recursive: true, force: true });
});

describe.each(PERMISSION_MODES)('%s mode with bash allowed and deny: bash(rm -rf *)', (mode: PermissionMode) => {
  let driver: ToolDriver;
  beforeAll(async () => {
    await fs.mkdir(path.join(ws, 'victim'), { recursive: true });
    await fs.writeFile(path.join(ws, 'victim/data.txt'), 'keep me\n');
    driver = await ToolDriver.open({ roots: ws, shell: { killGraceMs: 200 } }, `bypass-${mode}`, {
      cwd: ws,
      mode,
      deny: ['bash(rm -rf *)'],
      allow: ['bash'],
    });
  });
  afterAll(async () => {
    await driver.close();
  });

  it.each(spellings)('%s is refused and victim/ survives', async (command) => {
    const part = await driver.call('bash', { command });
    expect(part.isError).toBe(true);
    expect(resultText(part)).toContain('bash(rm -rf *)');
    expect(await fs.readFile(path.join(ws, 'victim/data.txt'), 'utf8')).toBe('keep me\n');
  });

  it('still runs what the rule does not forbid (plan mode runs no command at all)', async () => {
    if (mode === 'plan') expect(await driver.refused('bash', { command: 'ls victim' })).toContain('plan mode');
    else expect(await driver.ok('bash', { command: 'ls victim' })).toBe('data.txt\n[exit code 0]');
  });
});
