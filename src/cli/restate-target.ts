/**
 * The agents hosted behind a Restate ingress (`--restate`), as the verbs reach them: a turn runs in a worker, so
 * its questions are polled from Restate and answered through the ingress, and Ctrl-C interrupts it through its
 * object; a second Ctrl-C leaves it running. Loaded only when a command names Restate.
 */
import { type AgentClient, agentClient, IngressError } from '../restate/client.js';
import type { AgentTarget } from './agents.js';
import { treeApprovals, WALKED } from './hosted-approvals.js';
import type { CallWatcher, PendingCall, StartedTurn, Target } from './target.js';
import { callKey } from './target.js';

/** How often a waiting turn's questions are looked for (one shared-handler call each time). */
const POLL_MS = 500;

/** Where the agents are, and how a printed command reaches them again. */
export interface Restate {
  ingress: string;
  /** The agents' object name (the ingress path's first segment). */
  name: string;
  /** Restate's admin API, where subagents' questions are found; none: the tree is walked through the ingress. */
  admin?: string;
  /** The options a printed command needs to reach the same agents (those given on the command line). */
  again: string;
}

/** The hosted agents as the verbs reach them. */
export function restateAgents(restate: Restate, client = agentClient(restate.ingress, restate.name)): AgentTarget {
  const keyed = (key: string | undefined) => (key === undefined ? {} : { idempotencyKey: key });
  const attach = (agentId: string, invocationId: string): StartedTurn => ({
    target: hostedTarget(restate, client, agentId, invocationId),
    turn: client.result(invocationId).then((outcome) => ({ ...outcome, invocationId })),
    close: async () => {},
  });
  return {
    prompt: async (agentId, text, _view, key) => attach(agentId, await client.send(agentId, text, keyed(key))),
    attach,
    send: (agentId, text, key) => client.send(agentId, text, keyed(key)),
    steer: (agentId, text, key) => client.steer(agentId, text, keyed(key)),
    interrupt: (agentId, key) => client.interrupt(agentId, keyed(key)),
    approvals: (agentId) => treeApprovals(client, restate.admin, restate.name, agentId),
    approve: (agentId, answer) => client.approve(agentId, answer),
    history: (agentId) => client.history(agentId),
    usage: (agentId) => client.usage(agentId),
    cannot: (verb) => `${verb} is not a verb of hosted agents`,
    refused: (error) => {
      if (!(error instanceof IngressError)) return undefined;
      // Restate answers 404 for an object it does not know: no worker registered, or another name.
      const hint = ` (is a worker serving ${restate.name} registered? --name picks the object)`;
      return `${error.message}${error.status === 404 ? hint : ''}`;
    },
  };
}

/** An agent's turn behind Restate's ingress, as `waitForTurn` drives it. */
export function hostedTarget(restate: Restate, client: AgentClient, agentId: string, invocationId: string): Target {
  const { again } = restate;
  return {
    remembers: false,
    interrupting: `interrupting ${agentId}'s turn… (Ctrl-C again to leave it running)`,
    interrupt: async () => {
      await client.interrupt(agentId);
    },
    leave: () => `left; the turn goes on: troupe attach ${agentId} ${invocationId}${again}`,
    commands: (call) => ({
      approve: `troupe approve ${call.agentId} ${call.toolCallId}${again}`,
      deny: `troupe deny ${call.agentId} ${call.toolCallId} --reason "…"${again}`,
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
    watch: (watcher) => poll(restate, client, agentId, watcher),
  };
}

/**
 * Polls the tree's waiting calls (a hosted turn's events stay in its worker): a call listed is waiting, one seen
 * before and listed no more has stopped waiting.
 */
function poll(restate: Restate, client: AgentClient, agentId: string, watcher: CallWatcher): () => Promise<void> {
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
        const tree = await treeApprovals(client, restate.admin, restate.name, agentId);
        if (tree.unlisted && !unlistedSaid && restate.admin) {
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
