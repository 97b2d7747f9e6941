/**
 * The AI SDK adapter against the spec's own mock models (`ai/test`): what each stream part becomes, what the
 * prompt looks like, how errors are classified. The wire tests (ai-sdk-wire.test.ts) run real provider packages.
 * Longer than most modules: each stream part, prompt form and failure is a case of its own, spelled out in full.
 */
import {
  APICallError,
  type LanguageModelV4StreamPart,
  type LanguageModelV4Usage,
  TypeValidationError,
} from '@ai-sdk/provider';
import { convertArrayToReadableStream, MockLanguageModelV3, MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { type AssistantMessage, aiSdkModel, createAgent, type ModelEvent, type ModelRequest } from '../../src/index.js';
import { fastRetry, makeTools, record } from './helpers.js';

function usage(input: number, output: number, more: { cacheRead?: number; reasoning?: number } = {}) {
  return {
    inputTokens: {
      total: input,
      noCache: more.cacheRead === undefined ? undefined : input - more.cacheRead,
      cacheRead: more.cacheRead,
      cacheWrite: undefined,
    },
    outputTokens: { total: output, text: undefined, reasoning: more.reasoning },
  } satisfies LanguageModelV4Usage;
}

function finish(unified: 'stop' | 'tool-calls' | 'length' | 'error' | 'interrupted' | 'other', raw?: string) {
  return { type: 'finish', finishReason: { unified, raw }, usage: usage(10, 5) } satisfies LanguageModelV4StreamPart;
}

function text(id: string, ...deltas: string[]): LanguageModelV4StreamPart[] {
  return [
    { type: 'text-start', id },
    ...deltas.map((delta): LanguageModelV4StreamPart => ({ type: 'text-delta', id, delta })),
    { type: 'text-end', id },
  ];
}

/** A tool call whose input arrives in the given pieces, closed by the `tool-call` part with the whole input. */
function toolCall(id: string, toolName: string, pieces: string[], signature?: string): LanguageModelV4StreamPart[] {
  const providerMetadata = signature ? { google: { thoughtSignature: signature } } : undefined;
  return [
    { type: 'tool-input-start', id, toolName },
    ...pieces.map((delta): LanguageModelV4StreamPart => ({ type: 'tool-input-delta', id, delta })),
    { type: 'tool-input-end', id },
    {
      type: 'tool-call',
      toolCallId: id,
      toolName,
      input: pieces.join(''),
      ...(providerMetadata ? { providerMetadata } : {}),
    },
  ];
}

function mock(...answers: LanguageModelV4StreamPart[][]) {
  return new MockLanguageModelV4({
    provider: 'mock.chat',
    modelId: 'mock-1',
    doStream: answers.map((parts) => ({ stream: convertArrayToReadableStream(parts) })),
  });
}

const ask = (textIn: string): ModelRequest => ({
  messages: [{ role: 'user', content: [{ type: 'text', text: textIn }] }],
  tools: [],
});

async function collect(model: ReturnType<typeof aiSdkModel>, request: ModelRequest): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of model.stream(request, new AbortController().signal)) events.push(event);
  return events;
}

