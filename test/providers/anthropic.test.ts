import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AssistantMessage, createAgent, type Message, ModelError, type ModelRequest } from '../../src/index.js';
import { anthropic } from '../../src/providers/index.js';
import { anthropicError, anthropicEvents, anthropicReply } from '../wire/builders.js';
import { WireServer } from '../wire/server.js';
import { abortMidStream, fastRetry, makeTools, record } from './helpers.js';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

const PATH = '/v1/messages';
const model = (extra: Partial<Parameters<typeof anthropic>[0]> = {}) =>
  anthropic({ model: 'claude-test', apiKey: 'sk-ant-test', baseURL: server.url, ...extra });

async function run(m: ReturnType<typeof anthropic>, request: ModelRequest) {
  const events = [];
  for await (const event of m.stream(request, new AbortController().signal)) events.push(event);
  return events;
}

const ask = (text: string): ModelRequest => ({
  messages: [{ role: 'user', content: [{ type: 'text', text }] }],
  tools: [],
});

describe('anthropic() through the agent, the SDK doing HTTP', () => {
  it('streams text (pings and padded payloads) and puts cache breakpoints on system, tools and the latest turn', async () => {
    const { tools } = makeTools();
    server.reply(
      PATH,
      anthropicReply({ text: 'Hello from Claude.', usage: { input: 3, output: 12, cacheRead: 1100, cacheWrite: 400 } }),
    );
    const agent = createAgent({ model: model(), system: 'Be kind.', tools });
    const result = await agent.prompt('hi');
    expect(result.text).toBe('Hello from Claude.');
    expect(result.usage).toEqual({ input: 3, output: 12, cacheRead: 1100, cacheWrite: 400, reasoning: 0 });

    const request = server.requests[0];
    // SDK 1.x sends the key as a bearer token.
    expect(request?.headers.authorization).toBe('Bearer sk-ant-test');
    expect(request?.headers['x-stainless-retry-count']).toBe('0');
    const body = request?.body;
    expect(body).toMatchObject({ model: 'claude-test', max_tokens: 8192, stream: true });
    expect(body.system).toEqual([{ type: 'text', text: 'Be kind.', cache_control: { type: 'ephemeral' } }]);
    expect(body.tools.map((t: { cache_control?: unknown }) => t.cache_control)).toEqual([
      undefined,
      undefined,
      { type: 'ephemeral' },
    ]);
    expect(body.tools[0]).toMatchObject({
      name: 'add',
      description: 'Adds two numbers',
      input_schema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
    ]);
    await agent.stop();
  });

  it('cache: false sends no breakpoints', async () => {
    server.reply(PATH, anthropicReply({ text: 'ok' }));
    await run(model({ cache: false }), { ...ask('x'), system: 'S' });
    expect(JSON.stringify(server.requests[0]?.body)).not.toContain('cache_control');
  });

  it('runs parallel tool_use blocks (input_json_delta split mid-token, "" meaning {}) and sends is_error results', async () => {
    const { tools, seen } = makeTools();
    server.reply(
      PATH,
      anthropicReply({
        text: 'Let me check.',
        toolUses: [
          { id: 'toolu_1', name: 'add', input: '{"a": 20, "b": 22}' },
          { id: 'toolu_2', name: 'broken', input: '' },
        ],
        split: 2,
      }),
      anthropicReply({ text: 'It is 42, and the other tool failed.' }),
    );
    const agent = createAgent({ model: model(), tools, maxTokens: 1000 });
    const result = await agent.prompt('go');
    expect(result.text).toBe('It is 42, and the other tool failed.');
    expect(seen).toEqual([{ name: 'add', args: { a: 20, b: 22 } }]);
    // Usage of both steps (10 in / 5 out each, as the builder reports) summed for the turn and the agent.
    expect(result.usage).toEqual({ input: 20, output: 10, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
    expect(agent.usage).toEqual(result.usage);
    const assistant = result.messages[1] as AssistantMessage;
    expect(assistant.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_call', id: 'toolu_1', name: 'add', arguments: { a: 20, b: 22 } },
      { type: 'tool_call', id: 'toolu_2', name: 'broken', arguments: {} },
    ]);

    const second = server.requests[1]?.body;
    expect(second.max_tokens).toBe(1000);
    expect(second.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 20, b: 22 } },
          { type: 'tool_use', id: 'toolu_2', name: 'broken', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '42' }], is_error: false },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            content: [{ type: 'text', text: expect.stringContaining('disk on fire') }],
            is_error: true,
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ]);
    await agent.stop();
  });

  it('keeps thinking with its signature and replays it exactly to the same model, never to another', async () => {
    const { tools } = makeTools();
    const signature = 'EqQBCkYIBxgCKkBsig+/=';
    server.reply(
      PATH,
      anthropicReply({
        thinking: { text: 'The user wants a sum. I will call add.', signature },
        toolUses: [{ id: 'toolu_t', name: 'add', input: '{"a":1,"b":2}' }],
      }),
      anthropicReply({ text: 'Three.' }),
    );
    const agent = createAgent({ model: model(), tools, reasoning: 'medium' });
    const events = record(agent);
    const result = await agent.prompt('1+2');
    expect(result.text).toBe('Three.');
    const reasoning = events.flatMap((e) =>
      e.type === 'message_update' && e.delta.type === 'reasoning' ? [e.delta.delta] : [],
    );
    expect(reasoning.join('')).toBe('The user wants a sum. I will call add.');

    const first = server.requests[0]?.body;
    expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
    const second = server.requests[1]?.body;
    expect(second.messages[1].content[0]).toEqual({
      type: 'thinking',
      thinking: 'The user wants a sum. I will call add.',
      signature,
    });

    const history = JSON.parse(JSON.stringify(agent.messages)) as Message[];
    server.reply(PATH, anthropicReply({ text: 'x' }));
    await run(model({ model: 'claude-other' }), { messages: [...history, ...ask('again').messages], tools: [] });
    const other = server.requests[2]?.body;
    expect(JSON.stringify(other.messages)).not.toContain('thinking');
    expect(other.messages[1].content[0]).toMatchObject({ type: 'tool_use', id: 'toolu_t' });
    await agent.stop();
  });

  it('keeps redacted thinking as an opaque part and sends its data back untouched', async () => {
    server.reply(
      PATH,
      anthropicReply({ redacted: ['EmwKAhgBEgy3va3pzix/LafPsn4a'], text: 'Hi.' }),
      anthropicReply({ text: 'Again.' }),
    );
    const agent = createAgent({ model: model({ thinking: { budgetTokens: 2048 } }) });
    const result = await agent.prompt('ANTHROPIC_MAGIC_STRING');
    expect((result.messages[1] as AssistantMessage).content[0]).toEqual({
      type: 'opaque',
      kind: 'redacted_thinking',
      provider: 'anthropic',
      model: 'claude-test',
      data: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
    });
    await agent.prompt('more');
    expect(server.requests[1]?.body.messages[1].content[0]).toEqual({
      type: 'redacted_thinking',
      data: 'EmwKAhgBEgy3va3pzix/LafPsn4a',
    });
    expect(server.requests[0]?.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    await agent.stop();
  });

  it('continues pause_turn automatically and joins the answers into one message, usage summed', async () => {
    const search = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'weather' } };
    const found = { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] };
    server.reply(
      PATH,
      anthropicReply({
        text: 'Searching.',
        serverBlocks: [search],
        stopReason: 'pause_turn',
        usage: { input: 100, output: 10 },
      }),
      anthropicReply({ serverBlocks: [found], text: 'Sunny.', usage: { input: 200, output: 20 } }),
    );
    const agent = createAgent({ model: model() });
    const result = await agent.prompt('weather?');
    const assistant = result.messages[1] as AssistantMessage;
    expect(assistant.stopReason).toBe('stop');
    expect(assistant.content.map((p) => (p.type === 'opaque' ? p.kind : p.type))).toEqual([
      'server_tool_use',
      'text',
      'web_search_tool_result',
      'text',
    ]);
    expect(result.text).toBe('Searching.Sunny.');
    expect(result.usage).toMatchObject({ input: 300, output: 30 });
    expect(server.requests).toHaveLength(2);
    // The continuation re-sends the paused content as the assistant turn.
    const continuation = server.requests[1]?.body.messages;
    expect(continuation).toHaveLength(2);
    expect(continuation[1].role).toBe('assistant');
    expect(continuation[1].content[0]).toEqual(search);
    expect(continuation[1].content[1]).toMatchObject({ type: 'text', text: 'Searching.' });
    await agent.stop();
  });

  it('a tool_use cut by max_tokens keeps its broken JSON (no content_block_stop) and stops with length', async () => {
    server.reply(
      PATH,
      anthropicReply({
        toolUses: [{ id: 'toolu_cut', name: 'add', input: '{"a": 1, "b' }],
        cutLastToolUse: true,
        stopReason: 'max_tokens',
      }),
    );
    const events = await run(model(), ask('x'));
    expect(events.filter((e) => e.type === 'tool_call_end')).toEqual([{ type: 'tool_call_end', id: 'toolu_cut' }]);
    const done = events.at(-1);
    expect(done).toMatchObject({ type: 'done', stopReason: 'length' });
    if (done?.type !== 'done') throw new Error('no done');
    expect(done.message.content[0]).toMatchObject({
      type: 'tool_call',
      id: 'toolu_cut',
      arguments: {},
      invalidArguments: { text: '{"a": 1, "b' },
    });
  });

  it('maps toolChoice, images, tool-result images, and native structured output for a strict-compatible schema', async () => {
    server.reply(PATH, anthropicReply({ text: '{"n":1}' }));
    const schema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };
    await run(model(), {
      messages: [
        { role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_call', id: 'toolu_i', name: 'shot', arguments: {} }],
          provider: 'anthropic',
          model: 'claude-test',
          stopReason: 'tool_calls',
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool_result',
              toolCallId: 'toolu_i',
              toolName: 'shot',
              isError: false,
              content: [{ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'AAAA' } }],
            },
          ],
        },
      ],
      tools: [{ name: 'shot', description: 'Screenshot', inputSchema: { type: 'object', properties: {} } }],
      toolChoice: 'required',
      outputSchema: { name: 'final_answer', schema },
    });
    const body = server.requests[0]?.body;
    expect(body.tool_choice).toEqual({ type: 'any' });
    expect(body.messages[0].content[0]).toEqual({
      type: 'image',
      source: { type: 'url', url: 'https://example.com/a.png' },
    });
    expect(body.messages[2].content[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
    ]);
    expect(body.output_config).toEqual({
      format: { type: 'json_schema', schema: { ...schema, additionalProperties: false } },
    });
  });
});

