/**
 * Waiting for a hosted turn (`troupe hosted prompt` and `attach`): the turn runs in a worker, so its questions are
 * polled from Restate, answered through the ingress, and Ctrl-C interrupts it through its object; a second Ctrl-C
 * leaves it running. The wait itself is `troupe run`'s (target.ts).
 */
import type { AgentClient } from '../restate/client.js';
import { treeApprovals, WALKED } from './hosted-approvals.js';
import { EXIT, type RunIO } from './run.js';
import { type CallWatcher, callKey, type PendingCall, type Target, waitForTurn } from './target.js';
import { OutcomeView } from './views.js';

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

/** Waits for a turn's end, asking its tree's questions meanwhile; resolves with the command's exit code. */
export async function waitForHostedTurn(hosted: Hosted, agentId: string, invocationId: string): Promise<number> {
  const view = new OutcomeView(hosted.io.stdout, hosted.io.stderr, hosted.json, invocationId);
  const target = hostedTarget(hosted, agentId, invocationId);
  const outcome = await waitForTurn(target, hosted.client.result(invocationId), {
    io: hosted.io,
    view,
    json: hosted.json,
  });
  if (outcome === 'left') return 130;
  view.finish(outcome);
  return EXIT[outcome.stopReason];
}

/** An agent's turn behind Restate's ingress, as `waitForTurn` drives it. */
export function hostedTarget(hosted: Hosted, agentId: string, invocationId: string): Target {
  const { client, again } = hosted;
  return {
    remembers: false,
    interrupting: `interrupting ${agentId}'s turn… (Ctrl-C again to leave it running)`,
    interrupt: async () => {
      await client.interrupt(agentId);
    },
    leave: () => `left; the turn goes on: ${again} attach ${agentId} ${invocationId}`,
    commands: (call) => ({
      approve: `${again} approve ${call.agentId} ${call.toolCallId}`,
      deny: `${again} deny ${call.agentId} ${call.toolCallId} --reason "…"`,
    }),
    answer: async (call, answer) => {
      const approve = answer !== 'no';
      const answered = await client.approve(call.agentId, {
        toolCallId: call.toolCallId,
        approve,
        ...(approve ? {} : { reason: 'The user declined this call.' }),
      });
      return answered ? undefined : `${call.toolCallId} was answered elsewhere first`;
    },
    watch: (watcher) => poll(hosted, agentId, watcher),
  };
}

/**
 * Polls the tree's waiting calls (a hosted turn's events stay in its worker): a call listed is waiting, one seen
 * before and listed no more has stopped waiting.
 */
function poll(hosted: Hosted, agentId: string, watcher: CallWatcher): () => Promise<void> {
  let stopped = false;
  let wake: (() => void) | undefined;
  const seen = new Map<string, PendingCall>();
  let unlistedSaid = false;
  const polling = (async () => {
    for (;;) {
      // A wait first: an answer just given (by whoever attaches right after answering) is still listed until the
      // turn wakes and takes it.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stopped) return;
      let waiting: PendingCall[];
      try {
        const tree = await treeApprovals(hosted.client, hosted.admin, hosted.name, agentId);
        if (tree.unlisted && !unlistedSaid && hosted.admin) {
          watcher.note(`${tree.unlisted}; ${WALKED}`);
          unlistedSaid = true;
        }
        waiting = tree.calls;
      } catch (error) {
        // A worker of an earlier release has no `pending` handler: the turn is still waited for.
        if (!stopped) watcher.note(`questions cannot be listed: ${(error as Error).message}`);
        return;
      }
      if (stopped) return;
      const now = new Set(waiting.map(callKey));
      for (const [key, call] of seen) if (!now.has(key)) watcher.settled(call);
      for (const call of waiting) {
        seen.set(callKey(call), call);
        watcher.waiting(call);
      }
    }
  })();
  return async () => {
    stopped = true;
    wake?.();
    await polling;
  };
}
