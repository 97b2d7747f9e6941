/**
 * Waiting for a turn, whichever runtime runs it: `troupe run`, `resume` and `prompt` on a session drive agents in
 * this process, `troupe prompt` and `attach` with `--restate` agents hosted behind Restate's ingress. A
 * {@link Target} says how the calls waiting for approval are learned of (events here, polling there), how one is
 * answered and how the turn is stopped; the wait, Ctrl-C, the questions and the exit code are this module's, the
 * same for both, and what is shown goes through a `View`.
 */
import type { RunResult, Usage } from '../index.js';
import type { JsonValue } from '../protocol/index.js';
import { redactedArgs } from './agent-rows.js';
import { type Answer, Approvals, type Input, questionLine, wantsToRun } from './approvals.js';
import type { Output, TurnEnd, View } from './views.js';

/** A turn's exit code, by its stop reason (every command that waits for a turn). */
export const EXIT: Record<RunResult['stopReason'], number> = {
  completed: 0,
  error: 1,
  guardrail_tripped: 1,
  max_steps: 3,
  budget_exhausted: 3,
  repetition: 3,
  interrupted: 130,
};

/** A turn under way on a target: what waits for it, and what is let go once it has ended. */
export interface StartedTurn {
  target: Target;
  /** Its end; undefined when there was nothing to run (a resume with nothing in flight). */
  turn: Promise<TurnEnd | undefined>;
  /** The whole tree's usage, where the target knows it (the view's total). */
  total?(): Usage;
  close(): Promise<void>;
}

/** Waits for a started turn (questions asked, Ctrl-C handled), shows its end and resolves with the exit code. */
export async function awaitTurn(started: StartedTurn, ui: WaitUi): Promise<number> {
  let ended: TurnEnd | undefined | 'left';
  try {
    ended = await waitForTurn(started.target, started.turn, ui);
    return ended === 'left' ? 130 : ended ? EXIT[ended.stopReason] : 0;
  } finally {
    // Left: the target has said so and is on its way out.
    if (ended !== 'left') ui.view.finish(ended, started.total?.());
    await started.close();
  }
}

/** A call of the turn's tree that waits for approval, with the agent it belongs to. */
export interface PendingCall {
  agentId: string;
  toolCallId: string;
  toolName: string;
  label?: string;
  args: JsonValue;
}

/** What names a call in a tree: call ids are unique per agent only. */
export type CallKey = Pick<PendingCall, 'agentId' | 'toolCallId'>;

/** Told of calls as they start waiting, and as they stop waiting without an answer from here. */
export interface CallWatcher {
  waiting(call: PendingCall): void;
  /** Answered elsewhere (the inspector's page, another command), or closed by an interrupt or the turn's end. */
  settled(call: CallKey): void;
  /** A line about the watching itself (what it cannot see). */
  note(line: string): void;
}

export interface Target {
  /** Starts telling `watcher` of the tree's waiting calls; the function returned stops, once it has. */
  watch(watcher: CallWatcher): () => Promise<void>;
  /** Answers a call; resolves with a line to show after it, if any. */
  answer(call: PendingCall, answer: Answer): Promise<string | undefined>;
  /** The first Ctrl-C: stops the running turn. */
  interrupt(): Promise<void>;
  /** What the first Ctrl-C says. */
  readonly interrupting: string;
  /** The second Ctrl-C: stops waiting (what becomes of the turn is the target's) and says what it did. */
  leave(): string | undefined;
  /** Whether "always" is an answer: it remembers a rule, so only where the permissions live. */
  readonly remembers: boolean;
  /**
   * The commands that answer a call from anywhere, when the turn can be answered without this process: printed
   * instead of asking wherever no key can be read (a pipe, `--json`). None: the question reads a line from stdin.
   */
  commands?(call: PendingCall): { approve: string; deny: string };
}

/** What the wait shows and reads: a command's terminal or pipes, and its Ctrl-C. */
export interface WaitUi {
  io: {
    stdout: Output & { isTTY?: boolean };
    stdin: Input;
    /** Registers the Ctrl-C handler; returns its removal. */
    onSigint(handler: () => void): () => void;
  };
  view: View;
  json: boolean;
}

