import type { Message, Usage } from '../index.js';
import type { ApprovalAnswer, TurnOutcome } from './agent-object.js';

/**
 * Talks to agent objects through a Restate server's ingress (plain HTTP: any language, `curl`, the CLI can do the
 * same). A prompt is a request–response call that returns when its turn ends; `send` only enqueues it.
 */
export interface AgentClient {
  prompt(agentId: string, prompt: string): Promise<TurnOutcome>;
  /** Enqueues a turn and returns its invocation id at once (the turn runs when the agent's earlier ones are done). */
  send(agentId: string, prompt: string, options?: { idempotencyKey?: string }): Promise<string>;
  /** Waits for a sent turn (by its invocation id) and returns its outcome; safe to call again after a lost connection. */
  result(invocationId: string): Promise<TurnOutcome>;
  history(agentId: string): Promise<Message[]>;
  usage(agentId: string): Promise<Usage>;
  /** Answers a call waiting for approval; false when no such call is waiting (yet, or any more). */
  approve(agentId: string, answer: ApprovalAnswer): Promise<boolean>;
}

export function agentClient(ingressUrl: string, name = 'troupe-agent'): AgentClient {
  const base = `${ingressUrl.replace(/\/$/, '')}/${name}`;
  const call = async <T>(agentId: string, handler: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/${encodeURIComponent(agentId)}/${handler}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body ?? null),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${name}/${agentId}/${handler}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
  return {
    prompt: (agentId, prompt) => call<TurnOutcome>(agentId, 'prompt', { prompt }),
    send: async (agentId, prompt, options = {}) => {
      const headers: Record<string, string> = options.idempotencyKey
        ? { 'idempotency-key': options.idempotencyKey }
        : {};
      const sent = await call<{ invocationId: string }>(agentId, 'prompt/send', { prompt }, headers);
      return sent.invocationId;
    },
    result: async (invocationId) => {
      const url = `${ingressUrl.replace(/\/$/, '')}/restate/invocation/${encodeURIComponent(invocationId)}/attach`;
      const response = await fetch(url);
      const text = await response.text();
      if (!response.ok) throw new Error(`invocation ${invocationId}: ${response.status} ${text}`);
      return JSON.parse(text) as TurnOutcome;
    },
    history: (agentId) => call<Message[]>(agentId, 'history', null),
    usage: (agentId) => call<Usage>(agentId, 'usage', null),
    approve: (agentId, answer) => call<boolean>(agentId, 'approve', answer),
  };
}
