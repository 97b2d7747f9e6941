import { type Agent, type AgentEventOf, createAgent } from '../../src/index.js';
import { startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentClient, agentClient, serveAgents } from '../../src/restate/index.js';
import { missing } from '../helpers/requires.js';
import { until } from '../helpers/until.js';
import { sql, takesAnswered } from '../restate/fixtures/journal.js';
import type { Host, Outcome } from './host.js';
import { brokenCommands, brokenConfig, brokenSupervision, MUTANT } from './mutants.js';
import { conformanceObjects, objectName } from './objects.js';
import { configOf, FLAVOURS, flavourOf, log, supervisionOf } from './script.js';

export type { Host } from './host.js';

const outcomeOf = (result: Outcome): Outcome => ({
  stopReason: result.stopReason,
  text: result.text,
  usage: result.usage,
});

function embeddedHost(): Host {
  const roots = new Map<string, Agent>();
  const asked: AgentEventOf<'approval_requested'>[] = [];
  const notified = new Map<string, number>();
  const rootOf = (id: string): Agent => {
    let root = roots.get(id);
    if (!root) {
      root = createAgent({
        id,
        ...brokenConfig('embedded', configOf(id)),
        subagents: brokenSupervision('embedded', supervisionOf(flavourOf(id))),
      });
      root.on('approval_requested', (event) => asked.push(event), { subtree: true });
      root.on('notification', () => notified.set(id, (notified.get(id) ?? 0) + 1));
      roots.set(id, root);
    }
    return root;
  };
  return brokenCommands({
    name: 'embedded',
    prompt: async (root, text) => outcomeOf(await rootOf(root).prompt(text)),
    send: async (root, text) => ({ outcome: rootOf(root).prompt(text).then(outcomeOf) }),
    history: async (root) => [...rootOf(root).messages],
    usage: async (root) => rootOf(root).usage,
    steer: async (root, text) => rootOf(root).steer(text),
    interrupt: async (root) => rootOf(root).interrupt(),
    notifiedDuringTurn: async (root, cause) => {
      const agent = rootOf(root);
      const held = new Promise<void>((resolve) => {
        const off = agent.on('notification', () => {
          off();
          resolve();
        });
      });
      cause();
      await held;
    },
    notified: async (root, count) => {
      rootOf(root);
      await until(
        async () => notified.get(root) ?? 0,
        (n) => n >= count,
      );
    },
    approval: async (root, toolName) => {
      const agent = rootOf(root);
      const find = () => asked.findIndex((event) => event.toolName === toolName);
      await until(
        async () => find(),
        (i) => i >= 0,
      );
      const [event] = asked.splice(find(), 1);
      if (!event) throw new Error(`no call of ${toolName} asked for approval`);
      const target = { agentId: event.agentId, toolCallId: event.toolCallId };
      return {
        toolName,
        answer: async (approve, reason, remember) =>
          approve ? agent.approve(target, remember ? { remember } : {}) : agent.deny(target, reason),
      };
    },
    crash: async () => {},
    executed: () => [...log],
    close: async () => {
      await Promise.all([...roots.values()].map((root) => root.stop()));
    },
  });
}

/** Where the agents run for Restate: a worker's URL, and how to kill it, read its tools' log and stop it. */
export interface Deployment {
  url: string;
  crash(): Promise<void>;
  executed(): string[];
  close(): Promise<void>;
}

/** The worker in this process: it cannot be killed, and the tools' log is this process's. */
async function inProcess(): Promise<Deployment> {
  const worker = await serveAgents(conformanceObjects());
  return { url: worker.url, crash: async () => {}, executed: () => [...log], close: () => worker.close() };
}

