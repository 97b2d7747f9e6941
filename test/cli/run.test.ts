/** `troupe run` as a script uses it: through pipes, plain lines and JSON lines, on the offline model. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PipedRun, runPiped, sampleCopy } from './helpers.js';

let dir: string;

beforeEach(async () => {
  dir = await sampleCopy();
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const TASK = 'Tell me about this project';

describe('troupe run, piped', () => {
  it('runs the offline team on the sample folder and takes an approval from stdin', async () => {
    const run = await runPiped(['run', '--offline', '-C', dir, TASK], { input: 'y\n' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe('main> Let me look at the folder first.');
    expect(run.stdout).toMatch(/^main: swarm 2 tasks$/m);
    expect(run.stdout).toMatch(/^default_\S+: grep TODO\|FIXME$/m);
    expect(run.stdout).toMatch(/^default_\S+: read_file README.md$/m);
    expect(run.stdout).toContain('main: asks to run write_file TROUPE_NOTES.md');
    expect(run.stdout).toContain('? main wants to run write_file TROUPE_NOTES.md — [y]es / [n]o / [a]lways: yes');
    expect(run.stdout).toMatch(/^done: completed · [\d.]+k? in \/ \d+ out · \$0\.0000$/m);
    const notes = await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8');
    expect(notes).toContain(
      'src/pantry.py:25:    # FIXME: taking more than there is goes negative instead of refusing',
    );
    expect(notes).toContain('The README is about "Pantry"');
  }, 60_000);

  it('Ctrl-C during a tool interrupts the turn, kills the command, and exits 130', async () => {
    const run = new PipedRun(
      ['run', '--offline', '--mode', 'bypass', '-C', dir, 'Please run `echo $$ > shell.pid; sleep 300`'],
      {
        keepStdinOpen: true,
      },
    );
    await run.waitFor(/^main: bash echo/m);
    let pid = '';
    while (!pid) pid = (await fs.readFile(path.join(dir, 'shell.pid'), 'utf8').catch(() => '')).trim();
    run.child.kill('SIGINT');
    const ended = await run.done;
    expect(ended.code).toBe(130);
    expect(ended.stdout).toContain('Interrupting… (Ctrl-C again to exit at once)');
    expect(ended.stdout).toMatch(/^done: interrupted/m);
    expect(() => process.kill(Number(pid), 0)).toThrow();
  }, 60_000);
});

describe('troupe run: errors and help, from the shell', () => {
  it('prints a usage error as one line on stderr and exits 2', async () => {
    const run = await runPiped(['run', 'do it']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'troupe run: no API key: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or run offline with --offline\n',
    );
    expect(run.stdout).toBe('');
  }, 30_000);

  it('prints complete help', async () => {
    const top = await runPiped(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^Usage: troupe <command>/);
    expect(top.stdout).toContain('run "<task>"');
  }, 30_000);
});