describe('aiSdkModel: stream parts', () => {
  it('streams reasoning and text in block order, with usage and the stop reason', async () => {
    const model = mock([
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: 'resp_1' },
      { type: 'reasoning-start', id: 'r', providerMetadata: { mock: { kind: 'thought' } } },
      { type: 'reasoning-delta', id: 'r', delta: 'Think ' },
      { type: 'reasoning-delta', id: 'r', delta: 'first.' },
      { type: 'reasoning-end', id: 'r', providerMetadata: { mock: { signature: 'sig-r' } } },
      ...text('t', 'Hello ', 'there.'),
      {
        type: 'finish',
        finishReason: { unified: 'stop', raw: 'STOP' },
        usage: usage(100, 30, { cacheRead: 60, reasoning: 12 }),
      },
    ]);
    const agent = createAgent({
      model: aiSdkModel(model),
      system: 'Be brief.',
      maxTokens: 200,
      temperature: 0.3,
      reasoning: 'low',
    });
    const events = record(agent);
    const result = await agent.prompt('hi');

    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('Hello there.');
    expect(result.usage).toEqual({ input: 40, output: 30, cacheRead: 60, cacheWrite: 0, reasoning: 12 });
    const deltas = events.flatMap((e) =>
      e.type === 'message_update' && 'delta' in e.delta ? [[e.delta.type, e.delta.delta]] : [],
    );
    expect(deltas).toEqual([
      ['reasoning', 'Think '],
      ['reasoning', 'first.'],
      ['text', 'Hello '],
      ['text', 'there.'],
    ]);
    const answer = result.messages[1] as AssistantMessage;
    expect(answer).toMatchObject({ provider: 'mock.chat', model: 'mock-1', stopReason: 'stop', responseId: 'resp_1' });
    expect(answer.content).toEqual([
      {
        type: 'reasoning',
        text: 'Think first.',
        opaque: { provider: 'mock.chat', model: 'mock-1', data: { mock: { kind: 'thought', signature: 'sig-r' } } },
      },
      { type: 'text', text: 'Hello there.' },
    ]);

    const call = model.doStreamCalls[0];
    expect(call?.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    ]);
    expect(call).toMatchObject({ maxOutputTokens: 200, temperature: 0.3, reasoning: 'low' });
    expect(call?.abortSignal).toBeInstanceOf(AbortSignal);
    await agent.stop();
  });

  it('runs a tool loop with inputs split mid-token; results go back paired by id, errors as error-text', async () => {
    const { tools, seen } = makeTools();
    const model = mock(
      [
        ...text('t0', 'Working.'),
        ...toolCall('call_A', 'add', ['{"a"', ': 2, "', 'b": 4', '0}'], 'sig-A'),
        ...toolCall('call_B', 'broken', ['{', '}']),
        finish('tool-calls', 'STOP'),
      ],
      [...text('t1', 'Done: 42.'), finish('stop')],
    );
    const agent = createAgent({ model: aiSdkModel(model), tools });
    const events = record(agent);
    const result = await agent.prompt('go');

    expect(result.text).toBe('Done: 42.');
    expect(seen).toEqual([{ name: 'add', args: { a: 2, b: 40 } }]);
    const first = result.messages[1] as AssistantMessage;
    expect(first.stopReason).toBe('tool_calls');
    expect(first.content).toEqual([
      { type: 'text', text: 'Working.' },
      {
        type: 'tool_call',
        id: 'call_A',
        name: 'add',
        arguments: { a: 2, b: 40 },
        opaque: { provider: 'mock.chat', model: 'mock-1', data: { google: { thoughtSignature: 'sig-A' } } },
      },
      { type: 'tool_call', id: 'call_B', name: 'broken', arguments: {} },
    ]);
    // The argument text reached observers piece by piece, as it came.
    const pieces = events.flatMap((e) =>
      e.type === 'message_update' && e.delta.type === 'tool_call' && e.delta.toolCallId === 'call_A'
        ? [e.delta.delta]
        : [],
    );
    expect(pieces).toEqual(['{"a"', ': 2, "', 'b": 4', '0}']);

    const tools0 = model.doStreamCalls[0]?.tools;
    expect(tools0?.[0]).toEqual({
      type: 'function',
      name: 'add',
      description: 'Adds two numbers',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    });
    expect(model.doStreamCalls[1]?.prompt.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Working.' },
          // Gemini rejects a function call sent back without its thought signature.
          {
            type: 'tool-call',
            toolCallId: 'call_A',
            toolName: 'add',
            input: { a: 2, b: 40 },
            providerOptions: { google: { thoughtSignature: 'sig-A' } },
          },
          { type: 'tool-call', toolCallId: 'call_B', toolName: 'broken', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'call_A', toolName: 'add', output: { type: 'text', value: '42' } },
          {
            type: 'tool-result',
            toolCallId: 'call_B',
            toolName: 'broken',
            output: { type: 'error-text', value: expect.stringContaining('disk on fire') },
          },
        ],
      },
    ]);
    await agent.stop();
  });

  it('sends reasoning and signatures back only to the model that made them', async () => {
    const { tools } = makeTools();
    const first = mock(
      [
        { type: 'reasoning-start', id: 'r' },
        { type: 'reasoning-delta', id: 'r', delta: 'Add.', providerMetadata: { google: { thoughtSignature: 'sig' } } },
        { type: 'reasoning-end', id: 'r' },
        ...toolCall('c1', 'add', ['{"a":1,"b":1}'], 'sig-c1'),
        finish('stop'),
      ],
      [...text('t', 'Two.'), finish('stop')],
    );
    const agent = createAgent({ model: aiSdkModel(first), tools });
    await agent.prompt('1+1');
    expect(first.doStreamCalls[1]?.prompt[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'Add.', providerOptions: { google: { thoughtSignature: 'sig' } } },
        {
          type: 'tool-call',
          toolCallId: 'c1',
          toolName: 'add',
          input: { a: 1, b: 1 },
          providerOptions: { google: { thoughtSignature: 'sig-c1' } },
        },
      ],
    });

    const other = new MockLanguageModelV4({
      provider: 'mock.chat',
      modelId: 'mock-2',
      doStream: { stream: convertArrayToReadableStream([...text('t', 'ok'), finish('stop')]) },
    });
    await createAgent({ model: aiSdkModel(other), messages: agent.messages }).prompt('again');
    expect(other.doStreamCalls[0]?.prompt[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: { a: 1, b: 1 } }],
    });
    await agent.stop();
  });

  it('takes a tool-call without input parts, keeps broken input; leaves out provider-run calls, sources, files', async () => {
    const model = aiSdkModel(
      mock([
        { type: 'tool-input-start', id: 'p1', toolName: 'google_search', providerExecuted: true },
        { type: 'tool-input-delta', id: 'p1', delta: '{}' },
        { type: 'tool-call', toolCallId: 'p1', toolName: 'google_search', input: '{}', providerExecuted: true },
        { type: 'tool-result', toolCallId: 'p1', toolName: 'google_search', result: { hits: 1 } },
        { type: 'source', sourceType: 'url', id: 's1', url: 'https://example.com' },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'AAAA' } },
        { type: 'raw', rawValue: { anything: true } },
        { type: 'ping' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":1,"b":2}' },
        ...toolCall('c2', 'add', ['{"a":1,', '"b":']),
        finish('other', 'STOP'),
      ]),
    );
    const events = await collect(model, ask('x'));
    expect(events.filter((e) => e.type.startsWith('tool_call'))).toEqual([
      { type: 'tool_call_start', id: 'c1', name: 'add' },
      { type: 'tool_call_delta', id: 'c1', delta: '{"a":1,"b":2}' },
      { type: 'tool_call_end', id: 'c1' },
      { type: 'tool_call_start', id: 'c2', name: 'add' },
      { type: 'tool_call_delta', id: 'c2', delta: '{"a":1,' },
      { type: 'tool_call_delta', id: 'c2', delta: '"b":' },
      { type: 'tool_call_end', id: 'c2' },
    ]);
    const done = events.at(-1);
    expect(done).toMatchObject({ type: 'done', stopReason: 'tool_calls' });
    const content = done?.type === 'done' ? done.message.content : [];
    expect(content).toEqual([
      { type: 'tool_call', id: 'c1', name: 'add', arguments: { a: 1, b: 2 } },
      {
        type: 'tool_call',
        id: 'c2',
        name: 'add',
        arguments: {},
        invalidArguments: { text: '{"a":1,"b":', error: expect.any(String) },
      },
    ]);
  });

  it('maps length and content-filter stops', async () => {
    const model = aiSdkModel(
      mock(
        [...text('t', 'Cut'), finish('length', 'MAX_TOKENS')],
        [{ type: 'finish', finishReason: { unified: 'content-filter', raw: 'SAFETY' }, usage: usage(1, 0) }],
      ),
    );
    expect((await collect(model, ask('a'))).at(-1)).toMatchObject({ stopReason: 'length' });
    expect((await collect(model, ask('b'))).at(-1)).toMatchObject({
      stopReason: 'content_filter',
      message: { content: [] },
    });
  });
});

