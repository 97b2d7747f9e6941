import type { Message, Usage } from '../index.js';
import type { ApprovalAnswer, PendingApproval, TurnOutcome } from './agent-object.js';
import { controlName } from './control.js';
import { taskBookName } from './task-book.js';

/**
 * Talks to agent objects through a Restate server's ingress (plain HTTP: any language, `curl`, the CLI can do the
 * same). A prompt is a request–response call that returns when its turn ends; `send` only enqueues it.
 */
export interface AgentClient {
  /** Runs a turn of the agent and returns its outcome when the turn ends (the agent is created on its first prompt). */
  prompt(agentId: string, prompt: string): Promise<TurnOutcome>;
  /** Enqueues a turn and returns its invocation id at once (the turn runs when the agent's earlier ones are done). */
  send(agentId: string, prompt: string, options?: { idempotencyKey?: string }): Promise<string>;
  /** Waits for a sent turn (by its invocation id) and returns its outcome; safe to call again after a lost connection. */
  result(invocationId: string): Promise<TurnOutcome>;
  /** The agent's history as its object keeps it. */
  history(agentId: string): Promise<Message[]>;
  /** The tokens the agent has used over its life. */
  usage(agentId: string): Promise<Usage>;
  /** Answers a call waiting for approval; false when no such call is waiting (yet, or any more). */
  approve(agentId: string, answer: ApprovalAnswer): Promise<boolean>;
  /** The agent's calls waiting for approval now (its own: a subagent's are listed under the subagent's id). */
  pendingApprovals(agentId: string): Promise<PendingApproval[]>;
  /**
   * The agent's subagents at work now: its foreground batches' children, its running background tasks, and those
   * whose task has settled but that run a turn again (a steer sent to them directly woke them), among the settled
   * tasks its book keeps (`keepHistory`). Not theirs: walk down for those.
   */
  subagents(agentId: string): Promise<string[]>;
  /**
   * Adds a user message to the agent's running turn at its next step boundary (with no turn running, it starts
   * one). Returns once Restate has accepted it, durably, with its invocation id: the turn takes it exactly once.
   * The same `idempotencyKey` sent again is accepted once.
   */
  steer(agentId: string, text: string, options?: { idempotencyKey?: string }): Promise<string>;
  /**
   * Stops the agent's running turn: its calls are aborted, open tool calls get an "interrupted" result, and the
   * turn ends with stop reason `interrupted`. Nothing when no turn runs. Returns with its invocation id once the
   * control object has decided (so a prompt sent afterwards is never the turn it stops): while the worker is down,
   * that is once a worker is back.
   */
  interrupt(agentId: string, options?: { idempotencyKey?: string }): Promise<string>;
}

/**
 * A request Restate's ingress refused or could not be sent: `status` is the HTTP status, absent when the ingress
 * could not be reached at all. Its message is one line that says which request and why.
 */
export class IngressError extends Error {
  override readonly name = 'IngressError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Node's fetch gives up on response headers after 5 minutes; an attached turn may run longer than that. */
const HEADERS_TIMEOUT = 'UND_ERR_HEADERS_TIMEOUT';

/**
 * A client of the agent objects named `name` behind a Restate server's ingress (e.g. `http://localhost:8080`): prompts,
 * steers, approvals and the agent's state, over plain HTTP.
 */
export function agentClient(ingressUrl: string, name = 'troupe-agent'): AgentClient {
  const base = ingressUrl.replace(/\/$/, '');
  /** One request to the ingress, its failures as `IngressError`s. */
  const request = async <T>(what: string, url: string, init?: RequestInit): Promise<T> => {
    let response: Response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      if (cause?.code === HEADERS_TIMEOUT) throw error;
      throw new IngressError(`cannot reach Restate's ingress at ${base}: ${cause?.code ?? cause?.message ?? error}`);
    }
    const text = await response.text();
    if (!response.ok) throw new IngressError(`${what}: ${response.status} ${reason(text)}`, response.status);
    return JSON.parse(text) as T;
  };
  const call = <T>(
    agentId: string,
    handler: string,
    body: unknown,
    headers: Record<string, string> = {},
    object = name,
  ) =>
    request<T>(`${object}/${agentId}/${handler}`, `${base}/${object}/${encodeURIComponent(agentId)}/${handler}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body ?? null),
    });
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
      for (;;) {
        try {
          return await request<TurnOutcome>(`invocation ${invocationId}`, url);
        } catch (error) {
          // Attaching again is safe (the turn goes on without us): a long turn outlives the client's wait.
          if ((error as { cause?: { code?: string } }).cause?.code !== HEADERS_TIMEOUT) throw error;
        }
      }
    },
    history: (agentId) => call<Message[]>(agentId, 'history', null),
    usage: (agentId) => call<Usage>(agentId, 'usage', null),
    approve: (agentId, answer) => call<boolean>(agentId, 'approve', answer),
    pendingApprovals: (agentId) => call<PendingApproval[]>(agentId, 'pending', null),
    subagents: async (agentId) => {
      const book = taskBookName(name);
      const [foreground, background, settled] = await Promise.all([
        call<string[]>(agentId, 'foreground', null),
        call<string[]>(agentId, 'running', null, {}, book),
        // A worker of an earlier release keeps no such list: its settled subagents are not looked at.
        call<string[]>(agentId, 'settled', null, {}, book).catch((): string[] => []),
      ]);
      const working = new Set([...foreground, ...background]);
      // A subagent whose task has settled runs a turn again when a steer is sent to it directly (no task of its
      // parent's runs it): its doorbell is set while a turn runs.
      const woken = await Promise.all(
        settled
          .filter((subagent) => !working.has(subagent))
          .map(async (subagent) => ((await call<unknown>(subagent, 'doorbell', null)) ? subagent : undefined)),
      );
      return [...working, ...woken.filter((subagent) => subagent !== undefined)];
    },
    steer: (agentId, text, options = {}) => control(agentId, 'steer', { text }, options),
    // Called, not sent: whether a turn runs is decided before a prompt sent next can start one.
    interrupt: (agentId, options = {}) =>
      call<string>(agentId, 'interrupt', null, idempotency(options), controlName(name)),
  };
}

/** Restate's error body is JSON with a `message`; anything else is shown as it came, on one line. */
function reason(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  } catch {}
  return body.replace(/\s+/g, ' ').trim();
}
