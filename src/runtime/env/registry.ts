// Where the machines' provided actions and workers find an agent's runtime side: by actor system and agent id,
// since an env never enters machine context (snapshots stay plain data).
import type { ActorSystem, AnyActorRef } from 'xstate';
import type { AgentEnv } from './env.js';

// biome-ignore lint/suspicious/noExplicitAny: XState's own AnyActorSystem is ActorSystem<any> but is not exported.
export type AnyActorSystem = ActorSystem<any>;

// Envs are found by (actor system, agent id): ids are unique within a system, and a system's envs go with it.
const registry = new WeakMap<AnyActorSystem, Map<string, AgentEnv>>();

export function registerEnv(system: AnyActorSystem, env: AgentEnv): void {
  let envs = registry.get(system);
  if (!envs) {
    envs = new Map();
    registry.set(system, envs);
  }
  if (envs.has(env.agentId)) throw new Error(`An agent with id "${env.agentId}" already exists in this system`);
  envs.set(env.agentId, env);
}

export function unregisterEnv(system: AnyActorSystem, agentId: string): void {
  registry.get(system)?.delete(agentId);
}

/**
 * Journals an answer to `target`'s call waiting for approval, when `target` is an agent with a session. `call` is
 * what the caller passed: the `approval_requested` event itself carries the question's `seq`.
 */
export function journalAnswer(
  target: AnyActorRef,
  call: string | { toolCallId: string; seq?: number },
  approved: boolean,
  reason?: string,
): void {
  const agentId = (target.getSnapshot() as { context?: { agentId?: unknown } } | undefined)?.context?.agentId;
  if (typeof agentId !== 'string') return;
  const env = registry.get(target.system)?.get(agentId);
  if (!env) return;
  if (typeof call === 'string') env.journal.answered(call, approved, reason);
  else env.journal.answered(call.toolCallId, approved, reason, typeof call.seq === 'number' ? call.seq : undefined);
}

export function envOf(system: AnyActorSystem, agentId: string): AgentEnv {
  const env = registry.get(system)?.get(agentId);
  if (!env) throw new Error(`No runtime for agent "${agentId}": agents must be created with createAgent()`);
  return env;
}