describe('aiSdkModel: the call', () => {
  it("sends images as file parts, tool choice, the output schema and the caller's provider options", async () => {
    const model = mock([...text('t', '{"city":"Oslo"}'), finish('stop')]);
    const adapter = aiSdkModel(model, {
      providerOptions: { google: { thinkingConfig: { includeThoughts: true } } },
      headers: { 'x-team': 'blue' },
      reasoning: 'high',
    });
    await collect(adapter, {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Where?' },
            { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { kind: 'url', url: 'https://example.com/a.jpg' } },
          ],
        },
      ],
      tools: [
        {
          name: 'look',
          description: 'Looks',
          inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' },
        },
      ],
      toolChoice: { name: 'look' },
      outputSchema: { name: 'place', schema: { type: 'object', properties: { city: { type: 'string' } } } },
    });
    const call = model.doStreamCalls[0];
    expect(call?.prompt[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Where?' },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'iVBORw0KGgo=' } },
        { type: 'file', mediaType: 'image', data: { type: 'url', url: new URL('https://example.com/a.jpg') } },
      ],
    });
    expect(call?.tools).toEqual([
      { type: 'function', name: 'look', description: 'Looks', inputSchema: { type: 'object' } },
    ]);
    expect(call?.toolChoice).toEqual({ type: 'tool', toolName: 'look' });
    expect(call?.responseFormat).toEqual({
      type: 'json',
      name: 'place',
      schema: { type: 'object', properties: { city: { type: 'string' } } },
    });
    expect(call?.providerOptions).toEqual({ google: { thinkingConfig: { includeThoughts: true } } });
    expect(call?.headers).toEqual({ 'x-team': 'blue' });
    expect(call?.reasoning).toBe('high');
  });

  it('speaks V3 to a V3 model: files by their data, image results, no reasoning option', async () => {
    const model = new MockLanguageModelV3({
      provider: 'old.chat',
      modelId: 'old-1',
      doStream: {
        stream: convertArrayToReadableStream([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Seen.' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(3, 2) },
        ]),
      },
    });
    const events = await collect(aiSdkModel(model, { reasoning: 'low' }), {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { kind: 'url', url: 'https://example.com/a.jpg' } },
            { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'AAAA' } },
          ],
        },
        {
          role: 'assistant',
          content: [{ type: 'tool_call', id: 'c', name: 'shot', arguments: {} }],
          provider: 'old.chat',
          model: 'old-1',
          stopReason: 'tool_calls',
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool_result',
              toolCallId: 'c',
              toolName: 'shot',
              isError: false,
              content: [
                { type: 'text', text: 'Here.' },
                { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'BBBB' } },
              ],
            },
          ],
        },
      ],
      tools: [],
    });
    expect(events.at(-1)).toMatchObject({ type: 'done', message: { content: [{ type: 'text', text: 'Seen.' }] } });
    const call = model.doStreamCalls[0];
    expect(call && 'reasoning' in call).toBe(false);
    expect(call?.prompt[0]).toEqual({
      role: 'user',
      content: [
        { type: 'file', mediaType: 'image/*', data: new URL('https://example.com/a.jpg') },
        { type: 'file', mediaType: 'image/png', data: 'AAAA' },
      ],
    });
    expect(call?.prompt[2]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c',
          toolName: 'shot',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'Here.' },
              { type: 'image-data', mediaType: 'image/png', data: 'BBBB' },
            ],
          },
        },
      ],
    });
  });
});

