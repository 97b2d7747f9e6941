/**
 * What each adapter puts on the wire for histories the agent tests do not reach: mixed-provider histories,
 * images in tool results, opaque parts, option edges. Bodies are read off the loopback server, as sent by the SDK.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AssistantMessage, Message, Model, ModelEvent, ModelRequest } from '../../src/index.js';
import { anthropic, openai } from '../../src/providers/index.js';
import { anthropicEvents, anthropicReply, chatReply, responsesEvents, responsesReply } from '../wire/builders.js';
import { type WirePath, type WireRequest, WireServer } from '../wire/server.js';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
const assistant = (provider: string, model: string, content: AssistantMessage['content']): AssistantMessage => ({
  role: 'assistant',
  content,
  provider,
  model,
  stopReason: 'tool_calls',
  usage: zero,
});

/** A history with a tool call whose result carries an image, and parts only some models may see. */
function history(provider: string, model: string): Message[] {
  return [
    { role: 'user', content: [{ type: 'text', text: 'look' }] },
    assistant(provider, model, [
      {
        type: 'reasoning',
        text: 'mine',
        opaque: { provider, model, data: { type: 'reasoning', id: 'rs_1', summary: [] } },
      },
      { type: 'reasoning', text: 'foreign', opaque: { provider: 'elsewhere', model: 'x', data: { signature: 'sig' } } },
      {
        type: 'opaque',
        kind: 'web_search_call',
        provider,
        model,
        data: { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      },
      {
        type: 'opaque',
        kind: 'redacted_thinking',
        provider: 'elsewhere',
        model: 'x',
        data: { type: 'redacted_thinking', data: 'zz' },
      },
      { type: 'text', text: 'Taking a shot.' },
      { type: 'tool_call', id: 'call_1', name: 'shot', arguments: {} },
      {
        type: 'tool_call',
        id: 'call_2',
        name: 'shot',
        arguments: {},
        invalidArguments: { text: '{"x":', error: 'bad' },
      },
    ]),
    {
      role: 'tool',
      content: [
        {
          type: 'tool_result',
          toolCallId: 'call_1',
          toolName: 'shot',
          isError: false,
          content: [
            { type: 'text', text: 'here' },
            { type: 'image', source: { kind: 'url', url: 'https://example.com/s.png' } },
          ],
        },
        {
          type: 'tool_result',
          toolCallId: 'call_2',
          toolName: 'shot',
          isError: true,
          content: [{ type: 'text', text: 'bad args' }],
        },
      ],
    },
    { role: 'user', content: [{ type: 'text', text: 'and now?' }], source: 'steer' },
  ];
}

async function send(
  model: Model,
  path: WirePath,
  request: ModelRequest,
  reply = true,
): Promise<{ body: WireRequest['body']; events: ModelEvent[] }> {
  if (reply) {
    server.reply(
      path,
      path === '/v1/messages'
        ? anthropicReply({ text: 'ok' })
        : path === '/v1/responses'
          ? responsesReply({ text: 'ok' })
          : chatReply({ text: 'ok' }),
    );
  }
  const events: ModelEvent[] = [];
  for await (const event of model.stream(request, new AbortController().signal)) events.push(event);
  return { body: server.requests.at(-1)?.body, events };
}

const tool = { name: 'shot', description: 'Screenshot', inputSchema: { type: 'object', properties: {} } };

describe('Chat Completions bodies', () => {
  const model = (extra = {}) => openai({ model: 'm', apiKey: 'k', baseURL: server.baseURL, ...extra });

  it('moves tool-result images into a user message after the tool messages and drops reasoning and opaque parts', async () => {
    const { body } = await send(model(), '/v1/chat/completions', {
      messages: history('openai-chat', 'm'),
      tools: [tool],
      toolChoice: { name: 'shot' },
    });
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'shot' } });
    expect(body.messages).toEqual([
      { role: 'user', content: 'look' },
      {
        role: 'assistant',
        content: 'Taking a shot.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'shot', arguments: '{}' } },
          { id: 'call_2', type: 'function', function: { name: 'shot', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'here' },
      { role: 'tool', tool_call_id: 'call_2', content: 'bad args' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by the tools above:' },
          { type: 'image_url', image_url: { url: 'https://example.com/s.png' } },
        ],
      },
      { role: 'user', content: 'and now?' },
    ]);
  });

  it('asks compatible servers for json_object, honours options and extra body fields', async () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const { body } = await send(
      model({ extraBody: { top_k: 20 }, includeUsage: false, reasoning: 'minimal' }),
      '/v1/chat/completions',
      {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
        tools: [],
        outputSchema: { name: 'final_answer', schema },
      },
    );
    expect(body.response_format).toEqual({ type: 'json_object' });
    expect(body.top_k).toBe(20);
    expect(body.stream_options).toBeUndefined();
    expect(body.reasoning_effort).toBe('minimal');
    const second = await send(
      model({ structuredOutput: 'json_schema', maxTokensField: 'max_completion_tokens' }),
      '/v1/chat/completions',
      {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
        tools: [],
        maxTokens: 7,
        outputSchema: { name: 'final_answer', schema: { ...schema, required: [] } },
      },
    );
    // `a` is optional: no strict version, so the schema goes as it is with strict false.
    expect(second.body.response_format.json_schema).toEqual({
      name: 'final_answer',
      schema: { ...schema, required: [] },
      strict: false,
    });
    expect(second.body.max_completion_tokens).toBe(7);
  });

  it('gives a tool call that came without an id one that differs from step to step', async () => {
    const chunk = (id: string) => ({
      kind: 'sse' as const,
      done: true,
      events: [
        {
          data: JSON.stringify({
            id,
            choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'shot', arguments: '{}' } }] } }],
          }),
        },
        { data: JSON.stringify({ id, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }) },
      ],
    });
    server.reply('/v1/chat/completions', chunk('gen-1'), chunk('gen-1'));
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { events } = await send(
        model(),
        '/v1/chat/completions',
        { messages: history('x', 'y').slice(0, 1), tools: [] },
        false,
      );
      const done = events.at(-1);
      if (done?.type !== 'done') throw new Error('no done');
      const call = done.message.content[0];
      if (call?.type !== 'tool_call') throw new Error('no call');
      ids.push(call.id);
    }
    expect(ids[0]).toMatch(/^call_gen-1_/);
    expect(ids[0]).not.toBe(ids[1]);
  });

  it('maps content_filter, and a tool call without a name is a bad_response', async () => {
    server.reply('/v1/chat/completions', chatReply({ text: 'partial', finish: 'content_filter' }));
    const { events } = await send(
      model(),
      '/v1/chat/completions',
      { messages: history('x', 'y').slice(0, 1), tools: [] },
      false,
    );
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'content_filter' });

    server.reply('/v1/chat/completions', {
      kind: 'sse',
      events: [
        {
          data: JSON.stringify({
            id: 'c',
            choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{' } }] } }],
          }),
        },
      ],
      done: true,
    });
    await expect(
      send(model(), '/v1/chat/completions', { messages: history('x', 'y').slice(0, 1), tools: [] }, false),
    ).rejects.toMatchObject({
      code: 'bad_response',
    });
  });
});

