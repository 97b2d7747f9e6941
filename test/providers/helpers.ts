import { z } from 'zod';
import { type Agent, type AgentEvent, createAgent, defineTool, type Model, type RunResult } from '../../src/index.js';
import type { SseEvent, WirePath, WireServer } from '../wire/server.js';

/** Two parallel-safe tools and one that fails, with the calls they saw. */
export function makeTools() {
  const seen: { name: string; args: unknown }[] = [];
  const add = defineTool({
    name: 'add',
    description: 'Adds two numbers',
    schema: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => {
      seen.push({ name: 'add', args: { a, b } });
      return String(a + b);
    },
  });
  const weather = defineTool({
    name: 'weather',
    description: 'Weather for a city',
    // `unit` is optional, so this schema is not strict-compatible.
    schema: z.object({ city: z.string(), unit: z.enum(['C', 'F']).optional() }),
    execute: ({ city }) => {
      seen.push({ name: 'weather', args: { city } });
      return `${city}: 21°C`;
    },
  });
  const broken = defineTool({
    name: 'broken',
    description: 'Always fails',
    schema: z.object({}),
    execute: () => {
      throw new Error('disk on fire');
    },
  });
  return { tools: [add, weather, broken], seen };
}

/** Every event of an agent, in order. */
export function record(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.on('*', (event) => {
    events.push(event);
  });
  return events;
}

export const fastRetry = { initialDelayMs: 5, maxDelayMs: 20, maxRetries: 3 };

/**
 * Streams `events` (the first of an answer) and then stalls: no later event wakes the consumer, so only the signal
 * handed to the SDK can close the request. The prompt is aborted after the first delta; resolves once the server
 * saw the client close, with the run's result and every event it published.
 */
export async function abortMidStream(
  server: WireServer,
  path: WirePath,
  events: SseEvent[],
  model: Model,
): Promise<{ result: RunResult; events: AgentEvent[] }> {
  server.reply(path, { kind: 'sse', events, hang: true });
  const agent = createAgent({ model });
  const published = record(agent);
  const controller = new AbortController();
  const started = new Promise<void>((resolve) => agent.on('message_update', () => resolve()));
  const closed = server.clientClosed();
  const pending = agent.prompt('x', { signal: controller.signal });
  await started;
  controller.abort();
  await closed;
  const result = await pending;
  await agent.stop();
  return { result, events: published };
}
