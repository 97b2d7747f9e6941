import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  cacheByArgs,
  createAgent,
  defineTool,
  jsonSchema,
  logCalls,
  retryOnError,
  scriptedModel,
  timeoutAfter,
  withMiddleware,
} from '../../src/index.js';
import type { ToolLogEntry } from '../../src/tools/index.js';
import { toolResults } from '../agent/helpers.js';

const textOfResult = (result: { content: Array<{ type: string; text?: string }> } | undefined) =>
  result?.content.map((part) => part.text ?? '').join('') ?? '';

describe('tool middleware', () => {
  it('retries a throwing tool with backoff, logging the call once around every attempt', async () => {
    let attempts = 0;
    const flaky = defineTool({
      name: 'flaky',
      description: 'fails twice',
      schema: z.object({}),
      execute: () => {
        attempts++;
        if (attempts < 3) throw new Error(`failure ${attempts}`);
        return 'third time';
      },
    });
    const log: ToolLogEntry[] = [];
    const tool = withMiddleware(
      flaky,
      logCalls((entry) => log.push(entry)),
      retryOnError({ retries: 2, initialDelayMs: 1 }),
    );
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'flaky', args: {} }] }, { text: 'ok' }]),
      tools: [tool],
    });
    const result = await agent.prompt('go');
    expect(textOfResult(toolResults(result.messages)[0])).toBe('third time');
    expect(attempts).toBe(3);
    expect(log).toEqual([expect.objectContaining({ tool: 'flaky', outcome: 'ok', agentId: agent.id })]);
    expect(log[0]?.args).toBeUndefined();
    await agent.stop();
  });

  it('gives up after its retries with the last error as the result; retryOn can refuse a retry', async () => {
    let attempts = 0;
    const broken = defineTool({
      name: 'broken',
      description: 'always fails',
      schema: z.object({}),
      execute: () => {
        attempts++;
        throw new Error(`failure ${attempts}`);
      },
    });
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'broken', args: {} }] }, { text: 'ok' }]),
      tools: [withMiddleware(broken, retryOnError({ retries: 5, initialDelayMs: 1, retryOn: (_e, n) => n < 2 }))],
    });
    const result = await agent.prompt('go');
    const [only] = toolResults(result.messages);
    expect(only?.isError).toBe(true);
    expect(textOfResult(only)).toBe('Tool broken failed: failure 2');
    await agent.stop();
  });

  it('a timeout fails a slow attempt and aborts its signal; retry then tries again', async () => {
    const signals: AbortSignal[] = [];
    const slow = defineTool({
      name: 'slow',
      description: 'slow once',
      schema: z.object({}),
      execute: (_args, ctx) => {
        signals.push(ctx.signal);
        if (signals.length === 1) return new Promise<string>(() => {}); // never answers
        return 'fast enough';
      },
    });
    const tool = withMiddleware(slow, retryOnError({ retries: 1, initialDelayMs: 1 }), timeoutAfter(5));
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'slow', args: {} }] }, { text: 'ok' }]),
      tools: [tool],
    });
    const result = await agent.prompt('go');
    expect(textOfResult(toolResults(result.messages)[0])).toBe('fast enough');
    expect(signals[0]?.aborted).toBe(true);
    expect(signals[0]?.reason).toMatchObject({ name: 'ToolTimeoutError' });
    await agent.stop();
  });

  it('caches answers by arguments (key order does not matter), not errors, and expires them', async () => {
    let runs = 0;
    let now = 0;
    const lookup = defineTool({
      name: 'lookup',
      description: 'looks up',
      schema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => {
        runs++;
        return a + b < 0 ? { content: 'negative', isError: true } : `sum ${a + b} (run ${runs})`;
      },
    });
    const tool = withMiddleware(lookup, cacheByArgs({ ttlMs: 100, now: () => now }));
    const agent = createAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { name: 'lookup', args: { a: 1, b: 2 } },
            { name: 'lookup', args: { b: 2, a: 1 } },
            { name: 'lookup', args: { a: -5, b: 0 } },
          ],
        },
        { toolCalls: [{ name: 'lookup', args: { a: -5, b: 0 } }] },
        { text: 'ok' },
      ]),
      tools: [tool],
    });
    const first = await agent.prompt('go');
    expect(toolResults(first.messages).map(textOfResult)).toEqual([
      'sum 3 (run 1)',
      'sum 3 (run 1)',
      'negative',
      'negative',
    ]);
    expect(runs).toBe(3); // two calls in flight together share one run; errors run again
    now = 1_000;
    const again = await tool.execute(
      { a: 1, b: 2 },
      { toolCallId: 'x', agentId: 'a', signal: new AbortController().signal, update: vi.fn() },
    );
    expect(again).toBe('sum 3 (run 4)');
    await agent.stop();
  });

  it('keeps the definition: name, traits and schema unchanged, the original untouched', () => {
    const base = defineTool({
      name: 'base',
      description: 'b',
      schema: z.object({}),
      readOnly: true,
      executionMode: 'sequential',
      execute: () => 'x',
    });
    const wrapped = withMiddleware(
      base,
      logCalls(() => {}),
    );
    expect(wrapped).toMatchObject({ name: 'base', readOnly: true, executionMode: 'sequential', schema: base.schema });
    expect(wrapped.execute).not.toBe(base.execute);
  });
});

describe('tools defined by a JSON Schema', () => {
  const schema = {
    type: 'object',
    properties: {
      path: { type: 'string', minLength: 1, description: 'File path' },
      depth: { type: 'integer', minimum: 0 },
    },
    required: ['path'],
    additionalProperties: false,
  } as const;

  it('are validated before execute with the same error results as zod tools; the model gets the schema as written', async () => {
    const seen: unknown[] = [];
    const listDir = defineTool({
      name: 'list_dir',
      description: 'lists a directory',
      schema: jsonSchema(schema),
      execute: (args) => {
        seen.push(args);
        return 'listed';
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'list_dir', args: { path: '', depth: -1, extra: true } },
          { name: 'list_dir', args: { path: 'src', depth: 2 } },
        ],
      },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools: [listDir] });
    const result = await agent.prompt('go');
    const [bad, good] = toolResults(result.messages);
    expect(bad?.isError).toBe(true);
    expect(textOfResult(bad)).toContain('Invalid arguments for list_dir');
    expect(textOfResult(bad)).toContain('- path:');
    expect(textOfResult(bad)).toContain('- depth:');
    expect(textOfResult(good)).toBe('listed');
    expect(seen).toEqual([{ path: 'src', depth: 2 }]);
    expect(model.requests[0]?.tools?.[0]?.inputSchema).toEqual(schema);
    await agent.stop();
  });

  it('refuses what is not an object schema or what zod cannot read', () => {
    expect(() => jsonSchema({ type: 'string' })).toThrow(/tool arguments are an object/);
    expect(() => jsonSchema({ type: 'object', properties: { a: { $ref: '#/nowhere' } } })).toThrow(TypeError);
  });
});
