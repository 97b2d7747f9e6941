import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AssistantMessage, createAgent, ModelError } from '../../src/index.js';
import type { ToolMessage } from '../../src/protocol/index.js';
import { openai } from '../../src/providers/index.js';
import { chatEvents, chatReply, openaiError } from '../wire/builders.js';
import { WireServer } from '../wire/server.js';
import { abortMidStream, fastRetry, makeTools, record } from './helpers.js';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

const PATH = '/v1/chat/completions';
const model = () => openai({ model: 'gpt-test', apiKey: 'sk-test', baseURL: server.baseURL });

describe('openai({ api: "chat" }) through the agent, the SDK doing HTTP', () => {
  it('defaults to Chat Completions for a compatible server and streams text with usage', async () => {
    server.reply(PATH, chatReply({ text: 'Hello there, traveller.', usage: { prompt: 20, completion: 6, cached: 8 } }));
    const agent = createAgent({ model: model(), system: 'Be brief.' });
    const events = record(agent);
    const result = await agent.prompt('hi');

    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('Hello there, traveller.');
    expect(result.usage).toEqual({ input: 12, output: 6, cacheRead: 8, cacheWrite: 0, reasoning: 0 });
    const deltas = events.flatMap((e) =>
      e.type === 'message_update' && e.delta.type === 'text' ? [e.delta.delta] : [],
    );
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('Hello there, traveller.');

    const [request] = server.requests;
    expect(request?.path).toBe(PATH);
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.body).toMatchObject({
      model: 'gpt-test',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    });
    await agent.stop();
  });

  it('runs several parallel tool calls with arguments split mid-token and sends the results paired by id', async () => {
    const { tools, seen } = makeTools();
    server.reply(
      PATH,
      chatReply({
        text: 'Working.',
        toolCalls: [
          { id: 'call_A', name: 'add', args: '{"a": 2, "b": 40}' },
          { id: 'call_B', name: 'weather', args: '{"city":"Lisbon"}' },
          { id: 'call_C', name: 'broken', args: '{}' },
        ],
        split: 2,
      }),
      chatReply({ text: 'Done: 42.' }),
    );
    const agent = createAgent({ model: model(), tools, maxTokens: 300, temperature: 0.2, reasoning: 'low' });
    const result = await agent.prompt('go');

    expect(result.text).toBe('Done: 42.');
    expect(seen).toEqual([
      { name: 'add', args: { a: 2, b: 40 } },
      { name: 'weather', args: { city: 'Lisbon' } },
    ]);
    const assistant = result.messages[1] as AssistantMessage;
    expect(assistant.stopReason).toBe('tool_calls');
    expect(assistant.content.filter((p) => p.type === 'tool_call')).toEqual([
      { type: 'tool_call', id: 'call_A', name: 'add', arguments: { a: 2, b: 40 } },
      { type: 'tool_call', id: 'call_B', name: 'weather', arguments: { city: 'Lisbon' } },
      { type: 'tool_call', id: 'call_C', name: 'broken', arguments: {} },
    ]);

    const first = server.requests[0]?.body;
    expect(first.max_tokens).toBe(300); // compatible server: max_tokens
    expect(first.temperature).toBe(0.2);
    expect(first.reasoning_effort).toBe('low');
    expect(first.tools).toHaveLength(3);
    // A compatible server gets the tool's JSON Schema as it is, without `strict` (some reject the field).
    expect(first.tools[0]).toEqual({
      type: 'function',
      function: {
        name: 'add',
        description: 'Adds two numbers',
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
        },
      },
    });
    expect(first.tools[1].function.strict).toBeUndefined();

    const second = server.requests[1]?.body;
    expect(second.messages).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: 'Working.',
        tool_calls: [
          { id: 'call_A', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":40}' } },
          { id: 'call_B', type: 'function', function: { name: 'weather', arguments: '{"city":"Lisbon"}' } },
          { id: 'call_C', type: 'function', function: { name: 'broken', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_A', content: '42' },
      { role: 'tool', tool_call_id: 'call_B', content: 'Lisbon: 21°C' },
      { role: 'tool', tool_call_id: 'call_C', content: expect.stringContaining('disk on fire') },
    ]);
    await agent.stop();
  });

  it('answers malformed arguments of one call with an error result while the other call runs', async () => {
    const { tools, seen } = makeTools();
    server.reply(
      PATH,
      chatReply({
        toolCalls: [
          { id: 'call_ok', name: 'add', args: '{"a":1,"b":2}' },
          { id: 'call_bad', name: 'add', args: '{"a":1,"b":' },
        ],
      }),
      chatReply({ text: 'ok' }),
    );
    const agent = createAgent({ model: model(), tools });
    const result = await agent.prompt('go');
    expect(seen).toEqual([{ name: 'add', args: { a: 1, b: 2 } }]);
    const results = (result.messages[2] as ToolMessage).content;
    expect(results.map((r) => [r.toolCallId, r.isError])).toEqual([
      ['call_ok', false],
      ['call_bad', true],
    ]);
    await agent.stop();
  });

  it('streams reasoning_content (DeepSeek) and `reasoning` (Groq); replays reasoning_content to the same model only', async () => {
    const { tools } = makeTools();
    server.reply(
      PATH,
      chatReply({
        reasoning: 'Add them.',
        toolCalls: [{ id: 'call_r', name: 'add', args: '{"a":1,"b":1}' }],
        usage: { prompt: 5, completion: 9 },
        usageOnFinish: true,
      }),
      chatReply({ reasoning: 'Got 2.', text: 'Two.' }),
      chatReply({ reasoning: 'Hmm.', reasoningField: 'reasoning', text: 'Three.' }),
      chatReply({ text: 'Four.' }),
    );
    const agent = createAgent({ model: model(), tools });
    const one = await agent.prompt('1+1');
    const first = one.messages[1] as AssistantMessage;
    expect(first.content[0]).toEqual({
      type: 'reasoning',
      text: 'Add them.',
      opaque: { provider: 'openai-chat', model: 'gpt-test', data: { field: 'reasoning_content' } },
    });
    expect(one.usage.output).toBe(9);
    // DeepSeek's thinking mode rejects a tool-call history without its reasoning_content.
    expect(server.requests[1]?.body.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_r', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } }],
      reasoning_content: 'Add them.',
    });

    const two = await agent.prompt('and 3?');
    expect((two.messages[1] as AssistantMessage).content[0]).toMatchObject({ type: 'reasoning', text: 'Hmm.' });
    await agent.prompt('and 4?');
    // Groq's `reasoning` is not sent back.
    const last = server.requests[3]?.body.messages;
    expect(last.at(-2)).toEqual({ role: 'assistant', content: 'Three.' });

    // Another model gets no reasoning_content.
    server.reply(PATH, chatReply({ text: 'ok' }));
    await createAgent({
      model: openai({ model: 'other', apiKey: 'k', baseURL: server.baseURL }),
      messages: agent.messages,
    }).prompt('x');
    expect(JSON.stringify(server.requests[4]?.body.messages)).not.toContain('reasoning_content');
    await agent.stop();
  });

  it('uses max_completion_tokens, json_schema and strict tools for OpenAI itself (no baseURL)', async () => {
    // OpenAI itself (no baseURL option); the SDK client given is pointed at the loopback server.
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: server.baseURL, maxRetries: 0 });
    server.reply(PATH, chatReply({ text: '{"city":"Oslo"}' }));
    const m = openai({ model: 'gpt-test', api: 'chat', client });
    const events = [];
    for await (const event of m.stream(
      {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'json' }] }],
        tools: [
          {
            name: 'add',
            description: 'Adds',
            inputSchema: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
          },
        ],
        maxTokens: 50,
        outputSchema: {
          name: 'final_answer',
          schema: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
            additionalProperties: false,
          },
        },
      },
      new AbortController().signal,
    ))
      events.push(event);
    const body = server.requests[0]?.body;
    expect(body.max_completion_tokens).toBe(50);
    expect(body.max_tokens).toBeUndefined();
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'final_answer',
        strict: true,
        schema: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    });
    // OpenAI itself gets strict mode for a schema whose every property is required, the schema closed.
    expect(body.tools[0].function).toEqual({
      name: 'add',
      description: 'Adds',
      parameters: {
        type: 'object',
        properties: { a: { type: 'number' } },
        required: ['a'],
        additionalProperties: false,
      },
      strict: true,
    });
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'stop' });
  });

  it('sends images as image_url parts with data URLs', async () => {
    server.reply(PATH, chatReply({ text: 'A cat.' }));
    const agent = createAgent({ model: model() });
    await agent.prompt([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
    ]);
    expect(server.requests[0]?.body.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      ],
    });
    await agent.stop();
  });

  it('maps a refusal and a length stop', async () => {
    server.reply(PATH, chatReply({ refusal: "I can't help with that." }), chatReply({ text: 'Cut', finish: 'length' }));
    const m = model();
    const request = {
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'x' }] }],
      tools: [],
    };
    const last = async () => {
      let done: unknown;
      for await (const event of m.stream(request, new AbortController().signal))
        if (event.type === 'done') done = event;
      return done as { stopReason: string; message: AssistantMessage };
    };
    const refusal = await last();
    expect(refusal.stopReason).toBe('refusal');
    expect(refusal.message.content).toEqual([{ type: 'text', text: "I can't help with that." }]);
    expect((await last()).stopReason).toBe('length');
  });
});