describe('Responses bodies', () => {
  const model = (extra = {}) =>
    openai({ model: 'gpt-r', apiKey: 'k', baseURL: server.baseURL, api: 'responses', ...extra });

  it('replays its own reasoning (by id when stored) and items, drops foreign ones, keeps raw broken arguments', async () => {
    const { body } = await send(model(), '/v1/responses', {
      messages: history('openai', 'gpt-r'),
      tools: [tool],
      toolChoice: 'required',
    });
    expect(body.tool_choice).toBe('required');
    expect(body.input).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'look' }] },
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      { role: 'assistant', content: 'Taking a shot.' },
      { type: 'function_call', call_id: 'call_1', name: 'shot', arguments: '{}' },
      { type: 'function_call', call_id: 'call_2', name: 'shot', arguments: '{"x":' },
      {
        type: 'function_call_output',
        call_id: 'call_1',
        output: [
          { type: 'input_text', text: 'here' },
          { type: 'input_image', image_url: 'https://example.com/s.png', detail: 'auto' },
        ],
      },
      { type: 'function_call_output', call_id: 'call_2', output: 'bad args' },
      { role: 'user', content: [{ type: 'input_text', text: 'and now?' }] },
    ]);
  });

  it('with store: false drops reasoning that has no encrypted content; reasoning summary can be turned off', async () => {
    const { body } = await send(model({ store: false, reasoning: 'low', reasoningSummary: false }), '/v1/responses', {
      messages: history('openai', 'gpt-r'),
      tools: [],
    });
    expect(body.input.some((item: { type?: string }) => item.type === 'reasoning')).toBe(false);
    expect(body.reasoning).toEqual({ effort: 'low' });
    expect(body.store).toBe(false);
  });

  it('streams raw reasoning text and keeps unknown output items as opaque parts', async () => {
    const events = responsesEvents({ text: 'hi' });
    const completed = events.pop();
    const item = { id: 'ws_9', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } };
    events.push(
      {
        event: 'response.output_item.added',
        data: JSON.stringify({
          type: 'response.output_item.added',
          output_index: 1,
          item: { ...item, status: 'in_progress' },
        }),
      },
      {
        event: 'response.output_item.done',
        data: JSON.stringify({ type: 'response.output_item.done', output_index: 1, item }),
      },
      {
        event: 'response.output_item.added',
        data: JSON.stringify({
          type: 'response.output_item.added',
          output_index: 2,
          item: { id: 'rs_raw', type: 'reasoning', summary: [] },
        }),
      },
      {
        event: 'response.reasoning_text.delta',
        data: JSON.stringify({
          type: 'response.reasoning_text.delta',
          item_id: 'rs_raw',
          output_index: 2,
          content_index: 0,
          delta: 'raw thought',
        }),
      },
      { event: 'response.some_future_event', data: JSON.stringify({ type: 'response.some_future_event' }) },
    );
    if (completed) events.push(completed);
    server.reply('/v1/responses', { kind: 'sse', events });
    const { events: out } = await send(
      model(),
      '/v1/responses',
      { messages: history('x', 'y').slice(0, 1), tools: [] },
      false,
    );
    const done = out.at(-1);
    if (done?.type !== 'done') throw new Error('no done');
    expect(done.message.content.map((p) => (p.type === 'opaque' ? `opaque:${p.kind}` : p.type))).toEqual([
      'text',
      'opaque:web_search_call',
      'reasoning',
    ]);
    expect(out.filter((e) => e.type === 'reasoning_delta')).toEqual([
      { type: 'reasoning_delta', delta: 'raw thought' },
    ]);
  });
});

