/** `troupe` driven in this process through `main()`, with its terminal, input, Ctrl-C and exit replaced. */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { RunIO } from '../../src/cli/run.js';
import { keylessEnv } from './helpers.js';

/** A key-at-a-time terminal input, as process.stdin is on a TTY. */
export class FakeTerminalInput extends EventEmitter {
  readonly isTTY = true;
  raw = false;
  setRawMode(mode: boolean) {
    this.raw = mode;
    return this;
  }
  resume() {
    return this;
  }
  pause() {
    return this;
  }
  /** Types a key once a question has put the terminal in raw mode. */
  async type(key: string): Promise<void> {
    while (!this.raw) await new Promise((r) => setTimeout(r, 10));
    this.emit('data', Buffer.from(key));
  }
}

export interface Harness {
  io: RunIO;
  out: () => string;
  err: string[];
  sigint: () => void;
  exits: number[];
}

export function harness(
  dir: string,
  options: { tty?: boolean; input?: string; stdin?: RunIO['stdin']; env?: NodeJS.ProcessEnv } = {},
): Harness {
  let text = '';
  const err: string[] = [];
  const exits: number[] = [];
  let handler: (() => void) | undefined;
  let stdin = options.stdin;
  if (!stdin) {
    const pipe = new PassThrough();
    pipe.end(options.input ?? '');
    stdin = pipe;
  }
  const io: RunIO = {
    stdout: {
      write: (t) => {
        text += t;
      },
      columns: 100,
      isTTY: options.tty === true,
    },
    stderr: (line) => err.push(line),
    stdin,
    env: options.env ?? keylessEnv(),
    cwd: dir,
    onSigint(fn) {
      handler = fn;
      return () => {
        handler = undefined;
      };
    },
    exit: (code) => exits.push(code),
  };
  return { io, out: () => text, err, sigint: () => handler?.(), exits };
}

/** Runs `troupe <argv>` in this process; resolves with its exit code. */
export async function runIn(h: Harness, argv: string[]): Promise<number | undefined> {
  const saved = process.exitCode;
  try {
    await main(argv, () => {}, h.io);
    return process.exitCode as number | undefined;
  } finally {
    process.exitCode = saved;
  }
}
