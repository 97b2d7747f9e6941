import { z } from 'zod';
import { type AnyTool, defineTool, type ToolOutput } from '../define-tool.js';
import { hideOwnSecrets, withoutSecrets } from './environ.js';
import { type Exit, ProcessGroup } from './process-group.js';
import { type Workspace, WorkspaceError } from './workspace.js';

/**
 * How the `bash` tool runs commands: their time limits, how much output is kept, how a command is stopped, and which
 * shell runs it.
 */
export interface ShellOptions {
  /** Default time a foreground command may take. Default 120 s; the model may ask for up to `maxTimeoutMs`. */
  timeoutMs?: number;
  /** Default 10 minutes. */
  maxTimeoutMs?: number;
  /** Characters of output kept for one foreground result (its head and tail). Default 30,000. */
  maxOutputChars?: number;
  /** Characters of output a background job keeps (the latest). Default 64 KB. */
  jobBufferChars?: number;
  /** Between SIGTERM and SIGKILL. Default 2 s. */
  killGraceMs?: number;
  /** Default `/bin/bash`, or `/bin/sh` where there is no bash. */
  shell?: string;
  /**
   * The commands' environment. Default: this process's, without its secret variables (`isSecretName`: `*_API_KEY`,
   * `*TOKEN*`, `*SECRET*`, `*PASSWORD*` …), which are also blanked from what a command can read of this process's
   * own environment (see environ.ts). Whatever a command prints of a known secret is redacted from its result.
   */
  env?: NodeJS.ProcessEnv;
}

/** Keeps the first and the last half of a long output, and says how much was left out between them. */
class HeadTail {
  private head = '';
  private tail = '';
  private dropped = 0;
  constructor(private readonly max: number) {}

  push(chunk: string): void {
    const half = Math.floor(this.max / 2);
    if (this.head.length < half) {
      const room = half - this.head.length;
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    if (chunk === '') return;
    this.tail += chunk;
    if (this.tail.length > half) {
      this.dropped += this.tail.length - half;
      this.tail = this.tail.slice(-half);
    }
  }

  toString(): string {
    if (this.dropped === 0) return this.head + this.tail;
    return `${this.head}\n[… ${this.dropped} characters cut …]\n${this.tail}`;
  }
}

/** The latest output of a background job, and what has been read of it. */
class RingBuffer {
  private text = '';
  private written = 0;
  private readUpTo = 0;
  constructor(private readonly max: number) {}

  push(chunk: string): void {
    this.text += chunk;
    this.written += chunk.length;
    if (this.text.length > this.max) this.text = this.text.slice(-this.max);
  }

  /** Output not read yet; says how much of it the buffer had to drop. */
  readNew(): string {
    const start = this.written - this.text.length;
    const lost = Math.max(0, start - this.readUpTo);
    const fresh = this.text.slice(Math.max(0, this.readUpTo - start));
    this.readUpTo = this.written;
    return lost > 0 ? `[… ${lost} earlier characters dropped …]\n${fresh}` : fresh;
  }
}

interface Job {
  id: string;
  command: string;
  group: ProcessGroup;
  output: RingBuffer;
  exit?: Exit;
  killed?: boolean;
}

function describeExit(exit: Exit | undefined): string {
  if (!exit) return 'running';
  if (exit.signal) return `killed by ${exit.signal}`;
  return `exit code ${exit.code}`;
}

/**
 * The shell tools of one workspace: `bash` (foreground commands with a timeout, or background jobs), `job_output`
 * and `job_kill`. Every command is a process group, killed as a whole on timeout, abort, when it is over (anything
 * it left running), and on `close()`.
 */
export class Shell {
  private readonly jobs = new Map<string, Job>();
  private readonly foreground = new Set<ProcessGroup>();
  private nextJob = 1;
  private readonly env: NodeJS.ProcessEnv;
  private closed = false;

  constructor(
    private readonly workspace: Workspace,
    private readonly options: ShellOptions = {},
  ) {
    hideOwnSecrets();
    this.env = options.env ?? withoutSecrets();
  }

  private get grace(): number {
    return this.options.killGraceMs ?? 2000;
  }

  private async cwdFor(input: string | undefined): Promise<string> {
    if (input === undefined) return this.workspace.cwd;
    const resolved = await this.workspace.resolve(input, 'read');
    if (!resolved.stats?.isDirectory()) throw new WorkspaceError('not_a_file', `${input} is not a folder`);
    return resolved.real;
  }

  private start(command: string, cwd: string, onOutput: (chunk: string) => void): ProcessGroup {
    if (this.closed) throw new Error('The shell is closed: its agent has stopped');
    return ProcessGroup.shell(command, {
      cwd,
      env: this.env,
      onOutput,
      ...(this.options.shell ? { shell: this.options.shell } : {}),
    });
  }

  /** Runs a command to its end, its timeout or its abort; nothing it started survives the call. */
  async run(command: string, cwd: string, timeoutMs: number, signal: AbortSignal) {
    const output = new HeadTail(this.options.maxOutputChars ?? 30_000);
    const group = this.start(command, cwd, (chunk) => output.push(chunk));
    this.foreground.add(group);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<'timeout' | 'aborted'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
      onAbort = () => resolve('aborted');
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([group.exited, stopped]);
      let leftovers = false;
      if (typeof outcome === 'string') {
        await group.terminate(this.grace);
        await group.exited;
      } else {
        leftovers = group.isAlive();
        if (leftovers) await group.terminate(this.grace);
        else await group.drain();
      }
      return { outcome, exit: await group.exited, output: output.toString(), leftovers };
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
      this.foreground.delete(group);
    }
  }