describe('Responses cut by the output limit', () => {
  it('keeps a function call that never finished, with its broken arguments, closes it once, stops with length', async () => {
    const events = responsesEvents({
      toolCalls: [{ callId: 'call_cut', name: 'shot', args: '{"path": "/tm' }],
      status: 'incomplete',
      incompleteReason: 'max_output_tokens',
    }).filter((event) => !/function_call_arguments\.done|output_item\.done/.test(event.event ?? ''));
    server.reply('/v1/responses', { kind: 'sse', events });
    const model = openai({ model: 'gpt-r', apiKey: 'k', baseURL: server.baseURL, api: 'responses' });
    const { events: out } = await send(
      model,
      '/v1/responses',
      { messages: history('x', 'y').slice(0, 1), tools: [] },
      false,
    );
    expect(out.filter((e) => e.type === 'tool_call_end')).toEqual([{ type: 'tool_call_end', id: 'call_cut' }]);
    const done = out.at(-1);
    if (done?.type !== 'done') throw new Error('no done');
    expect(done.stopReason).toBe('length');
    expect(done.message.content).toEqual([
      {
        type: 'tool_call',
        id: 'call_cut',
        name: 'shot',
        arguments: {},
        invalidArguments: { text: '{"path": "/tm', error: expect.any(String) },
      },
    ]);
  });
});

