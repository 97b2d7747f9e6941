import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, traceAgents } from '../../src/index.js';
import { router } from '../supervisor/helpers.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('test');

afterEach(() => exporter.reset());

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const byName = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name);

const lookup = defineTool({
  name: 'lookup',
  description: 'looks up',
  schema: z.object({ q: z.string() }),
  execute: ({ q }) => (q === 'bad' ? { content: 'no', isError: true } : `found ${q}`),
});

describe('OpenTelemetry traces from the event bus', () => {
  it('a span per run, turn, step, model call and tool call, nested, with GenAI attributes', async () => {
    const agent = createAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { name: 'lookup', args: { q: 'x' } },
            { name: 'lookup', args: { q: 'bad' } },
          ],
          usage: { input: 10, output: 5 },
        },
        { text: 'done', usage: { input: 20, output: 3 } },
      ]),
      tools: [lookup],
    });
    const stop = traceAgents(agent, { tracer });
    await agent.prompt('go');
    await agent.stop();
    stop();
    const spans = exporter.getFinishedSpans();
    const [run] = byName(spans, `invoke_agent ${agent.id}`);
    const [turn] = byName(spans, 'turn');
    const steps = byName(spans, 'step');
    const chats = spans.filter((span) => span.name.startsWith('chat'));
    const tools = byName(spans, 'execute_tool lookup');
    expect(run && turn).toBeTruthy();
    expect(parentOf(run as ReadableSpan)).toBeUndefined();
    expect(parentOf(turn as ReadableSpan)).toBe(run?.spanContext().spanId);
    expect(steps).toHaveLength(2);
    expect(steps.every((step) => parentOf(step) === turn?.spanContext().spanId)).toBe(true);
    expect(chats).toHaveLength(2);
    expect(parentOf(chats[0] as ReadableSpan)).toBe(steps[0]?.spanContext().spanId);
    expect(chats[0]?.name).toBe('chat scripted');
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.response.model': 'scripted',
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 5,
      'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    expect(tools).toHaveLength(2);
    expect(tools.every((tool) => parentOf(tool) === steps[0]?.spanContext().spanId)).toBe(true);
    expect(tools[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'lookup',
    });
    expect(tools.map((tool) => tool.status.code)).toEqual([0, 2]);
    expect(tools[0]?.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(turn?.attributes).toMatchObject({ 'troupe.stop_reason': 'completed', 'gen_ai.usage.output_tokens': 8 });
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
  });

  it('subagents are inside the root run: a child run under the tool call that started it, one trace', async () => {
    const model = router(({ prompt, last, lastTool }) => {
      if (last?.role === 'tool') return { text: lastTool };
      if (prompt === 'ROOT') return { toolCalls: [{ name: 'agent', args: { prompt: 'CHILD' } }] };
      if (prompt === 'CHILD') return { toolCalls: [{ name: 'agent', args: { prompt: 'GRAND' } }] };
      return { toolCalls: [{ name: 'lookup', args: { q: 'deep' } }] };
    });
    const root = createAgent({ model, id: 'root', tools: [lookup], subagents: {} });
    const stop = traceAgents(root, { tracer, recordContent: true });
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('found deep');
    await root.stop();
    stop();
    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    const runs = spans.filter((span) => span.name.startsWith('invoke_agent'));
    expect(runs).toHaveLength(3);
    const rootRun = runs.find((span) => span.name === 'invoke_agent root');
    expect(parentOf(rootRun as ReadableSpan)).toBeUndefined();
    const agentCalls = byName(spans, 'execute_tool agent');
    expect(agentCalls).toHaveLength(2);
    const children = runs.filter((span) => span !== rootRun);
    for (const child of children) {
      expect(agentCalls.map((call) => call.spanContext().spanId)).toContain(parentOf(child));
    }
    const deep = byName(spans, 'execute_tool lookup')[0];
    expect(deep?.attributes['gen_ai.tool.call.arguments']).toBe('{"q":"deep"}');
  });
});
