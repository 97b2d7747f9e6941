/**
 * OpenTelemetry traces of an agent, offline: `traceAgents` turns the agent's events into spans (a run, its turn, each
 * step, model call and tool call, nested), here collected by the SDK's in-memory exporter and printed as a tree.
 * Troupe needs only the optional `@opentelemetry/api` package; the SDK (`@opentelemetry/sdk-trace-base` here, an
 * OTLP exporter in production) is the application's choice.
 *
 *   npx tsx examples/tracing.ts
 */
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, traceAgents } from '../src/index.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  schema: z.object({ city: z.string() }),
  execute: ({ city }) => `Sunny in ${city}`,
});
const agent = createAgent({
  id: 'planner',
  model: scriptedModel([
    { toolCalls: [{ name: 'get_weather', args: { city: 'Lisbon' } }], usage: { input: 30, output: 8 } },
    { text: 'Go to Lisbon.', usage: { input: 45, output: 4 } },
  ]),
  tools: [weather],
});

// Without `tracer`, the global tracer provider the application registered is used.
const stop = traceAgents(agent, { tracer: provider.getTracer('example') });
const result = await agent.prompt('Where should I go?');
stop();
await agent.stop();

const spans = exporter.getFinishedSpans();
const children = (parent: ReadableSpan | undefined) =>
  spans
    .filter((span) => span.parentSpanContext?.spanId === parent?.spanContext().spanId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
const print = (span: ReadableSpan, depth: number): void => {
  const tokens = span.attributes['gen_ai.usage.output_tokens'];
  console.log(`${'  '.repeat(depth)}${span.name}${tokens === undefined ? '' : ` (${tokens} output tokens)`}`);
  for (const child of children(span)) print(child, depth + 1);
};
for (const root of children(undefined)) print(root, 0);
console.log(`answer: ${result.text}`);
await provider.shutdown();
