import { z } from 'zod';
import { type AgentEvent, defineTool, type Message, type ModelRequest, textOf } from '../../src/index.js';
import type { ToolCallPart, ToolResultPart } from '../../src/protocol/index.js';

/** A tool that answers with its `text` argument. */
export const echo = defineTool({
  name: 'echo',
  description: 'echoes',
  schema: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

/** The text of a request's first user message: in a tree, the prompt that says which agent (or task) is asking. */
export function taskOf(request: ModelRequest): string {
  const first = request.messages.find((m) => m.role === 'user');
  return first ? textOf(first) : '';
}

/** Checks the history invariant every provider relies on: each tool call answered exactly once, right after. */
export function expectValidHistory(messages: readonly Message[]): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message?.role !== 'assistant') continue;
    const calls = message.content.filter((p): p is ToolCallPart => p.type === 'tool_call');
    if (calls.length === 0) continue;
    const next = messages[i + 1];
    if (next?.role !== 'tool') throw new Error(`message ${i}: tool calls without a tool message after them`);
    const ids = next.content.map((r) => r.toolCallId);
    const expected = calls.map((c) => c.id);
    if (JSON.stringify(ids) !== JSON.stringify(expected)) {
      throw new Error(
        `message ${i + 1}: results ${JSON.stringify(ids)} do not answer calls ${JSON.stringify(expected)}`,
      );
    }
  }
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message?.role === 'tool' && messages[i - 1]?.role !== 'assistant') {
      throw new Error(`message ${i}: tool results without the assistant message that called them`);
    }
  }
}

export function toolResults(messages: readonly Message[]): ToolResultPart[] {
  return messages.flatMap((m) => (m.role === 'tool' ? m.content : []));
}

export function resultText(result: ToolResultPart | undefined): string {
  return (result?.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** Records every event on an agent's bus. */
export function record(agent: { on(type: '*', fn: (e: AgentEvent) => void): () => void }): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.on('*', (e) => events.push(e));
  return events;
}

/** A promise with its resolve function outside, for latches between tools and the test. */
export interface Latch<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

export function latch<T = void>(): Latch<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A tool named `name` whose every call waits for `gate` (a turn held in its tool phase), then answers `waited`. */
export function gatedTool(name = 'wait') {
  const gate = latch();
  const tool = defineTool({
    name,
    description: 'waits for the test',
    schema: z.object({}),
    execute: () => gate.promise.then(() => 'waited'),
  });
  return { tool, gate };
}

/** Resolves once `predicate` holds for an event published after the call. */
export function nextEvent<E extends AgentEvent>(
  agent: { on(type: '*', fn: (e: AgentEvent) => void): () => void },
  predicate: (e: AgentEvent) => e is E,
): Promise<E>;
export function nextEvent(
  agent: { on(type: '*', fn: (e: AgentEvent) => void): () => void },
  predicate: (e: AgentEvent) => boolean,
): Promise<AgentEvent>;
export function nextEvent(
  agent: { on(type: '*', fn: (e: AgentEvent) => void): () => void },
  predicate: (e: AgentEvent) => boolean,
): Promise<AgentEvent> {
  return new Promise((resolve) => {
    const off = agent.on('*', (e) => {
      if (predicate(e)) {
        off();
        resolve(e);
      }
    });
  });
}
