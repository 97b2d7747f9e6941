import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually, running } from '../helpers/processes.js';
import { ToolDriver, tempDir } from './helpers.js';

let ws: string;
let driver: ToolDriver;

/** The running children of process `parent` whose command line contains `text`. */
function childrenWithCommand(parent: number, text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && running(Number(name)))
    .flatMap((name) => {
      try {
        const ppid = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
        const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ');
        return ppid === parent && command.includes(text) ? [Number(name)] : [];
      } catch {
        return [];
      }
    });
}

async function pidFrom(file: string): Promise<number> {
  for (;;) {
    const text = await fs.readFile(path.join(ws, file), 'utf8').catch(() => '');
    if (text.trim()) return Number(text.trim());
    await new Promise((r) => setTimeout(r, 10));
  }
}

beforeEach(async () => {
  ws = await tempDir();
  driver = await ToolDriver.open({
    roots: ws,
    shell: { killGraceMs: 200, maxOutputChars: 1000, jobBufferChars: 1000 },
  });
});

afterEach(async () => {
  await driver.close();
  await fs.rm(ws, { recursive: true, force: true });
});

describe('bash', () => {
  it('runs a command in the workspace and reports its exit', async () => {
    expect(await driver.ok('bash', { command: 'pwd; echo oops >&2; exit 3' })).toBe(`${ws}\noops\n[exit code 3]`);
    await fs.mkdir(path.join(ws, 'sub'));
    expect(await driver.ok('bash', { command: 'pwd', cwd: 'sub' })).toBe(`${ws}/sub\n[exit code 0]`);
    expect(await driver.refused('bash', { command: 'pwd', cwd: '..' })).toMatch(/outside the workspace/);
  });

  it('kills a command that ignores SIGTERM when it times out, with its whole group', async () => {
    const text = await driver.refused('bash', {
      command: "trap '' TERM; sleep 999 & echo $! > child.pid; echo $$ > shell.pid; wait",
      timeout_ms: 300,
    });
    expect(text).toMatch(/\[timed out after 300 ms: the command and its processes were killed\]/);
    expect(running(await pidFrom('shell.pid'))).toBe(false);
    expect(running(await pidFrom('child.pid'))).toBe(false);
  });

  it('returns when the shell exits even if a nohup child holds its output open, and stops that child', async () => {
    const text = await driver.ok('bash', {
      command: 'nohup sleep 999 & echo $! > child.pid; echo started',
    });
    expect(text).toMatch(/^started\n/);
    expect(text).toContain('[processes it left running were stopped; use background: true for servers and watchers]');
    expect(running(await pidFrom('child.pid'))).toBe(false);
  });

  it.each([
    ['setsid', "echo started; setsid sh -c 'echo $$ > child.pid; exec sleep 999' &"],
    ['setsid -f', "echo started; setsid -f sh -c 'echo $$ > child.pid; exec sleep 999'"],
    ['a double fork', "echo started; ( setsid sh -c 'echo $$ > child.pid; exec sleep 999' & )"],
    ['nohup setsid', "echo started; nohup setsid sh -c 'echo $$ > child.pid; exec sleep 999' >/dev/null 2>&1 &"],
    ['a new session in a subshell', "echo started; (exec setsid -w sh -c 'echo $$ > child.pid; exec sleep 999') &"],
  ])('stops a process that left the group with %s when the command returns', async (_how, command) => {
    // The command returns once the detached process has written its pid: it is running when the call returns.
    const text = await driver.ok('bash', { command: `${command}\nuntil [ -s child.pid ]; do sleep 0.01; done` });
    const pid = await pidFrom('child.pid');
    expect(text).toMatch(/^started\n/);
    expect(await eventually(() => !running(pid))).toBe(true);
  });

  it('kills the group when the turn is interrupted during the command', async () => {
    const controller = new AbortController();
    const call = driver.call('bash', { command: 'echo $$ > shell.pid; sleep 999' }, controller.signal);
    const pid = await pidFrom('shell.pid');
    controller.abort();
    const result = await call;
    expect(result.isError).toBe(true);
    expect(await eventually(() => !running(pid))).toBe(true);
  });

  it('kills the group when the agent stops', async () => {
    const call = driver.call('bash', { command: 'echo $$ > shell.pid; sleep 999' });
    const pid = await pidFrom('shell.pid');
    await driver.agent.stop();
    await call;
    await driver.tools.close();
    expect(running(pid)).toBe(false);
  });

  it('keeps the head and the tail of a long output', async () => {
    const text = await driver.ok('bash', { command: 'seq 1 5000' });
    expect(text.startsWith('1\n2\n3\n')).toBe(true);
    expect(text).toMatch(/\[… \d+ characters cut …\]/);
    expect(text).toMatch(/4999\n5000\n\[exit code 0\]$/);
    expect(text.length).toBeLessThan(1200);
  });

  it('does not hand secrets from the environment to commands', async () => {
    process.env.TROUPE_TEST_API_KEY = 'sk-should-not-leak';
    try {
      const isolated = await ToolDriver.open({ roots: ws }, 'isolated');
      try {
        expect(await isolated.ok('bash', { command: 'echo "[$TROUPE_TEST_API_KEY]"' })).toBe('[]\n[exit code 0]');
      } finally {
        await isolated.close();
      }
    } finally {
      delete process.env.TROUPE_TEST_API_KEY;
    }
  });
});

