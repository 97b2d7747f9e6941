import type { Message, Usage } from '../index.js';
import type { ApprovalAnswer, TurnOutcome } from './agent-object.js';
import { controlName } from './control.js';

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
  /**
   * Adds a user message to the agent's running turn at its next step boundary (with no turn running, it starts
   * one). Returns once Restate has accepted it, durably, with its invocation id: the turn takes it exactly once.
   * The same `idempotencyKey` sent again is accepted once.
   */
  steer(agentId: string, text: string, options?: { idempotencyKey?: string }): Promise<string>;
  /**
   * Stops the agent's running turn: its calls are aborted, open tool calls get an "interrupted" result, and the
   * turn ends with stop reason `interrupted`. Nothing when no turn runs. Returns once accepted, like `steer`.
   */
  interrupt(agentId: string, options?: { idempotencyKey?: string }): Promise<string>;
}

export function agentClient(ingressUrl: string, name = 'troupe-agent'): AgentClient {
  const base = ingressUrl.replace(/\/$/, '');
  const call = async <T>(
    agentId: string,
    handler: string,
    body: unknown,
    headers: Record<string, string> = {},
    object = name,
  ) => {
    const response = await fetch(`${base}/${object}/${encodeURIComponent(agentId)}/${handler}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body ?? null),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${object}/${agentId}/${handler}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
  const idempotency = (options: { idempotencyKey?: string }): Record<string, string> =>
    options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {};
  /** A message to the agent's control object, sent one-way: accepted (durably) when this returns. */
  const control = async (agentId: string, handler: string, body: unknown, options: { idempotencyKey?: string }) => {
    const sent = await call<{ invocationId: string }>(
      agentId,
      `${handler}/send`,
      body,
      idempotency(options),
      controlName(name),
    );
    return sent.invocationId;
  };
  return {
    prompt: (agentId, prompt) => call<TurnOutcome>(agentId, 'prompt', { prompt }),
    send: async (agentId, prompt, options = {}) => {
      const sent = await call<{ invocationId: string }>(agentId, 'prompt/send', { prompt }, idempotency(options));
      return sent.invocationId;
    },
    result: async (invocationId) => {
      const url = `${base}/restate/invocation/${encodeURIComponent(invocationId)}/attach`;
      const response = await fetch(url);
      const text = await response.text();
      if (!response.ok) throw new Error(`invocation ${invocationId}: ${response.status} ${text}`);
      return JSON.parse(text) as TurnOutcome;
    },
    history: (agentId) => call<Message[]>(agentId, 'history', null),
    usage: (agentId) => call<Usage>(agentId, 'usage', null),
    approve: (agentId, answer) => call<boolean>(agentId, 'approve', answer),
    steer: (agentId, text, options = {}) => control(agentId, 'steer', { text }, options),
    interrupt: (agentId, options = {}) => control(agentId, 'interrupt', null, options),
  };
}