describe('Chat Completions failures, classified', () => {
  it('401 is auth_error, not retried, with status, type and request id', async () => {
    server.reply(
      PATH,
      openaiError(401, {
        message:
          'Incorrect API key provided: sk-test-abcd1234. You can find your API key at https://platform.openai.com.',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      }),
    );
    const agent = createAgent({ model: model(), retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('hi');
    expect(result.stopReason).toBe('error');
    expect(result.error).toBeInstanceOf(ModelError);
    expect(result.error).toMatchObject({
      code: 'auth_error',
      status: 401,
      providerType: 'invalid_request_error',
      requestId: 'req_openai_401',
      retryable: false,
    });
    expect(events.filter((e) => e.type === 'model_retry')).toHaveLength(0);
    expect(server.requests).toHaveLength(1);
    // The key the server quoted back is cut out of the error that travels in events.
    expect(result.error?.message).toContain('sk-[redacted]');
    expect(JSON.stringify(events)).not.toContain('abcd1234');
    await agent.stop();
  });

  it('400 context length is context_overflow, not retried', async () => {
    server.reply(
      PATH,
      openaiError(400, {
        message:
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
        param: 'messages',
      }),
    );
    const result = await createAgent({ model: model(), retry: fastRetry }).prompt('hi');
    expect(result.error).toMatchObject({ code: 'context_overflow', status: 400, retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('429 with retry-after-ms is retried after that delay, with model_retry, then succeeds', async () => {
    server.reply(
      PATH,
      openaiError(
        429,
        { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
        { 'retry-after-ms': '30' },
      ),
      chatReply({ text: 'finally' }),
    );
    const agent = createAgent({ model: model(), retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('hi');
    expect(result.text).toBe('finally');
    const retries = events.filter((e) => e.type === 'model_retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, delayMs: 30, error: { code: 'rate_limit', status: 429 } });
    expect(server.requests).toHaveLength(2);
    await agent.stop();
  });

  it('500 is retried; a stream cut in the middle is discarded and retried', async () => {
    const cut = chatEvents({ text: 'partial answer that never ends' }).slice(0, 5);
    server.reply(
      PATH,
      openaiError(500, { message: 'The server had an error', type: 'server_error' }),
      { kind: 'sse', events: cut, cut: true },
      chatReply({ text: 'whole' }),
    );
    const agent = createAgent({ model: model(), retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('hi');
    expect(result.text).toBe('whole');
    const retries = events.filter((e) => e.type === 'model_retry');
    expect(retries.map((e) => e.error.code)).toEqual(['server_error', 'network_error']);
    // Each failed attempt's message is discarded; the cut one had streamed text, which is not in the history.
    const discarded = events.flatMap((e) => (e.type === 'message_end' && e.discarded === 'retry' ? [e.message] : []));
    expect(discarded.some((m) => JSON.stringify(m).includes('partial'))).toBe(true);
    expect(JSON.stringify(result.messages)).not.toContain('partial');
    expect(result.messages).toHaveLength(2);
    await agent.stop();
  });

  it('a stream that ends cleanly without finish_reason is a classified error', async () => {
    server.reply(PATH, { kind: 'sse', events: chatEvents({ text: 'half', finish: null }), done: true });
    const result = await createAgent({ model: model(), retry: false }).prompt('hi');
    expect(result.error).toMatchObject({ code: 'network_error' });
    expect(result.error?.message).toMatch(/finish_reason/);
  });

  it('an error event inside a 200 stream (Groq) is classified from its body', async () => {
    server.reply(PATH, {
      kind: 'sse',
      events: [
        ...chatEvents({ reasoning: 'thinking', finish: null }),
        {
          event: 'error',
          data: JSON.stringify({
            error: {
              message: 'Tool call validation failed',
              type: 'invalid_request_error',
              code: 'tool_use_failed',
              status_code: 400,
            },
          }),
        },
      ],
    });
    const result = await createAgent({ model: model(), retry: fastRetry }).prompt('hi');
    expect(result.error).toMatchObject({
      code: 'invalid_request',
      providerType: 'invalid_request_error',
      retryable: false,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('abort mid-stream closes the HTTP request at once', async () => {
    const stalled = chatEvents({ text: 'slow slow slow', finish: null }).slice(0, 2);
    const { result, events } = await abortMidStream(server, PATH, stalled, model());
    expect(result.stopReason).toBe('interrupted');
    expect(server.requests[0]?.clientClosedAfterMs).toBeDefined();
    expect(events.some((e) => e.type === 'message_end' && e.discarded === 'interrupted')).toBe(true);
  });
});
