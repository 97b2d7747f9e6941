import { z } from 'zod';
import type { Agent, AgentEvent } from '../../src/index.js';
import { defineTool } from '../../src/index.js';

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
