/**
 * How a turn is shown. `troupe run`'s: drawn in place on a terminal, one line per event when piped, JSON lines with
 * `--json`, all three from the same event stream (the root's `on('*', …, { subtree: true })` sees the whole tree).
 * `troupe prompt` shows a turn's outcome only, the same on both targets (`OutcomeView`).
 */
import type { AgentEvent, RunResult, Usage } from '../index.js';
import { AgentRows, describeCall } from './agent-rows.js';
import { costOf } from './prices.js';

/** How a turn ended, as a view shows it. */
export type TurnEnd = Pick<RunResult, 'stopReason' | 'text' | 'usage'> & {
  agentId?: string;
  /** A hosted turn's handle (`troupe attach` takes it). */
  invocationId?: string;
  error?: RunResult['error'];
};

export interface View {
  onEvent(event: AgentEvent): void;
  /** A line that stays (a notice, an approval's outcome). */
  note(line: string): void;
  /** Stops drawing while a question is on the screen. */
  pause(): void;
  resume(): void;
  /** The run's end; `total` is the whole tree's usage. */
  finish(result: TurnEnd | undefined, total?: Usage): void;
}

export interface Output {
  write(text: string): void;
  columns?: number;
}

function tokens(n: number): string {
  return n < 1000 ? `${n}` : `${(n / 1000).toFixed(1)}k`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** How a turn ended, in one line: its stop reason, tokens, cost where the model's price is known, its error. */
export function summary(result: Omit<TurnEnd, 'text'> | undefined, model: string | undefined, total?: Usage): string {
  if (!result) return 'run ended';
  const u = total ?? result.usage;
  const cost = model === undefined ? undefined : costOf(model, u);
  const parts = [
    `${result.stopReason}`,
    `${tokens(u.input + u.cacheRead + u.cacheWrite)} in / ${tokens(u.output)} out`,
  ];
  if (cost !== undefined) parts.push(`$${cost.toFixed(4)}`);
  if (result.error) parts.push(`${result.error.code}: ${result.error.message}`);
  return parts.join(' · ');
}

/** `--json`: every event as one line of JSON, then the result. */
export class JsonView implements View {
  constructor(private readonly out: Output) {}
  onEvent(event: AgentEvent): void {
    this.out.write(`${JSON.stringify(event)}\n`);
  }
  note(line: string): void {
    this.out.write(`${JSON.stringify({ type: 'note', text: line })}\n`);
  }
  pause(): void {}
  resume(): void {}
  finish(result: TurnEnd | undefined, total?: Usage): void {
    this.out.write(
      `${JSON.stringify({ type: 'result', stopReason: result?.stopReason ?? 'interrupted', text: result?.text ?? '', usage: total ?? result?.usage, error: result?.error })}\n`,
    );
  }
}

/**
 * `troupe prompt` and `attach`, on either target: the answer on stdout, how the turn ended and every notice on
 * stderr; with `--json`, JSON lines on stdout. A hosted turn's events stay in its worker, so no event is drawn.
 */
export class OutcomeView implements View {
  constructor(
    private readonly out: Output,
    private readonly stderr: (line: string) => void,
    private readonly json: boolean,
  ) {}
  onEvent(): void {}
  note(line: string): void {
    if (this.json) this.out.write(`${JSON.stringify({ type: 'note', text: line })}\n`);
    else this.stderr(line);
  }
  pause(): void {}
  resume(): void {}
  finish(result: TurnEnd | undefined): void {
    if (!result) return;
    if (this.json) {
      const { invocationId, agentId, stopReason, text, usage, error } = result;
      const line = { type: 'result', invocationId, agentId, stopReason, text, usage, error };
      this.out.write(`${JSON.stringify(line)}\n`);
      return;
    }
    if (result.text) this.out.write(`${result.text}\n`);
    this.stderr(`done: ${summary(result, undefined)}`);
  }
}

/** Piped: one plain line per thing that happened, the root's answer as it completes. */
export class PlainView implements View {
  /** Labels of the calls running now: `tool_execution_end` carries only the tool's name. */
  private readonly titles = new Map<string, string>();

  constructor(
    private readonly out: Output,
    private readonly rootId: string,
    private readonly model: string,
  ) {}

  onEvent(event: AgentEvent): void {
    const who = event.agentId;
    switch (event.type) {
      case 'tool_execution_start':
        if (event.label) this.titles.set(event.toolCallId, event.label);
        this.line(`${who}: ${describeCall(event)}`);
        break;
      case 'tool_execution_end': {
        const title = this.titles.get(event.toolCallId) ?? event.toolName;
        this.titles.delete(event.toolCallId);
        this.line(
          `${who}: ${title} ${event.result.isError ? 'failed' : 'done'} (${Math.round(event.durationMs)} ms)${
            event.result.isError ? `: ${firstLine(event.result.content)}` : ''
          }`,
        );
        break;
      }
      case 'subagent_start':
        this.line(`${who}: started ${event.childId}`);
        break;
      case 'subagent_end':
        this.line(`${who}: ${event.childId} ${event.status}`);
        break;
      case 'approval_requested':
        this.line(`${who}: asks to run ${describeCall(event)}`);
        break;
      case 'permission_denied':
        this.line(`${who}: ${describeCall(event)} refused${event.reason ? `: ${event.reason}` : ''}`);
        break;
      case 'message_end': {
        if (event.message.role !== 'assistant' || event.discarded) break;
        const text = event.message.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
        if (text) this.line(who === this.rootId ? `${who}> ${text}` : `${who}: ${text.split('\n')[0]}`);
        break;
      }
      case 'model_retry':
        this.line(`${who}: retrying in ${event.delayMs} ms (${event.error.code})`);
        break;
    }
  }
  note(line: string): void {
    this.line(line);
  }
  /** A question is on its line: what happens meanwhile waits below it, not in the middle of it. */
  pause(): void {
    this.held ??= [];
  }
  resume(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const text of held) this.line(text);
  }
  finish(result: TurnEnd | undefined, total?: Usage): void {
    this.resume();
    this.line(`done: ${summary(result, this.model, total)}`);
  }
  private held: string[] | undefined;
  private line(text: string): void {
    if (this.held) this.held.push(text);
    else this.out.write(`${text}\n`);
  }
}

