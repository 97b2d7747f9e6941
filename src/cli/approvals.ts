/**
 * Asking a person about a tool call: one key on a terminal (y / n / a), one line on a pipe. Questions are asked one
 * at a time, in the order they came; a closed input answers "no".
 */
import { createInterface } from 'node:readline';
import type { JsonValue } from '../protocol/index.js';
import { describeCall, redactedArgs } from './agent-rows.js';

export type Answer = 'yes' | 'no' | 'always';
/** The call was answered somewhere else (the inspector's page) before anyone typed here. */
export type Outcome = Answer | 'elsewhere';

export interface Input extends NodeJS.EventEmitter {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
  resume(): unknown;
  pause(): unknown;
}

function parse(text: string, always: boolean): Answer | undefined {
  const t = text.trim().toLowerCase();
  if (t === 'y' || t === 'yes') return 'yes';
  if (t === 'n' || t === 'no') return 'no';
  if (always && (t === 'a' || t === 'always')) return 'always';
  return undefined;
}

/**
 * Who wants to run what: the call's main argument (a path, a command), or all its arguments when it has none of
 * those, since a person answering must see what would run. Redacted.
 */
export function wantsToRun(agentId: string, call: { toolName: string; label?: string; args: JsonValue }): string {
  const described = describeCall(call);
  const bare = described === (call.label ?? call.toolName);
  const args = call.args;
  const hasArgs = typeof args === 'object' && args !== null && Object.keys(args).length > 0;
  return `${agentId} wants to run ${described}${bare && hasArgs ? ` ${redactedArgs(args)}` : ''}`;
}

/** The question as a terminal or a pipe shows it, with the answers it takes. */
export function questionLine(what: string, always = true): string {
  return `? ${what} — [y]es / [n]o${always ? ' / [a]lways' : ''}: `;
}

/** One question: whether it is settled, and how to stop it waiting for input. */
interface Question {
  settled: boolean;
  cancel?: () => void;
}

export class Approvals {
  private queue: Promise<unknown> = Promise.resolve();
  private lines: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private ended = false;
  private readonly reader: ReturnType<typeof createInterface> | undefined;

  constructor(
    private readonly input: Input,
    /** Ctrl-C typed while a terminal question is in raw mode. */
    private readonly onInterrupt: () => void,
    /** Whether "always" is an answer (it remembers a rule: only where the permissions live). */
    private readonly always = true,
  ) {
    if (!input.isTTY) {
      this.reader = createInterface({ input: input as NodeJS.ReadableStream });
      this.reader.on('line', (line) => this.push(line));
      this.reader.on('close', () => {
        this.ended = true;
        this.push(undefined);
      });
    }
  }

  /**
   * Asks `question` (printed by the caller's `show`) and resolves with the answer, or with `elsewhere` once
   * `answered` settles first: a question not shown yet is then skipped, one on the screen stops waiting.
   */
  ask(show: () => void, answered?: Promise<unknown>): Promise<Outcome> {
    const question: Question = { settled: false };
    const elsewhere = answered?.then((): Outcome => {
      if (!question.settled) question.cancel?.();
      question.settled = true;
      return 'elsewhere';
    });
    const next = this.queue.then(async (): Promise<Outcome> => {
      if (question.settled) return 'elsewhere';
      show();
      const typed = (this.input.isTTY ? this.key(question) : this.line(question)).then((answer) => {
        question.settled = true;
        return answer;
      });
      return elsewhere ? Promise.race([typed, elsewhere]) : typed;
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  close(): void {
    this.reader?.close();
    if (this.input.isTTY) this.input.pause();
  }

  private push(line: string | undefined): void {
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve(line);
    } else if (line !== undefined) this.lines.push(line);
  }

  private async line(question: Question): Promise<Answer> {
    // Answered elsewhere: stop waiting for a line, so the next one goes to the next question.
    question.cancel = () => {
      this.waiting = undefined;
    };
    for (;;) {
      const line =
        this.lines.shift() ??
        (this.ended ? undefined : await new Promise<string | undefined>((resolve) => (this.waiting = resolve)));
      if (line === undefined) return 'no';
      const answer = parse(line, this.always);
      if (answer) return answer;
    }
  }

  private key(question: Question): Promise<Answer> {
    return new Promise((resolve) => {
      this.input.setRawMode?.(true);
      this.input.resume();
      const onData = (data: Buffer) => {
        const key = data.toString();
        if (key === '\u0003') {
          done();
          this.onInterrupt();
          resolve('no');
          return;
        }
        const answer = parse(key, this.always);
        if (!answer) return;
        done();
        resolve(answer);
      };
      const done = () => {
        this.input.off('data', onData);
        this.input.setRawMode?.(false);
        this.input.pause();
      };
      // Answered elsewhere: stop reading keys; the answer given elsewhere settles the question.
      question.cancel = done;
      this.input.on('data', onData);
    });
  }
}
