import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { MARK, Watchdog } from './watchdog.js';

/**
 * Every group still alive, so that none outlives this process: on exit they get SIGKILL (the only thing an
 * `exit` handler can still do, synchronously).
 */
const live = new Set<ProcessGroup>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const group of live) group.signal('SIGKILL');
  });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * What the shell runs before the command: it waits for a line that is sent once the watchdog has been told the
 * group, then gives the command /dev/null as its stdin. Without it, a troupe killed between the spawn and that
 * moment (under load, long enough for the command to have started and done work) left a command no watchdog knew
 * of; with it, that shell reads EOF and exits before the command runs. Same line as the command, so that the
 * shell's messages keep their line numbers.
 */
const GATE = 'read -r _ || exit 125; exec </dev/null; ';

const DEFAULT_SHELL = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';

/**
 * The processes whose environment, as they were started, holds `mark` (Linux: /proc/<pid>/environ; a process
 * cannot change what is there without starting a new program). Empty where there is no /proc.
 */
function marked(mark: string): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const needle = Buffer.from(`\0${MARK}=${mark}\0`);
  const pids: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // A leading NUL so that the first variable matches like the others.
      const environ = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]);
      if (environ.includes(needle)) pids.push(Number(name));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

function isZombie(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/**
 * A shell command in its own process group (its own session: `detached`), so that everything it starts — pipes,
 * `&` jobs, `nohup` — can be signalled at once with `kill(-pgid)`. The command is over when the shell exits, not
 * when its output pipes close: a descendant left behind keeps them open forever.
 *
 * A process can leave the group (`setsid`, a daemon's double fork) and be re-parented away from the shell, out of
 * reach of `kill(-pgid)` and of a walk down the tree by parent pid. Every process a shell command starts inherits a
 * mark in its environment ({@link MARK}, one value per command), and on Linux whatever carries it is signalled with
 * the group. What escapes: a process started with a cleared environment (`env -i`, `env -u`), or by another
 * service (systemd-run, cron, a container runtime, ssh), and anything on a system without /proc.
 */
export class ProcessGroup {
  readonly pid: number;
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;
  private readonly watchdog: Watchdog | undefined;
  /** The environment mark of a shell command's processes, or undefined for a process handed over as is. */
  private mark: string | undefined;

  /**
   * Takes over a child spawned with `detached: true` (the leader of its own process group). A `watchdog` started
   * before the spawn guards the group from its first moment (see watchdog.ts); without one, one starts now.
   */
  constructor(
    readonly child: ChildProcess,
    watchdog = Watchdog.start(),
    mark?: string,
  ) {
    if (child.pid === undefined) {
      watchdog?.dismiss();
      child.once('error', () => {}); // reported by the throw below, not as an unhandled 'error' event
      throw new Error('The process could not be started');
    }
    this.pid = child.pid;
    this.watchdog = watchdog;
    this.mark = mark;
    watchdog?.guard(this.pid, mark);
    live.add(this);
    installExitHook();
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        // A command that left nothing behind needs no watchdog (a job may end long before its shell is closed).
        if (!this.isAlive()) this.watchdog?.dismiss();
        resolve(this.exit);
      });
      child.once('error', () => {
        this.exit ??= { code: null, signal: null };
        resolve(this.exit);
      });
    });
  }

  /** `shell -c command` as a group, its stdout and stderr merged into `onOutput`. */
  static shell(
    command: string,
    options: { cwd: string; env: NodeJS.ProcessEnv; shell?: string; onOutput: (chunk: string) => void },
  ): ProcessGroup {
    const watchdog = Watchdog.start();
    const mark = `${process.pid}-${randomBytes(8).toString('hex')}`;
    let child: ChildProcess;
    try {
      child = spawn(options.shell ?? DEFAULT_SHELL, ['-c', GATE + command], {
        cwd: options.cwd,
        env: { ...options.env, [MARK]: mark },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (error) {
      watchdog?.dismiss();
      throw error;
    }
    child.stdin?.once('error', () => {}); // EPIPE: the shell is already gone
    child.stdout?.setEncoding('utf8').on('data', options.onOutput);
    child.stderr?.setEncoding('utf8').on('data', options.onOutput);
    const group = new ProcessGroup(child, watchdog, mark);
    // The watchdog knows the group now: the command may start.
    child.stdin?.end('\n');
    return group;
  }

  get hasExited(): boolean {
    return this.exit !== undefined;
  }

  /** Whether any process of the group is still there (the shell, or anything it left behind, in the group or not). */
  isAlive(): boolean {
    try {
      process.kill(-this.pid, 0);
      return true;
    } catch {
      return this.strays().length > 0;
    }
  }

  signal(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
    for (const pid of this.strays()) {
      try {
        process.kill(pid, signal);
      } catch {
        // Gone meanwhile.
      }
    }
  }

  /** Live processes carrying the command's mark (zombies, already dead, left out). */
  private strays(): number[] {
    if (this.mark === undefined) return [];
    return marked(this.mark).filter((pid) => !isZombie(pid));
  }

  /**
   * Ends the whole group: SIGTERM, then SIGKILL for whatever ignored it after `graceMs`. Resolves when the group
   * is gone (or, if a process cannot be reaped, after a bounded wait), with its output pipes closed.
   */
  async terminate(graceMs: number): Promise<void> {
    if (this.isAlive()) {
      this.signal('SIGTERM');
      if (!(await this.gone(graceMs))) {
        this.signal('SIGKILL');
        await this.gone(2000);
      }
    }
    await this.drain();
  }

  /**
   * Lets the output already in the pipes arrive, then closes them: once the group is dead nobody writes, but a
   * process that left the group (setsid) could hold them open, so the wait is bounded.
   */
  async drain(): Promise<void> {
    const streams = [this.child.stdout, this.child.stderr].filter((s) => s !== null);
    this.child.stdin?.destroy();
    const closed = streams.map((s) =>
      s.closed ? Promise.resolve() : new Promise<void>((resolve) => s.once('close', () => resolve())),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(closed), new Promise<void>((r) => (timer = setTimeout(r, 250)))]);
    clearTimeout(timer);
    for (const stream of streams) stream.destroy();
    live.delete(this);
    this.watchdog?.dismiss();
  }

  private async gone(withinMs: number): Promise<boolean> {
    const deadline = Date.now() + withinMs;
    while (this.isAlive()) {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }
}