export async function restateHost(deploy: () => Promise<Deployment> = inProcess): Promise<Host> {
  const server = await startRestateDevServer();
  const worker = await deploy();
  await server.register(worker.url);
  const clients = new Map(FLAVOURS.map((flavour) => [flavour, agentClient(server.ingressUrl, objectName(flavour))]));
  const clientOf = (id: string) => clients.get(flavourOf(id)) as AgentClient;
  /** The invocation of each root's turn that is running (sent and not yet answered). */
  const running = new Map<string, string>();
  const send = async (root: string, text: string) => {
    const invocation = await clientOf(root).send(root, text);
    running.set(root, invocation);
    const outcome = clientOf(root)
      .result(invocation)
      .then((result) => {
        if (running.get(root) === invocation) running.delete(root);
        return outcomeOf(result);
      });
    return { outcome };
  };
  /** Runs `cause`, then waits until the root's running turn (if any) has taken what came meanwhile. */
  const taken = async (root: string, cause: () => unknown) => {
    const turn = running.get(root);
    const before = turn ? await takesAnswered(server.adminUrl, turn) : 0;
    await cause();
    if (turn)
      await until(
        () => takesAnswered(server.adminUrl, turn),
        (n) => n > before,
      );
  };
  /** The root and every agent below it that works now. */
  const tree = async (root: string): Promise<string[]> => {
    const found = [root];
    for (let i = 0; i < found.length; i++) found.push(...(await clientOf(root).subagents(found[i] as string)));
    return found;
  };
  return {
    name: 'restate',
    prompt: async (root, text) => (await send(root, text)).outcome,
    send,
    history: (root) => clientOf(root).history(root),
    usage: (root) => clientOf(root).usage(root),
    steer: (root, text) => taken(root, () => clientOf(root).steer(root, text)),
    // A notification rings the turn's doorbell as a steer does: the turn takes it from its control object.
    notifiedDuringTurn: (root, cause) => taken(root, cause),
    // A child's result is a message to the parent's exclusive `notify` handler: a prompt sent later runs after it.
    // Only the agent object's own `notify` counts: its control object (same key) has one too, which the task book
    // calls before it sends the agent's, so counting that one would let a prompt overtake the result.
    notified: async (root, count) => {
      const query =
        'SELECT COUNT(*) AS n FROM sys_invocation ' +
        `WHERE target_service_name = '${objectName(flavourOf(root))}' AND target_service_key = '${root}' ` +
        "AND target_handler_name = 'notify' AND status = 'completed'";
      const done = async () => Number((await sql<{ n: number }>(server.adminUrl, query))[0]?.n);
      await until(done, (n) => n >= count);
    },
    interrupt: async (root) => {
      await clientOf(root).interrupt(root);
    },
    approval: async (root, toolName) => {
      const client = clientOf(root);
      const waiting = async () => {
        for (const agentId of await tree(root)) {
          const call = (await client.pendingApprovals(agentId)).find((pending) => pending.toolName === toolName);
          if (call) return { agentId, toolCallId: call.toolCallId };
        }
        return undefined;
      };
      const found = await until(waiting, (call) => call !== undefined);
      if (!found) throw new Error(`no call of ${toolName} asked for approval`);
      return {
        toolName,
        answer: (approve, reason, remember) =>
          client.approve(found.agentId, {
            toolCallId: found.toolCallId,
            approve,
            ...(reason === undefined ? {} : { reason }),
            ...(remember ? { remember } : {}),
          }),
      };
    },
    crash: () => worker.crash(),
    executed: () => worker.executed(),
    close: async () => {
      await worker.close();
      await server.stop();
    },
  };
}

/**
 * The embedded host (named `embedded`) and, where restate-server can run, one started by `restate` (named
 * `restateName`); Restate's is left out, with a reason, where it cannot run. With a mutant
 * (`TROUPE_CONFORMANCE_MUTANT`, mutants.ts), the host it breaks alone.
 */
export function hostsWith(
  restate: () => Promise<Host>,
  restateName = 'restate',
  embeddedName = 'embedded',
): [string, () => Promise<Host>][] {
  if (MUTANT?.host === 'embedded') return [[`${embeddedName}, broken: ${MUTANT.name}`, async () => embeddedHost()]];
  if (MUTANT)
    return missing('restate', 'a Restate mutant') ? [] : [[`${restateName}, broken: ${MUTANT.name}`, restate]];
  return [
    [embeddedName, async () => embeddedHost()],
    ...(missing('restate', 'the conformance suite on Restate')
      ? []
      : [[restateName, restate] as [string, () => Promise<Host>]]),
  ];
}

/** The hosts every scenario runs on; Restate's is left out, with a reason, where restate-server cannot run. */
export const HOSTS = hostsWith(() => restateHost());