function firstLine(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return (content.find((c) => c.type === 'text')?.text ?? '').split('\n')[0] ?? '';
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const MARK: Record<string, string> = { done: '✓', failed: '✗', interrupted: '■', idle: '·', waiting: '?' };
const FRAME_MS = 80;

/**
 * A terminal: the tree of agents is redrawn in place under the output that stays (the root's answer, streamed
 * line by line, and notices). Each frame moves the cursor back over the previous tree and clears to the end.
 */
export class LiveView implements View {
  private readonly rows = new AgentRows();
  private drawn = 0;
  private partial = '';
  private paused = false;
  private timer: NodeJS.Timeout | undefined;
  private tick = 0;
  private readonly started = Date.now();

  constructor(
    private readonly out: Output,
    private readonly rootId: string,
    private readonly model: string,
  ) {
    this.out.write('\x1b[?25l');
    this.timer = setInterval(() => this.draw(), FRAME_MS);
    this.timer.unref();
  }

  onEvent(event: AgentEvent): void {
    this.rows.apply(event);
    if (event.agentId !== this.rootId) return;
    if (event.type === 'message_update' && event.delta.type === 'text') {
      this.partial += event.delta.delta;
      const end = this.partial.lastIndexOf('\n');
      if (end !== -1) {
        this.keep(this.partial.slice(0, end));
        this.partial = this.partial.slice(end + 1);
      }
    } else if (event.type === 'message_end' && event.message.role === 'assistant') {
      if (this.partial) this.keep(this.partial);
      this.partial = '';
    }
  }

  note(line: string): void {
    this.keep(`\x1b[2m${line}\x1b[0m`);
  }

  pause(): void {
    this.paused = true;
    this.clear();
  }

  resume(): void {
    this.paused = false;
    this.draw();
  }

  finish(result: TurnEnd | undefined, total?: Usage): void {
    clearInterval(this.timer);
    this.paused = false;
    if (this.partial) this.keep(this.partial);
    this.partial = '';
    this.draw();
    this.out.write(`\x1b[?25h${summary(result, this.model, total)} · ${seconds(Date.now() - this.started)}\n`);
  }

  /** Writes lines that stay, above the tree. */
  private keep(text: string): void {
    this.clear();
    this.out.write(`${text}\n`);
    this.draw();
  }

  private clear(): void {
    if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}F\x1b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    if (this.paused) return;
    this.clear();
    const width = Math.max(40, (this.out.columns ?? 100) - 1);
    const lines: string[] = [];
    if (this.partial) lines.push(this.partial.slice(-width));
    const spin = SPINNER[this.tick++ % SPINNER.length] as string;
    const now = Date.now();
    for (const row of this.rows.ordered()) {
      const mark = MARK[row.status] ?? spin;
      const what = row.status === 'tool' || row.status === 'waiting' ? (row.tool ?? '') : row.status;
      const cost = costOf(this.model, row.usage);
      const figures = `${tokens(row.tokens)} tok${cost === undefined ? '' : ` $${cost.toFixed(4)}`} ${seconds((row.endedAt ?? now) - row.startedAt)}`;
      const left = `${'  '.repeat(row.depth)}${mark} ${row.id}  ${what}`;
      const room = width - figures.length - 2;
      lines.push(`${left.length > room ? `${left.slice(0, room - 1)}…` : left.padEnd(room)}  \x1b[2m${figures}\x1b[0m`);
    }
    if (lines.length === 0) return;
    this.out.write(`${lines.join('\n')}\n`);
    this.drawn = lines.length;
  }
}