  async startJob(command: string, cwd: string): Promise<Job> {
    const output = new RingBuffer(this.options.jobBufferChars ?? 64 * 1024);
    const id = `job${this.nextJob++}`;
    const group = this.start(command, cwd, (chunk) => output.push(chunk));
    const job: Job = { id, command, group, output };
    this.jobs.set(id, job);
    void group.exited.then((exit) => {
      job.exit = exit;
    });
    return job;
  }

  job(id: string): Job {
    const job = this.jobs.get(id);
    if (!job) {
      const known = [...this.jobs.keys()];
      throw new WorkspaceError('not_found', `No job ${id}${known.length ? ` (jobs: ${known.join(', ')})` : ''}`);
    }
    return job;
  }

  async kill(job: Job): Promise<void> {
    job.killed = true;
    await job.group.terminate(this.grace);
    job.exit = await job.group.exited;
  }

  /** Kills every command and job: the agent has stopped. Later commands are refused. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([
      ...[...this.foreground].map((group) => group.terminate(this.grace)),
      ...[...this.jobs.values()].map((job) => job.group.terminate(this.grace)),
    ]);
  }

  tools(): AnyTool[] {
    const maxTimeout = this.options.maxTimeoutMs ?? 600_000;
    const defaultTimeout = Math.min(this.options.timeoutMs ?? 120_000, maxTimeout);
    const bash = defineTool({
      name: 'bash',
      description: `Runs a shell command in the workspace (bash -c). Foreground commands time out after ${Math.round(defaultTimeout / 1000)} s unless timeout_ms says otherwise; servers and watchers go in the background (background: true), then read them with job_output and stop them with job_kill. Anything a foreground command leaves running is stopped when it returns.`,
      schema: z.object({
        command: z.string().min(1),
        cwd: z.string().optional().describe('Folder to run in, relative to the workspace root (default: the root)'),
        timeout_ms: z.number().int().min(1).max(maxTimeout).optional(),
        background: z.boolean().optional().describe('Start it as a job and return at once'),
      }),
      destructive: true,
      ruleArgument: { command: 'command' },
      executionMode: 'sequential',
      execute: async ({ command, cwd, timeout_ms, background }, ctx): Promise<ToolOutput> => {
        const dir = await this.cwdFor(cwd);
        if (background) {
          const job = await this.startJob(command, dir);
          return {
            content: `Started ${job.id} (process group ${job.group.pid}) in ${this.workspace.display(dir)}. Read its output with job_output, stop it with job_kill.`,
            details: { job: job.id, pid: job.group.pid },
          };
        }
        const timeout = timeout_ms ?? defaultTimeout;
        const run = await this.run(command, dir, timeout, ctx.signal);
        const notes: string[] = [];
        if (run.outcome === 'timeout')
          notes.push(`[timed out after ${timeout} ms: the command and its processes were killed]`);
        else if (run.outcome === 'aborted') notes.push('[interrupted: the command and its processes were killed]');
        else notes.push(`[${describeExit(run.exit)}]`);
        if (run.leftovers) {
          notes.push('[processes it left running were stopped; use background: true for servers and watchers]');
        }
        const text = run.output.endsWith('\n') || run.output === '' ? run.output : `${run.output}\n`;
        return {
          content: `${text}${notes.join('\n')}`,
          isError: typeof run.outcome === 'string',
          details: {
            exitCode: run.exit.code,
            signal: run.exit.signal,
            outcome: typeof run.outcome === 'string' ? run.outcome : 'exit',
          },
        };
      },
    });
    const jobOutput = defineTool({
      name: 'job_output',
      description: 'Output of a background job since the last read, and whether it is still running.',
      schema: z.object({
        id: z.string().describe('The job id bash returned, e.g. job1'),
        wait_ms: z
          .number()
          .int()
          .min(0)
          .max(60_000)
          .optional()
          .describe('Wait up to this long for the job to end first'),
      }),
      readOnly: true,
      execute: async ({ id, wait_ms }, ctx) => {
        const job = this.job(id);
        if (wait_ms && !job.exit) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([
            job.group.exited,
            new Promise((r) => (timer = setTimeout(r, wait_ms))),
            new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true })),
          ]);
          clearTimeout(timer);
          if (job.exit) await job.group.drain();
        }
        const status = job.killed ? `killed (${describeExit(job.exit)})` : describeExit(job.exit);
        const fresh = job.output.readNew();
        return {
          content: `${id} ${status}: ${job.command}\n${fresh === '' ? '(no new output)' : fresh}`,
          details: { job: id, running: !job.exit },
        };
      },
    });
    const jobKill = defineTool({
      name: 'job_kill',
      description: 'Stops a background job and every process it started.',
      schema: z.object({ id: z.string() }),
      destructive: true,
      execute: async ({ id }) => {
        const job = this.job(id);
        if (job.exit && !job.group.isAlive()) return `${id} had already ended (${describeExit(job.exit)}).`;
        await this.kill(job);
        return `${id} stopped (${describeExit(job.exit)}).`;
      },
    });
    return [bash, jobOutput, jobKill];
  }
}