/**
 * Waits for `turn` while asking the questions of its tree; Ctrl-C stops the turn, a second one leaves: resolves
 * with `left` then. Every question still open has said how it ended when this resolves.
 */
export async function waitForTurn<T>(target: Target, turn: Promise<T>, ui: WaitUi): Promise<T | 'left'> {
  let leave: () => void = () => {};
  const left = new Promise<'left'>((resolve) => {
    leave = () => resolve('left');
  });
  let interrupts = 0;
  const interrupt = () => {
    interrupts++;
    if (interrupts === 1) {
      ui.view.note(target.interrupting);
      void target.interrupt().catch((error: unknown) => ui.view.note(`the interrupt was not sent: ${String(error)}`));
      return;
    }
    const said = target.leave();
    if (said) ui.view.note(said);
    leave();
  };
  const removeSigint = ui.io.onSigint(interrupt);
  const questions = new Questions(target, ui, interrupt);
  const stopWatching = target.watch(questions);
  try {
    return await Promise.race([turn, left]);
  } finally {
    await stopWatching();
    await questions.stop();
    removeSigint();
  }
}

/**
 * The questions of a turn: each waiting call is asked once (on a terminal: a key, one question at a time; else a
 * line from stdin, or, where the target can be answered from anywhere, printed with the commands that answer it),
 * and a question still open when its call stops waiting without us says so and stops waiting too.
 */
class Questions implements CallWatcher {
  /** Calls asked, with what settles their question. */
  private readonly asked = new Map<string, () => void>();
  /** Questions not ended yet (asked, or waiting for their turn to be asked). */
  private readonly open = new Set<Promise<void>>();
  private readonly approvals: Approvals | undefined;

  constructor(
    private readonly target: Target,
    private readonly ui: WaitUi,
    onInterrupt: () => void,
  ) {
    const { io, json } = ui;
    const printed = target.commands && (json || !(io.stdin.isTTY && io.stdout.isTTY));
    if (!printed) this.approvals = new Approvals(io.stdin, onInterrupt, target.remembers);
  }

  note(line: string): void {
    this.ui.view.note(line);
  }

  settled(call: CallKey): void {
    this.asked.get(callKey(call))?.();
  }

  waiting(call: PendingCall): void {
    const key = callKey(call);
    if (this.asked.has(key)) return;
    let settle = () => {};
    const gone = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.asked.set(key, settle);
    const { io, view, json } = this.ui;
    const what = wantsToRun(call.agentId, call);
    const write = (text: string) => io.stdout.write(text);
    const asJson = () =>
      `${JSON.stringify({
        type: 'question',
        agentId: call.agentId,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        args: JSON.parse(redactedArgs(call.args)),
        text: what,
      })}\n`;
    const commands = this.target.commands?.(call);
    if (!this.approvals) {
      if (json) write(asJson());
      else
        write(`? ${what} (call ${call.toolCallId})\n  approve: ${commands?.approve}\n  deny:    ${commands?.deny}\n`);
      return;
    }
    const show = () => {
      view.pause();
      write(json ? asJson() : questionLine(what, this.target.remembers));
    };
    const question = this.approvals
      .ask(show, gone)
      .then(async (reply) => {
        if (!json) write(`${reply === 'elsewhere' ? 'answered elsewhere' : reply}\n`);
        view.resume();
        if (reply === 'elsewhere') return;
        const said = await this.target.answer(call, reply);
        if (said) view.note(said);
      })
      .catch((error: unknown) => view.note(`the answer was not sent: ${String(error)}`))
      .finally(() => this.open.delete(question));
    this.open.add(question);
  }

  /** Settles every question; resolves once each has said how it ended. */
  async stop(): Promise<void> {
    for (const settle of this.asked.values()) settle();
    await Promise.all(this.open);
    this.approvals?.close();
  }
}

/** A call's key among a tree's. */
export const callKey = (call: CallKey) => `${call.agentId}\u0000${call.toolCallId}`;
