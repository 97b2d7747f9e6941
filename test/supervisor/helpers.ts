import { type AgentEvent, type Message, type ModelRequest, scriptedModel, textOf } from '../../src/index.js';
import type { ScriptedAnswer, ScriptedModel } from '../../src/providers/index.js';

export interface Seen {
  /** The first user message: the task's prompt (or the root's first prompt). */
  prompt: string;
  /** The last message of the request. */
  last: Message | undefined;
  /** Text of the last user message. */
  lastUser: string;
  /** Text of the last tool message's results, joined. */
  lastTool: string;
  /** How many assistant answers this conversation already has. */
  answers: number;
  request: ModelRequest;
}

/** A scripted model shared by a whole tree: each request is answered from what its conversation looks like. */
export function router(
  answer: (seen: Seen) => ScriptedAnswer | Promise<ScriptedAnswer>,
  options: { record?: boolean } = {},
): ScriptedModel {
  return scriptedModel((request) => answer(see(request)), { record: options.record ?? false });
}

function see(request: ModelRequest): Seen {
  const messages = request.messages;
  const users = messages.filter((m) => m.role === 'user');
  const tools = messages.filter((m) => m.role === 'tool');
  const lastToolMessage = tools[tools.length - 1];
  const lastTool =
    lastToolMessage?.role === 'tool'
      ? lastToolMessage.content.map((r) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')).join('\n')
      : '';
  return {
    prompt: textOf(users[0]),
    last: messages[messages.length - 1],
    lastUser: textOf(users[users.length - 1]),
    lastTool,
    answers: messages.filter((m) => m.role === 'assistant').length,
    request,
  };
}

/** Resolves when `check` first holds for a published event. */
export function waitFor<E extends AgentEvent>(
  on: (type: '*', listener: (event: AgentEvent) => void) => () => void,
  check: (event: AgentEvent) => event is E,
): Promise<E>;
export function waitFor(
  on: (type: '*', listener: (event: AgentEvent) => void) => () => void,
  check: (event: AgentEvent) => boolean,
): Promise<AgentEvent>;
export function waitFor(
  on: (type: '*', listener: (event: AgentEvent) => void) => () => void,
  check: (event: AgentEvent) => boolean,
): Promise<AgentEvent> {
  return new Promise((resolve) => {
    const off = on('*', (event) => {
      if (!check(event)) return;
      off();
      resolve(event);
    });
  });
}

/** A promise with its resolver, for gating a scripted model on something the test decides. */
export function latch<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Every `<result …>` of a swarm's tool result, in the order it lists them. */
export function parseResults(text: string): Array<{ taskId: string; agentId: string; status: string; text: string }> {
  const out: Array<{ taskId: string; agentId: string; status: string; text: string }> = [];
  for (const match of text.matchAll(
    /<result task_id="([^"]*)" agent_id="([^"]*)" status="([^"]*)">([^<]*)<\/result>/g,
  )) {
    out.push({ taskId: match[1] ?? '', agentId: match[2] ?? '', status: match[3] ?? '', text: match[4] ?? '' });
  }
  return out;
}

/** A valid history: every tool call is answered by exactly one result in the following tool message. */
export function assertValidHistory(messages: readonly Message[]): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message?.role !== 'assistant') continue;
    const calls = message.content
      .filter((p) => p.type === 'tool_call')
      .map((p) => (p.type === 'tool_call' ? p.id : ''));
    if (calls.length === 0) continue;
    const next = messages[i + 1];
    if (next?.role !== 'tool') throw new Error(`tool calls at ${i} have no results`);
    const answered = next.content.map((r) => r.toolCallId);
    if (JSON.stringify(answered) !== JSON.stringify(calls)) {
      throw new Error(`tool calls ${calls.join(',')} answered by ${answered.join(',')}`);
    }
  }
}
