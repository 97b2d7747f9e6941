/**
 * Waiting for a hosted turn (`troupe hosted prompt` and `attach`): its outcome, its questions meanwhile, Ctrl-C.
 */
import type { TurnOutcome } from '../restate/agent-object.js';
import type { AgentClient } from '../restate/client.js';
import { redactedArgs } from './agent-rows.js';
import { Approvals, questionLine, wantsToRun } from './approvals.js';
import { treeApprovals, WALKED, type WaitingCall } from './hosted-approvals.js';
import { EXIT, type RunIO } from './run.js';
import { summary } from './views.js';

/** How often a waiting turn's questions are looked for (one shared-handler call each time). */
const POLL_MS = 500;

/** What a command acts through, and how to say the command that answers a question. */
export interface Hosted {
  client: AgentClient;
  /** The agents' object name (the ingress path's first segment). */
  name: string;
  /** Restate's admin API, where subagents' questions are found; none: only the agent's own. */
  admin?: string;
  io: RunIO;
  json: boolean;
  /** `troupe hosted` with the options that reach the same agents, for the commands this one prints. */
  again: string;
}

export function write(hosted: Hosted, line: string): void {
  hosted.io.stdout.write(`${line}\n`);
}

function note(hosted: Hosted, line: string): void {
  if (hosted.json) write(hosted, JSON.stringify({ type: 'note', text: line }));
  else hosted.io.stderr(line);
}

/**
 * Waits for a turn's end, asking its tree's questions meanwhile (polled: a hosted turn's events stay in its
 * worker). Ctrl-C interrupts the turn through its control object; a second one leaves.
 */
export async function waitForTurn(hosted: Hosted, agentId: string, invocationId: string): Promise<number> {
  const { client, io } = hosted;
  let leave: (code: number) => void = () => {};
  const left = new Promise<number>((resolve) => {
    leave = resolve;
  });
  let interrupts = 0;
  const interrupt = () => {
    interrupts++;
    if (interrupts === 1) {
      note(hosted, `interrupting ${agentId}'s turn… (Ctrl-C again to leave it running)`);
      void client
        .interrupt(agentId)
        .catch((error: unknown) => note(hosted, `the interrupt was not sent: ${String(error)}`));
      return;
    }
    note(hosted, `left; the turn goes on: ${hosted.again} attach ${agentId} ${invocationId}`);
    leave(130);
  };
  const removeSigint = io.onSigint(interrupt);
  const questions = new Questions(hosted, agentId, interrupt);
  const polling = questions.watch();
  try {
    const outcome = await Promise.race([client.result(invocationId), left]);
    // A question still open was answered elsewhere (or the turn ended without it): said before the outcome.
    await questions.stop();
    if (typeof outcome === 'number') return outcome;
    return finish(hosted, outcome, invocationId);
  } finally {
    await questions.stop();
    removeSigint();
    await polling;
  }
}

function finish(hosted: Hosted, outcome: TurnOutcome, invocationId: string): number {
  if (hosted.json) write(hosted, JSON.stringify({ type: 'result', invocationId, ...outcome }));
  else {
    if (outcome.text) write(hosted, outcome.text);
    hosted.io.stderr(`done: ${summary(outcome, undefined)}`);
  }
  return EXIT[outcome.stopReason];
}

/**
 * The questions of a turn being waited for: each call waiting for approval is asked once (on a terminal: y / n, one
 * at a time; piped: printed with the commands that answer it), and a question still on the screen when the call
 * stops waiting (answered elsewhere, or the turn ended) stops waiting too.
 */
class Questions {
  private stopped = false;
  private wake: (() => void) | undefined;
  /** Calls asked, with what settles their question when they stop waiting without us. */
  private readonly asked = new Map<string, () => void>();
  private readonly approvals: Approvals | undefined;
  private unlistedSaid = false;
  /** Terminal questions not ended yet (asked, or waiting for their turn to be asked). */
  private readonly open = new Set<Promise<void>>();

  constructor(
    private readonly hosted: Hosted,
    private readonly agentId: string,
    onInterrupt: () => void,
  ) {
    const { io, json } = hosted;
    // Off a terminal nothing is read: the printed commands answer, from anywhere.
    if (io.stdin.isTTY && io.stdout.isTTY && !json) this.approvals = new Approvals(io.stdin, onInterrupt, false);
  }

  async watch(): Promise<void> {
    for (;;) {
      // A wait first: an answer just given (by whoever attaches right after answering) is still listed until the
      // turn wakes and takes it.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (this.stopped) return;
      let waiting: WaitingCall[];
      try {
        const tree = await treeApprovals(this.hosted.client, this.hosted.admin, this.hosted.name, this.agentId);
        if (tree.unlisted && !this.unlistedSaid && this.hosted.admin) {
          note(this.hosted, `${tree.unlisted}; ${WALKED}`);
          this.unlistedSaid = true;
        }
        waiting = tree.calls;
      } catch (error) {
        // A worker of an earlier release has no `pending` handler: the turn is still waited for.
        if (!this.stopped) note(this.hosted, `questions cannot be listed: ${(error as Error).message}`);
        return;
      }
      if (this.stopped) return;
      const now = new Set(waiting.map(keyOf));
      for (const [key, settle] of this.asked) if (!now.has(key)) settle();
      for (const call of waiting) if (!this.asked.has(keyOf(call))) this.ask(call);
    }
  }

  /** Stops looking; resolves once every open question has said how it ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    for (const settle of this.asked.values()) settle();
    await Promise.all(this.open);
    this.approvals?.close();
  }

  private ask(call: WaitingCall): void {
    let settle = () => {};
    const gone = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.asked.set(keyOf(call), settle);
    const { hosted } = this;
    const { agentId } = call;
    const what = wantsToRun(agentId, call);
    if (!this.approvals) {
      const answer = `${hosted.again} approve ${agentId} ${call.toolCallId}`;
      const refuse = `${hosted.again} deny ${agentId} ${call.toolCallId} --reason "…"`;
      if (hosted.json) {
        write(
          hosted,
          JSON.stringify({
            type: 'question',
            agentId,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            args: JSON.parse(redactedArgs(call.args)),
            text: what,
          }),
        );
      } else write(hosted, `? ${what} (call ${call.toolCallId})\n  approve: ${answer}\n  deny:    ${refuse}`);
      return;
    }
    const approvals = this.approvals;
    const question = approvals
      .ask(() => hosted.io.stdout.write(questionLine(what, false)), gone)
      .then(async (reply) => {
        hosted.io.stdout.write(`${reply === 'elsewhere' ? 'answered elsewhere' : reply}\n`);
        if (reply === 'elsewhere') return;
        const approve = reply !== 'no';
        const answered = await hosted.client.approve(agentId, {
          toolCallId: call.toolCallId,
          approve,
          ...(approve ? {} : { reason: 'The user declined this call.' }),
        });
        if (!answered) note(hosted, `${call.toolCallId} was answered elsewhere first`);
      })
      .catch((error: unknown) => note(hosted, `the answer was not sent: ${String(error)}`))
      .finally(() => this.open.delete(question));
    this.open.add(question);
  }
}

/** A call's key among a tree's: call ids are unique per agent only. */
const keyOf = (call: WaitingCall) => `${call.agentId}\u0000${call.toolCallId}`;