describe('aiSdkModel: failures, classified', () => {
  const apiError = (statusCode: number | undefined, body?: unknown, headers?: Record<string, string>) =>
    new APICallError({
      message: 'failed',
      url: 'https://api.example.com',
      requestBodyValues: {},
      statusCode,
      responseHeaders: headers,
      responseBody: body === undefined ? undefined : JSON.stringify(body),
      ...(statusCode === undefined ? { isRetryable: true } : {}),
    });

  it('classifies APICallErrors by status and body; retries the retryable ones', async () => {
    const cases: [APICallError, string, boolean][] = [
      [
        apiError(429, { error: { message: 'slow down', type: 'rate_limit_error' } }, { 'retry-after': '0' }),
        'rate_limit',
        true,
      ],
      [
        apiError(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
        'overloaded',
        true,
      ],
      [
        apiError(400, { error: { message: 'prompt is too long: 210000 tokens > 200000 maximum' } }),
        'context_overflow',
        false,
      ],
      [apiError(401, { error: { message: 'invalid x-api-key' } }), 'auth_error', false],
      [apiError(404, { error: { message: 'no such model' } }), 'invalid_request', false],
      [apiError(undefined), 'network_error', true],
    ];
    for (const [error, code, retryable] of cases) {
      const model = new MockLanguageModelV4({
        doStream: async () => {
          throw error;
        },
      });
      const result = await createAgent({ model: aiSdkModel(model), retry: false }).prompt('x');
      expect(result.stopReason).toBe('error');
      expect(result.error).toMatchObject({ code, retryable, provider: 'mock-provider' });
    }
  });

  it('an error part fails the call; the retry policy takes it from there', async () => {
    const model = mock(
      [
        ...text('t', 'partial'),
        {
          type: 'error',
          error: { message: 'Too many requests', type: 'rate_limit_error', code: 'rate_limit_exceeded' },
        },
      ],
      [...text('t', 'whole'), finish('stop')],
    );
    const agent = createAgent({ model: aiSdkModel(model), retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('x');
    expect(result.text).toBe('whole');
    expect(events.filter((e) => e.type === 'model_retry').map((e) => e.error.code)).toEqual(['rate_limit']);
    expect(JSON.stringify(result.messages)).not.toContain('partial');
    await agent.stop();
  });

  it('bad stream data, an error finish and a stream without its finish each have their code', async () => {
    const invalid = new TypeValidationError({ value: { nope: true }, cause: new Error('expected candidates') });
    const model = aiSdkModel(
      mock(
        [{ type: 'error', error: invalid }],
        [finish('error', 'MALFORMED_FUNCTION_CALL')],
        [...text('t', 'half')],
        [...text('t', 'half'), finish('interrupted')],
      ),
    );
    const failure = async () => {
      try {
        await collect(model, ask('x'));
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(await failure()).toMatchObject({ code: 'bad_response', retryable: false });
    expect(await failure()).toMatchObject({
      code: 'server_error',
      providerType: 'MALFORMED_FUNCTION_CALL',
      retryable: true,
    });
    expect(await failure()).toMatchObject({ code: 'network_error', message: expect.stringMatching(/finish/) });
    expect(await failure()).toMatchObject({ code: 'network_error' });
  });

  it('an interrupt mid-stream cancels the provider stream and ends the turn as interrupted', async () => {
    let cancelled!: () => void;
    const cancel = new Promise<void>((resolve) => {
      cancelled = resolve;
    });
    let signal: AbortSignal | undefined;
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        signal = options.abortSignal;
        return {
          stream: new ReadableStream<LanguageModelV4StreamPart>({
            start(controller) {
              for (const part of text('t', 'slow ', 'slow')) controller.enqueue(part);
            },
            cancel() {
              cancelled();
            },
          }),
        };
      },
    });
    const agent = createAgent({ model: aiSdkModel(model) });
    const events = record(agent);
    const controller = new AbortController();
    const started = new Promise<void>((resolve) => agent.on('message_update', () => resolve()));
    const pending = agent.prompt('x', { signal: controller.signal });
    await started;
    controller.abort();
    await cancel;
    const result = await pending;
    expect(result.stopReason).toBe('interrupted');
    expect(signal?.aborted).toBe(true);
    expect(events.some((e) => e.type === 'message_end' && e.discarded === 'interrupted')).toBe(true);
    await agent.stop();
  });
});
