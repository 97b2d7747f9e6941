import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eventually, running } from '../helpers/processes.js';

export const REPO = path.resolve(import.meta.dirname, '../..');
const CLI = path.join(REPO, 'src/cli/index.ts');
const SAMPLE = path.join(REPO, 'examples/sample-project');

/**
 * A copy of the sample folder, so a run can write into it: its tracked files only, so that what a person's own
 * runs left in it (a `.troupe/` of sessions, the notes the offline model writes) never reaches a test.
 */
export async function sampleCopy(): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'troupe-cli-')));
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: SAMPLE, encoding: 'utf8' }).split('\0');
  for (const file of tracked.filter(Boolean)) {
    await fs.mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await fs.copyFile(path.join(SAMPLE, file), path.join(dir, file));
  }
  return dir;
}

/** The environment of a user with no keys set. */
export function keylessEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/API_KEY|BASE_URL|^TROUPE_/.test(key)) env[key] = value;
  }
  return { ...env, ...extra };
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `troupe <args>` through pipes, as a script would run it. */
export class PipedRun {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly done: Promise<Ran>;

  constructor(args: string[], options: { env?: NodeJS.ProcessEnv; input?: string; keepStdinOpen?: boolean } = {}) {
    this.child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
      cwd: REPO,
      env: options.env ?? keylessEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    if (options.input !== undefined) this.child.stdin?.write(options.input);
    if (!options.keepStdinOpen) this.child.stdin?.end();
    this.done = new Promise((resolve) => {
      this.child.once('close', (code) => resolve({ code, stdout: this.stdout, stderr: this.stderr }));
    });
  }

  /** Waits until stdout shows `pattern` (the event the test is waiting for). */
  async waitFor(pattern: RegExp): Promise<void> {
    while (!pattern.test(this.stdout)) {
      if (this.child.exitCode !== null) throw new Error(`exited before ${pattern}:\n${this.stdout}\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

export function runPiped(args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<Ran> {
  return new PipedRun(args, options).done;
}

/** A real terminal: a tmux session running `troupe <args>`, read back with capture-pane. */
export class TerminalRun {
  private static next = 0;
  readonly session = `troupe-test-${process.pid}-${TerminalRun.next++}`;

  constructor(args: string[], options: { columns?: number; rows?: number; env?: Record<string, string> } = {}) {
    const quoted = [process.execPath, '--import', 'tsx', CLI, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`);
    const envs = Object.entries(options.env ?? {}).map(([k, v]) => `${k}='${v}'`);
    const command = `cd '${REPO}' && env ${envs.join(' ')} ${quoted.join(' ')}; echo "EXIT=$?"; sleep 60`;
    execFileSync('tmux', [
      'new-session',
      '-d',
      '-s',
      this.session,
      '-x',
      String(options.columns ?? 110),
      '-y',
      String(options.rows ?? 30),
      command,
    ]);
  }

  /** The screen as text (`escapes`: with its colours, as terminal escape codes). */
  screen(escapes = false): string {
    return execFileSync('tmux', ['capture-pane', '-p', ...(escapes ? ['-e'] : []), '-t', this.session], {
      encoding: 'utf8',
    });
  }

  /** Waits until the screen shows `pattern` (at most a minute, then fails with the screen); returns the screen. */
  async waitFor(pattern: RegExp): Promise<string> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const screen = this.screen();
      if (pattern.test(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`the screen never showed ${pattern}:\n${screen}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  keys(...keys: string[]): void {
    execFileSync('tmux', ['send-keys', '-t', this.session, ...keys]);
  }

  close(): void {
    try {
      execFileSync('tmux', ['kill-session', '-t', this.session], { stdio: 'ignore' });
    } catch {}
  }
}

const ESC = String.fromCharCode(27);
/** Terminal escape codes (colours, cursor moves), as a pattern. */
export const ANSI = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, 'g');
/** One escape code, e.g. `esc('[2m')`, without a control character in a regex literal. */
export function esc(code: string): string {
  return ESC + code;
}

/**
 * Waits (bounded) until a process is gone. A SIGKILLed troupe runs no hook: what ends its commands then is each
 * process group's watchdog, which sees troupe's end of a pipe close.
 */
export function gone(pid: string | number): Promise<boolean> {
  return eventually(() => !running(Number(pid)));
}
