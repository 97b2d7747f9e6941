/** `troupe run` as a script uses it: through pipes, plain lines and JSON lines, on the offline model. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gone, keylessEnv, PipedRun, REPO, runPiped, sampleCopy } from './helpers.js';

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

async function pidFrom(file: string): Promise<string> {
  let pid = '';
  while (!pid) pid = (await fs.readFile(path.join(dir, file), 'utf8').catch(() => '')).trim();
  return pid;
}

/** Every tool call in the journal of each agent (root and subagents) has its result: the history is valid. */
function unansweredCalls(journal: string): string[] {
  const records = journal
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  const answered = new Set(records.filter((r) => r.k === 'tool_end').map((r) => `${r.a} ${r.id}`));
  return records
    .filter((r) => r.k === 'msg' && r.m.role === 'assistant')
    .flatMap((r) =>
      r.m.content
        .filter((part: { type: string }) => part.type === 'tool_call')
        .map((c: { id: string }) => `${r.a} ${c.id}`),
    )
    .filter((call: string) => !answered.has(call));
}

describe('a session killed with SIGKILL, then troupe resume', () => {
  it('closes the tool that was running with an "interrupted by a restart" result and finishes the turn', async () => {
    const run = new PipedRun(
      [
        'run',
        '--offline',
        '--mode',
        'bypass',
        '--session=crash',
        '-C',
        dir,
        'Please run `echo $$ > shell.pid; echo ran >> runs.txt; sleep 300`',
      ],
      { keepStdinOpen: true },
    );
    await run.waitFor(/^main: bash echo/m);
    const pid = await pidFrom('shell.pid');
    run.child.kill('SIGKILL');
    expect((await run.done).code).toBe(null);
    expect(await gone(pid)).toBe(true);

    const listed = await runPiped(['sessions', '-C', dir]);
    expect(listed.stdout).toMatch(/^crash +interrupted /m);
    expect(listed.stdout).toContain('An interrupted session goes on where it stopped with: troupe resume <id>');

    const resumed = await runPiped(['resume', '-C', dir]);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^resuming crash$/m);
    expect(resumed.stdout).toMatch(
      /^main: bash failed \(\d+ ms\): Tool bash was interrupted by a restart before it finished/m,
    );
    expect(resumed.stdout).toMatch(/^done: completed/m);
    // The command ran once: a tool that started before the crash is not run again.
    expect(await fs.readFile(path.join(dir, 'runs.txt'), 'utf8')).toBe('ran\n');
    const after = await runPiped(['sessions', '-C', dir]);
    expect(after.stdout).toMatch(/^crash +idle /m);
  }, 90_000);

  it('resumes a run whose subagent was running a command, and the whole tree finishes with a valid history', async () => {
    const run = new PipedRun(
      [
        'run',
        '--offline',
        '--mode',
        'bypass',
        '--session=tree',
        '-C',
        dir,
        'Have a helper run `echo $$ > shell.pid; echo ran >> runs.txt; sleep 300`',
      ],
      { keepStdinOpen: true },
    );
    await run.waitFor(/^default_\S+: bash echo/m);
    const pid = await pidFrom('shell.pid');
    expect(run.stdout).toMatch(/^main: started (default_\S+)$/m);
    const child = /^main: started (default_\S+)$/m.exec(run.stdout)?.[1];
    run.child.kill('SIGKILL');
    await run.done;
    // The subagent's command dies with troupe, as the root's does.
    expect(await gone(pid)).toBe(true);

    const resumed = await runPiped(['resume', 'tree', '-C', dir]);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    // The same subagent goes on from its journal: its command is closed, not run again, and it answers.
    expect(resumed.stdout).toMatch(
      new RegExp(
        `^${child}: bash failed \\(\\d+ ms\\): Tool bash was interrupted by a restart before it finished`,
        'm',
      ),
    );
    expect(resumed.stdout).toContain(`main: ${child} completed`);
    expect(resumed.stdout).toMatch(/^main> The helper says:$/m);
    expect(resumed.stdout).toMatch(/^done: completed/m);
    expect(await fs.readFile(path.join(dir, 'runs.txt'), 'utf8')).toBe('ran\n');
    const journal = await fs.readFile(path.join(dir, '.troupe/sessions/tree.jsonl'), 'utf8');
    expect(journal).toContain(`"a":"${child}"`);
    expect(unansweredCalls(journal)).toEqual([]);
    expect((await runPiped(['sessions', '-C', dir])).stdout).toMatch(/^tree +idle /m);
    const replayed = await runPiped(['replay', 'tree', '-C', dir]);
    expect(replayed.stdout).toMatch(/^replay matched its recording: \d+ records, 1 turn$/m);
  }, 120_000);

  it('asks again a question that was waiting when the process died, and goes on with the answer', async () => {
    const run = new PipedRun(['run', '--offline', '--session=asked', '-C', dir, TASK], { keepStdinOpen: true });
    await run.waitFor(/wants to run write_file TROUPE_NOTES\.md/);
    run.child.kill('SIGKILL');
    await run.done;
    const resumed = await runPiped(['resume', 'asked', '-C', dir], { input: 'y\n' });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('? main wants to run write_file TROUPE_NOTES.md — [y]es / [n]o / [a]lways: yes');
    expect(resumed.stdout).toMatch(/^main> Done\. /m);
    expect(await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8')).toContain('# Notes on this folder');
    const replayed = await runPiped(['replay', 'asked', '-C', dir]);
    // A run cut by a crash and resumed replays as one: the journal holds what happened, once.
    expect(replayed.stdout).toMatch(/^replay matched its recording: \d+ records, 1 turn$/m);
    expect(replayed.code).toBe(0);
  }, 90_000);
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

describe('the quick start, in a clone', () => {
  it('npm run troupe runs the CLI from the source with no build, exactly as the README prints it', async () => {
    // stdin is /dev/null: the run's one approval (writing TROUPE_NOTES.md) is answered no, so the folder is untouched.
    const [command, ...args] = await readmeLine(/^npm run troupe -- /);
    expect([command, ...args]).toEqual([
      'npm',
      'run',
      'troupe',
      '--',
      'run',
      '--offline',
      '-C',
      'examples/sample-project',
      TASK,
    ]);
    const child = spawn(command as string, args, { cwd: REPO, env: keylessEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    const [code] = await once(child, 'close');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^main> Let me look at the folder first\.$/m);
    expect(stdout).toMatch(/^done: completed/m);
  }, 60_000);
});

/** The README line that starts with `start`, split into its words as a shell would (double quotes only). */
async function readmeLine(start: RegExp): Promise<string[]> {
  const readme = await fs.readFile(path.join(REPO, 'README.md'), 'utf8');
  const line = readme.split('\n').find((text) => start.test(text));
  if (line === undefined) throw new Error(`README.md has no line matching ${start}`);
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((word) => word[1] ?? (word[2] as string));
}
