import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, ToolDefinitionError } from '../../src/index.js';
import { expectValidHistory, latch, resultText, toolResults } from './helpers.js';

const book = defineTool({
  name: 'book_flight',
  description: 'Books a flight',
  schema: z.object({
    from: z.string().length(3),
    to: z.string().length(3),
    passengers: z.object({ adults: z.number().int().min(1) }),
  }),
  execute: ({ from, to }) => `booked ${from}-${to}`,
});

describe('tool errors reach the model as results, never as crashes', () => {
  it('schema failures name the failing paths; unknown tools list the known ones; broken JSON is reported', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'book_flight', args: { from: 'LISBON', to: 'OSL', passengers: { adults: 0 } } },
          { name: 'cancel_flight', args: {} },
          { name: 'book_flight', args: '{"from": "LIS", "to": ' },
          { name: 'book_flight', args: { from: 'LIS', to: 'OSL', passengers: { adults: 2 } } },
        ],
      },
      { text: 'Fixed it.' },
    ]);
    const agent = createAgent({ model, tools: [book] });
    const result = await agent.prompt('Book it');
    const [schema, unknown, broken, fine] = toolResults(result.messages);

    expect(schema?.isError).toBe(true);
    expect(resultText(schema)).toContain('- from:');
    expect(resultText(schema)).toContain('- passengers.adults:');
    expect(resultText(schema)).not.toContain('- to:');
    expect(unknown?.isError).toBe(true);
    expect(resultText(unknown)).toBe('Unknown tool "cancel_flight". Available tools: book_flight.');
    expect(broken?.isError).toBe(true);
    expect(resultText(broken)).toContain('not valid JSON');
    expect(fine).toMatchObject({ isError: false, content: [{ type: 'text', text: 'booked LIS-OSL' }] });
    // The model's next request carries all four results, in call order.
    expect(toolResults(model.requests[1]?.messages ?? []).map((r) => r.isError)).toEqual([true, true, true, false]);
    expect(result.text).toBe('Fixed it.');
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('a tool that throws (or rejects) becomes an error result', async () => {
    const flaky = defineTool({
      name: 'flaky',
      description: 'fails',
      schema: z.object({ how: z.enum(['throw', 'reject']) }),
      execute: ({ how }) => {
        if (how === 'throw') throw new Error('disk full');
        return Promise.reject(new TypeError('bad state'));
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'flaky', args: { how: 'throw' } },
          { name: 'flaky', args: { how: 'reject' } },
        ],
      },
      { text: 'sorry' },
    ]);
    const agent = createAgent({ model, tools: [flaky] });
    const result = await agent.prompt('try');
    expect(toolResults(result.messages).map((r) => [r.isError, resultText(r)])).toEqual([
      [true, 'Tool flaky failed: disk full'],
      [true, 'Tool flaky failed: bad state'],
    ]);
    expect(result.stopReason).toBe('completed');
    await agent.stop();
  });

  it('a timeout aborts the tool, answers with an error, and drops the late result', async () => {
    const lateResult = latch<string>();
    let signalAborted = false;
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      schema: z.object({}),
      timeoutMs: 30,
      execute: async (_args, ctx) => {
        ctx.signal.addEventListener('abort', () => {
          signalAborted = true;
        });
        return lateResult.promise;
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'slow' }] }, { text: 'it timed out' }]);
    const agent = createAgent({ model, tools: [slow] });
    const ends: string[] = [];
    agent.on('tool_execution_end', (e) => ends.push(resultText(e.result)));
    const result = await agent.prompt('go');
    expect(signalAborted).toBe(true);
    const [timedOut] = toolResults(result.messages);
    expect(timedOut?.isError).toBe(true);
    expect(resultText(timedOut)).toBe('Tool slow timed out after 30 ms and was cancelled.');

    lateResult.resolve('too late');
    await new Promise((r) => setImmediate(r));
    expect(ends).toEqual(['Tool slow timed out after 30 ms and was cancelled.']);
    expect(toolResults(agent.messages)).toHaveLength(1);
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('returns non-string values to the model as JSON', async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'returns data',
      schema: z.object({}),
      execute: () => ({ rows: [1, 2] }) as never,
    });
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'lookup' }] }, { text: 'ok' }]),
      tools: [lookup],
    });
    const result = await agent.prompt('go');
    expect(resultText(toolResults(result.messages)[0])).toBe('{"rows":[1,2]}');
    await agent.stop();
  });
});

describe('registration refuses tools a model could not be given', () => {
  const tool = (over: Record<string, unknown>) => ({
    name: 'ok',
    description: 'd',
    schema: z.object({}),
    execute: () => '',
    ...over,
  });
  const model = scriptedModel([]);

  it.each([
    ['an empty name', [tool({ name: '' })], 'A tool needs a non-empty name'],
    ['a name providers reject', [tool({ name: 'has space' })], 'Tool name "has space" is not allowed'],
    ['duplicate names', [tool({}), tool({})], 'Two tools are named "ok"'],
    ['a non-object schema', [tool({ schema: z.string() })], 'schema must be z.object'],
    [
      'a schema JSON Schema cannot express',
      [tool({ schema: z.object({ at: z.date() }) })],
      'cannot be expressed as JSON Schema',
    ],
  ])('%s', (_name, tools, message) => {
    expect(() => createAgent({ model, tools: tools as never })).toThrow(ToolDefinitionError);
    expect(() => createAgent({ model, tools: tools as never })).toThrow(message);
  });

  it('sends optional and defaulted fields as the input side of the schema', async () => {
    const model = scriptedModel([{ text: 'x' }]);
    const search = defineTool({
      name: 'search',
      description: 'searches',
      schema: z.object({ q: z.string(), limit: z.number().default(10) }),
      execute: () => '',
    });
    const agent = createAgent({ model, tools: [search] });
    await agent.prompt('hi');
    expect(model.requests[0]?.tools[0]?.inputSchema).toEqual({
      type: 'object',
      properties: { q: { type: 'string' }, limit: { type: 'number', default: 10 } },
      required: ['q'],
    });
    await agent.stop();
  });
});