describe('Anthropic bodies', () => {
  const model = (extra = {}) => anthropic({ model: 'claude-x', apiKey: 'k', baseURL: server.url, ...extra });

  it('merges the user-side messages (tool results first), replays only its own blocks, skips empty text', async () => {
    const messages = history('anthropic', 'claude-x');
    messages.splice(3, 0, { role: 'user', content: [{ type: 'text', text: '' }] });
    const { body } = await send(model({ cache: { ttl: '1h' } }), '/v1/messages', {
      messages,
      tools: [tool],
      toolChoice: { name: 'shot' },
    });
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'shot' });
    expect(body.messages).toHaveLength(3);
    // Its own thinking without a signature is not sent (the API would reject it); foreign parts are dropped.
    expect(body.messages[1].content.map((b: { type: string }) => b.type)).toEqual([
      'web_search_call',
      'text',
      'tool_use',
      'tool_use',
    ]);
    // Broken arguments go back as the {} the call was answered with.
    expect(body.messages[1].content[3]).toEqual({ type: 'tool_use', id: 'call_2', name: 'shot', input: {} });
    expect(body.messages[2].content.map((b: { type: string }) => b.type)).toEqual([
      'tool_result',
      'tool_result',
      'text',
    ]);
    expect(body.messages[2].content[1]).toMatchObject({ tool_use_id: 'call_2', is_error: true });
    expect(body.messages[2].content[2]).toEqual({
      type: 'text',
      text: 'and now?',
      cache_control: { type: 'ephemeral', ttl: '1h' },
    });
  });

  it('sends an empty tool result without content', async () => {
    const messages: Message[] = [
      ...history('anthropic', 'claude-x').slice(0, 2),
      {
        role: 'tool',
        content: [
          { type: 'tool_result', toolCallId: 'call_1', toolName: 'shot', isError: false, content: [] },
          {
            type: 'tool_result',
            toolCallId: 'call_2',
            toolName: 'shot',
            isError: false,
            content: [{ type: 'text', text: '' }],
          },
        ],
      },
    ];
    const { body } = await send(model({ cache: false }), '/v1/messages', { messages, tools: [tool] });
    expect(body.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'call_1', is_error: false },
      { type: 'tool_result', tool_use_id: 'call_2', is_error: false },
    ]);
  });

  it('maps thinking options: adaptive, off, and none when max_tokens is too small for a budget', async () => {
    const ask: ModelRequest = {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
      tools: [],
      reasoning: { effort: 'high' },
    };
    expect((await send(model({ thinking: 'adaptive' }), '/v1/messages', ask)).body.thinking).toEqual({
      type: 'adaptive',
    });
    expect((await send(model({ thinking: false }), '/v1/messages', ask)).body.thinking).toBeUndefined();
    expect((await send(model(), '/v1/messages', { ...ask, maxTokens: 1000 })).body.thinking).toBeUndefined();
    expect((await send(model(), '/v1/messages', { ...ask, maxTokens: 4000 })).body.thinking).toEqual({
      type: 'enabled',
      budget_tokens: 3000,
    });
    const forced = await send(model({ thinking: { budgetTokens: 2000 } }), '/v1/messages', {
      ...ask,
      toolChoice: 'required',
      tools: [tool],
    });
    expect(forced.body.tool_choice).toEqual({ type: 'any' });
    expect(forced.body.thinking).toBeUndefined(); // the API refuses thinking with a forced tool
    expect(
      (await send(model(), '/v1/messages', { ...ask, toolChoice: 'none', tools: [tool] })).body.tool_choice,
    ).toEqual({ type: 'none' });
    expect(
      (await send(model(), '/v1/messages', { ...ask, toolChoice: 'auto', tools: [tool] })).body.tool_choice,
    ).toEqual({ type: 'auto' });
  });

  it('leaves structured output to the prompt for a schema with no strict version, or when turned off', async () => {
    const loose = { type: 'object', properties: { a: { type: 'string' } } };
    const ask = (schema: object): ModelRequest => ({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
      tools: [],
      outputSchema: { name: 'final_answer', schema: schema as never },
    });
    expect((await send(model(), '/v1/messages', ask(loose))).body.output_config).toBeUndefined();
    const strict = { ...loose, required: ['a'] };
    expect(
      (await send(model({ structuredOutput: false }), '/v1/messages', ask(strict))).body.output_config,
    ).toBeUndefined();
  });

  it('stops after maxPauseContinuations and reports pause_turn; a delta for an unknown block is a bad_response', async () => {
    server.reply(
      '/v1/messages',
      anthropicReply({ text: 'one', stopReason: 'pause_turn' }),
      anthropicReply({ text: 'two', stopReason: 'pause_turn' }),
    );
    const { events } = await send(
      model({ maxPauseContinuations: 1 }),
      '/v1/messages',
      { messages: history('x', 'y').slice(0, 1), tools: [] },
      false,
    );
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'pause_turn' });
    expect(server.requests).toHaveLength(2);

    const stray = anthropicEvents({ text: 'x' });
    stray.splice(1, 0, {
      event: 'content_block_delta',
      data: JSON.stringify({ type: 'content_block_delta', index: 7, delta: { type: 'text_delta', text: '?' } }),
    });
    server.reply('/v1/messages', { kind: 'sse', events: stray });
    await expect(
      send(model(), '/v1/messages', { messages: history('x', 'y').slice(0, 1), tools: [] }, false),
    ).rejects.toMatchObject({
      code: 'bad_response',
    });
  });
});