describe('Anthropic failures', () => {
  it('529 overloaded is retried; 429 honours retry-after; then success', async () => {
    server.reply(
      PATH,
      anthropicError(529, 'overloaded_error', 'Overloaded'),
      anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', {
        'retry-after': '0',
        'x-should-retry': 'true',
      }),
      anthropicReply({ text: 'made it' }),
    );
    const agent = createAgent({ model: model(), retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('x');
    expect(result.text).toBe('made it');
    const retries = events.filter((e) => e.type === 'model_retry');
    expect(retries.map((e) => [e.error.code, e.error.status, e.error.providerType, e.error.requestId])).toEqual([
      ['overloaded', 529, 'overloaded_error', 'req_anthropic_529'],
      ['rate_limit', 429, 'rate_limit_error', 'req_anthropic_429'],
    ]);
    expect(retries[1]?.delayMs).toBe(0);
    await agent.stop();
  });

  it('x-should-retry: false stops a retry the status would allow', async () => {
    server.reply(PATH, anthropicError(500, 'api_error', 'Internal', { 'x-should-retry': 'false' }));
    const result = await createAgent({ model: model(), retry: fastRetry }).prompt('x');
    expect(result.error).toMatchObject({ code: 'server_error', status: 500, retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('401 is auth_error and a prompt that is too long is context_overflow', async () => {
    server.reply(
      PATH,
      anthropicError(401, 'authentication_error', 'invalid x-api-key'),
      anthropicError(400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'),
    );
    const one = await createAgent({ model: model(), retry: fastRetry }).prompt('x');
    expect(one.error).toBeInstanceOf(ModelError);
    expect(one.error).toMatchObject({
      code: 'auth_error',
      status: 401,
      providerType: 'authentication_error',
      requestId: 'req_anthropic_401',
    });
    const two = await createAgent({ model: model(), retry: fastRetry }).prompt('x');
    expect(two.error).toMatchObject({ code: 'context_overflow', status: 400 });
    expect(server.requests).toHaveLength(2);
  });

  it('an error event inside the 200 stream is classified (overloaded, retried)', async () => {
    const events = anthropicEvents({ text: 'partial' }).slice(0, 4);
    events.push({
      event: 'error',
      data: JSON.stringify({
        type: 'error',
        error: { details: null, type: 'overloaded_error', message: 'Overloaded' },
        request_id: 'req_mid',
      }),
    });
    server.reply(PATH, { kind: 'sse', events }, anthropicReply({ text: 'second try' }));
    const agent = createAgent({ model: model(), retry: fastRetry });
    const log = record(agent);
    const result = await agent.prompt('x');
    expect(result.text).toBe('second try');
    expect(log.find((e) => e.type === 'model_retry')).toMatchObject({
      error: { code: 'overloaded', providerType: 'overloaded_error', requestId: 'req_mid' },
    });
    await agent.stop();
  });

  it('a stream without message_stop is a classified error; a cut socket too', async () => {
    server.reply(
      PATH,
      { kind: 'sse', events: anthropicEvents({ text: 'no end' }).slice(0, -1) },
      { kind: 'sse', events: anthropicEvents({ text: 'cut' }).slice(0, 4), cut: true },
    );
    const one = await createAgent({ model: model(), retry: false }).prompt('x');
    expect(one.error).toMatchObject({ code: 'network_error' });
    expect(one.error?.message).toMatch(/message_stop/);
    const two = await createAgent({ model: model(), retry: false }).prompt('x');
    expect(two.error).toMatchObject({ code: 'network_error' });
  });

  it('abort mid-stream closes the HTTP request at once', async () => {
    const { result, events } = await abortMidStream(
      server,
      PATH,
      anthropicEvents({ text: 'a b c d e f' }).slice(0, 4),
      model(),
    );
    expect(result.stopReason).toBe('interrupted');
    expect(events.some((e) => e.type === 'message_end' && e.discarded === 'interrupted')).toBe(true);
  });

  it('a missing API key is auth_error before any request, and a key set later is used', async () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      const m = anthropic({ model: 'claude-test', baseURL: server.url });
      await expect(run(m, ask('x'))).rejects.toMatchObject({
        code: 'auth_error',
        message: 'Anthropic: no API key (pass apiKey or set ANTHROPIC_API_KEY)',
      });
      expect(server.requests).toHaveLength(0);
      // The failed lookup is not remembered: the same model makes its client once a key exists.
      process.env.ANTHROPIC_API_KEY = 'sk-later';
      server.reply(PATH, anthropicReply({ text: 'ok' }));
      await run(m, ask('x'));
      expect(server.requests).toHaveLength(1);
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});