describe('background jobs', () => {
  it('starts a job, reads its output since the last read, and kills it', async () => {
    const started = await driver.ok('bash', { command: 'echo one; echo two; sleep 999', background: true });
    expect(started).toMatch(/^Started job1 \(process group \d+\)/);
    const pid = Number(/process group (\d+)/.exec(started)?.[1]);
    let output = '';
    while (!output.includes('two')) output += await driver.ok('job_output', { id: 'job1' });
    expect(output).toContain('job1 running: echo one; echo two; sleep 999');
    expect(await driver.ok('job_output', { id: 'job1' })).toBe(
      'job1 running: echo one; echo two; sleep 999\n(no new output)',
    );
    expect(await driver.ok('job_kill', { id: 'job1' })).toBe('job1 stopped (killed by SIGTERM).');
    expect(running(pid)).toBe(false);
    expect(await driver.ok('job_output', { id: 'job1' })).toMatch(/^job1 killed \(killed by SIGTERM\)/);
    expect(await driver.ok('job_kill', { id: 'job1' })).toBe('job1 had already ended (killed by SIGTERM).');
    expect(await driver.refused('job_output', { id: 'job9' })).toBe('No job job9 (jobs: job1)');
  });

  it('waits for a job to end and keeps only the latest output in its ring buffer', async () => {
    await driver.ok('bash', { command: 'seq 1 3000; exit 4', background: true });
    const text = await driver.ok('job_output', { id: 'job1', wait_ms: 60_000 });
    expect(text).toMatch(/^job1 exit code 4: seq 1 3000; exit 4\n\[… \d+ earlier characters dropped …\]\n/);
    expect(text).toMatch(/2999\n3000\n$/);
  });

  it('stops every job when the tools are closed, and refuses commands after', async () => {
    const started = await driver.ok('bash', { command: "trap '' TERM; sleep 999", background: true });
    const pid = Number(/process group (\d+)/.exec(started)?.[1]);
    await driver.tools.close();
    expect(running(pid)).toBe(false);
    expect(await driver.refused('bash', { command: 'true' })).toMatch(/The shell is closed/);
  });

  it('stops what a job started with setsid when the tools are closed', async () => {
    await driver.ok('bash', {
      command: "setsid -f sh -c 'echo $$ > child.pid; exec sleep 999'; sleep 999",
      background: true,
    });
    const pid = await pidFrom('child.pid');
    expect(running(pid)).toBe(true);
    await driver.tools.close();
    expect(await eventually(() => !running(pid))).toBe(true);
  });

  it('leaves nothing running when the process that started the commands is killed with SIGKILL', async () => {
    // No hook runs on SIGKILL: each group's watchdog, which sees the pipe from this process close, kills it.
    const script = path.join(import.meta.dirname, 'fixtures/killed-mid-command.ts');
    const owner = spawn(process.execPath, ['--import', 'tsx', script, ws], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    owner.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    const closed = new Promise((resolve) => owner.once('close', resolve));
    let pids: number[] = [];
    let watchdogs: number[] = [];
    try {
      while (!out.includes('ready')) {
        if (owner.exitCode !== null) throw new Error(`the owner exited first: ${out}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      pids = await Promise.all(['foreground.pid', 'job.pid', 'leftover.pid', 'detached.pid'].map(pidFrom));
      expect(pids.every(running)).toBe(true);
      watchdogs = childrenWithCommand(owner.pid ?? 0, 'read -r group');
    } finally {
      owner.kill('SIGKILL');
      await closed;
    }
    // One per group still alive (the leftovers' jobs too, though their shells have exited).
    expect(watchdogs).toHaveLength(4);
    for (const pid of pids) expect(await eventually(() => !running(pid))).toBe(true);
    // The watchdogs went with their groups: nothing of the dead process is left running.
    for (const pid of watchdogs) expect(await eventually(() => !running(pid))).toBe(true);
  });

  it('does not run a command whose process died before its watchdog knew the group', async () => {
    const script = path.join(import.meta.dirname, 'fixtures/killed-before-guard.ts');
    const owner = spawn(process.execPath, ['--import', 'tsx', script, ws], { stdio: 'ignore' });
    expect(await new Promise((resolve) => owner.once('exit', (_, signal) => resolve(signal)))).toBe('SIGKILL');
    const pid = await pidFrom('group.pid');
    expect(pid).toBeGreaterThan(0);
    // The shell reads EOF where it waited for the go, and exits before the command: nothing is left to kill.
    expect(await eventually(() => !running(pid))).toBe(true);
    expect(existsSync(path.join(ws, 'ran.txt'))).toBe(false);
  });

  it('does not let a job outlive the process that started it', async () => {
    const script = path.join(import.meta.dirname, 'fixtures/exit-with-job.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, ws]);
    const pid = Number(stdout.trim());
    expect(pid).toBeGreaterThan(0);
    expect(await eventually(() => !running(pid))).toBe(true);
  });
});
