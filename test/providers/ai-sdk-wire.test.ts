/**
 * Real AI SDK provider packages through `aiSdkModel`, doing real HTTP to the loopback server: `@ai-sdk/google`
 * against Gemini's `streamGenerateContent?alt=sse` and `@ai-sdk/openai-compatible` against Chat Completions.
 */

import { inspect } from 'node:util';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AssistantMessage, aiSdkModel, createAgent } from '../../src/index.js';
import { chatEvents, chatReply, openaiError } from '../wire/builders.js';
import { geminiError, geminiEvents, geminiReply } from '../wire/gemini.js';
import { WireServer } from '../wire/server.js';
import { abortMidStream, fastRetry, makeTools, record } from './helpers.js';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

/** Runs one prompt on a fresh agent; its result, every event, and how many requests the server got. */
async function run(model: ReturnType<typeof aiSdkModel>) {
  const agent = createAgent({ model, retry: fastRetry });
  const events = record(agent);
  const result = await agent.prompt('hi');
  await agent.stop();
  return { result, retries: events.filter((e) => e.type === 'model_retry'), requests: server.requests.length };
}

describe('@ai-sdk/google through aiSdkModel, against Gemini wire', () => {
  const PATH = '/v1beta/models/gemini-test:streamGenerateContent';
  const gemini = () =>
    aiSdkModel(createGoogleGenerativeAI({ apiKey: 'gemini-test-key', baseURL: `${server.url}/v1beta` })('gemini-test'));

  it('runs a tool loop: a whole call and a call whose arguments stream in pieces, thought signatures sent back', async () => {
    const { tools, seen } = makeTools();
    server.reply(
      PATH,
      geminiReply({
        thought: 'Two tools.',
        text: 'Checking.',
        calls: [{ name: 'add', args: { a: 2, b: 40 }, signature: 'c2lnLWFkZA==' }],
        streamedCall: {
          name: 'weather',
          pieces: [
            [{ jsonPath: '$.city', stringValue: 'Lis', willContinue: true }],
            [{ jsonPath: '$.city', stringValue: 'bon' }],
          ],
        },
        usage: { prompt: 50, candidates: 20, thoughts: 7, cached: 30 },
      }),
      geminiReply({ text: 'Done: 42, and sunny in Lisbon.' }),
    );
    const agent = createAgent({ model: gemini(), tools, system: 'Use the tools.', maxTokens: 256 });
    const events = record(agent);
    const result = await agent.prompt('go');

    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('Done: 42, and sunny in Lisbon.');
    expect(seen).toEqual([
      { name: 'add', args: { a: 2, b: 40 } },
      { name: 'weather', args: { city: 'Lisbon' } },
    ]);
    const first = result.messages[1] as AssistantMessage;
    expect(first.stopReason).toBe('tool_calls');
    expect(first.content.map((part) => part.type)).toEqual(['reasoning', 'text', 'tool_call', 'tool_call']);
    expect(first.content[0]).toMatchObject({ type: 'reasoning', text: 'Two tools.' });
    expect(first.usage).toEqual({ input: 20, output: 27, cacheRead: 30, cacheWrite: 0, reasoning: 7 });
    // The streamed call's arguments reached observers in more than one piece.
    const deltas = events.flatMap((e) =>
      e.type === 'message_update' && e.delta.type === 'tool_call' ? [e.delta.delta] : [],
    );
    expect(deltas.length).toBeGreaterThan(2);

    const [one, two] = server.requests;
    expect(one?.path).toBe(PATH);
    expect(one?.query).toBe('alt=sse');
    expect(one?.headers['x-goog-api-key']).toBe('gemini-test-key');
    expect(one?.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'Use the tools.' }] },
      contents: [{ role: 'user', parts: [{ text: 'go' }] }],
      generationConfig: { maxOutputTokens: 256 },
      tools: [{ functionDeclarations: expect.arrayContaining([expect.objectContaining({ name: 'add' })]) }],
    });
    const model = two?.body.contents[1];
    expect(model.role).toBe('model');
    // Gemini rejects a function call sent back without the signature it came with; thoughts go back signed too.
    expect(model.parts).toEqual([
      { text: 'Two tools.', thought: true, thoughtSignature: 'c2lnLXRob3VnaHQ=' },
      { text: 'Checking.' },
      {
        functionCall: expect.objectContaining({ name: 'add', args: { a: 2, b: 40 } }),
        thoughtSignature: 'c2lnLWFkZA==',
      },
      { functionCall: expect.objectContaining({ name: 'weather', args: { city: 'Lisbon' } }) },
    ]);
    const answers = two?.body.contents[2];
    expect(answers.parts.map((p: { functionResponse: { name: string } }) => p.functionResponse.name)).toEqual([
      'add',
      'weather',
    ]);
    expect(JSON.stringify(answers)).toContain('42');
    await agent.stop();
  });

  it('retries RESOURCE_EXHAUSTED (429) after its RetryInfo delay as rate_limit, UNAVAILABLE (503) as overloaded', async () => {
    server.reply(
      PATH,
      geminiError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota. Please retry in 0.02s.', [
        { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaId: 'PerMinute' }] },
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.02s' },
      ]),
      geminiError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'),
      geminiReply({ text: 'finally' }),
    );
    const { result, retries, requests } = await run(gemini());
    expect(result.text).toBe('finally');
    expect(retries.map((e) => [e.error.code, e.error.status, e.error.providerType])).toEqual([
      ['rate_limit', 429, 'RESOURCE_EXHAUSTED'],
      ['overloaded', 503, 'UNAVAILABLE'],
    ]);
    // The delay Google asked for, not the policy's own backoff.
    expect(retries[0]).toMatchObject({ delayMs: 20 });
    expect(requests).toBe(3);
  });

  it('a prompt over the context window is context_overflow, not retried', async () => {
    server.reply(
      PATH,
      geminiError(
        400,
        'INVALID_ARGUMENT',
        'The input token count (1210043) exceeds the maximum number of tokens allowed (1048576).',
      ),
    );
    const { result, requests } = await run(gemini());
    expect(result.error).toMatchObject({ code: 'context_overflow', status: 400, retryable: false });
    expect(requests).toBe(1);
  });

  it('a bad key (400 API_KEY_INVALID), 401 and 403 are auth_error, not retried', async () => {
    server.reply(
      PATH,
      geminiError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.'),
      geminiError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'),
      geminiError(403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers."),
    );
    for (const status of [400, 401, 403]) {
      const { result } = await run(gemini());
      expect(result.error).toMatchObject({ code: 'auth_error', status, retryable: false });
    }
    expect(server.requests).toHaveLength(3);
  });

  it('an error inside the 200 stream is classified from its body and retried when it may be', async () => {
    server.reply(
      PATH,
      {
        kind: 'sse',
        events: [
          ...geminiEvents({ text: 'partial', finish: null }),
          {
            data: JSON.stringify({
              error: { code: 500, message: 'An internal error has occurred.', status: 'INTERNAL' },
            }),
          },
        ],
      },
      geminiReply({ text: 'whole' }),
    );
    const { result, retries } = await run(gemini());
    expect(result.text).toBe('whole');
    expect(retries.map((e) => e.error.code)).toEqual(['server_error']);
    expect(JSON.stringify(result.messages)).not.toContain('partial');
  });

  it('a stream cut in the middle is a network_error: the partial answer is discarded and retried', async () => {
    server.reply(
      PATH,
      { kind: 'sse', events: geminiEvents({ text: 'partial answer', finish: null }), cut: true },
      geminiReply({ text: 'whole' }),
    );
    const { result, retries } = await run(gemini());
    expect(result.text).toBe('whole');
    expect(retries.map((e) => e.error.code)).toEqual(['network_error']);
    expect(JSON.stringify(result.messages)).not.toContain('partial');
  });

  it('an interrupt mid-stream closes the HTTP request and ends the turn as interrupted', async () => {
    const stalled = geminiEvents({ text: 'slow slow slow', finish: null }).slice(0, 2);
    const { result, events } = await abortMidStream(server, PATH, stalled, gemini());
    expect(result.stopReason).toBe('interrupted');
    expect(server.requests[0]?.clientClosedAfterMs).toBeDefined();
    expect(events.some((e) => e.type === 'message_end' && e.discarded === 'interrupted')).toBe(true);
  });
});

describe('@ai-sdk/openai-compatible through aiSdkModel, against Chat Completions wire', () => {
  const PATH = '/v1/chat/completions';
  const compat = () =>
    aiSdkModel(
      createOpenAICompatible({ name: 'compat', apiKey: 'compat-key', baseURL: server.baseURL, includeUsage: true })(
        'model-x',
      ),
    );

  it('runs a tool loop with parallel calls whose arguments are split mid-token', async () => {
    const { tools, seen } = makeTools();
    server.reply(
      PATH,
      chatReply({
        reasoning: 'Both.',
        text: 'Working.',
        toolCalls: [
          { id: 'call_A', name: 'add', args: '{"a": 2, "b": 40}' },
          { id: 'call_B', name: 'broken', args: '{}' },
        ],
        split: 2,
        usage: { prompt: 40, completion: 12, cached: 16 },
      }),
      chatReply({ text: 'Done: 42.' }),
    );
    const agent = createAgent({ model: compat(), tools, temperature: 0.1 });
    const result = await agent.prompt('go');

    expect(result.text).toBe('Done: 42.');
    expect(seen).toEqual([{ name: 'add', args: { a: 2, b: 40 } }]);
    const first = result.messages[1] as AssistantMessage;
    expect(first).toMatchObject({ provider: 'compat.chat', model: 'model-x', stopReason: 'tool_calls' });
    expect(first.content.filter((p) => p.type !== 'reasoning')).toEqual([
      { type: 'text', text: 'Working.' },
      { type: 'tool_call', id: 'call_A', name: 'add', arguments: { a: 2, b: 40 } },
      { type: 'tool_call', id: 'call_B', name: 'broken', arguments: {} },
    ]);
    expect(first.usage).toMatchObject({ input: 24, output: 12, cacheRead: 16 });

    const [one, two] = server.requests;
    expect(one?.headers.authorization).toBe('Bearer compat-key');
    expect(one?.body).toMatchObject({ model: 'model-x', stream: true, temperature: 0.1 });
    expect(one?.body.tools[0]).toMatchObject({ type: 'function', function: { name: 'add' } });
    expect(two?.body.messages.slice(1)).toEqual([
      expect.objectContaining({
        role: 'assistant',
        content: 'Working.',
        tool_calls: [
          { id: 'call_A', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":40}' } },
          { id: 'call_B', type: 'function', function: { name: 'broken', arguments: '{}' } },
        ],
      }),
      { role: 'tool', tool_call_id: 'call_A', content: '42' },
      { role: 'tool', tool_call_id: 'call_B', content: expect.stringContaining('disk on fire') },
    ]);
    await agent.stop();
  });

  it('retries 429 (after its retry-after) and 503, then succeeds', async () => {
    server.reply(
      PATH,
      openaiError(429, { message: 'Rate limit reached', type: 'rate_limit_error' }, { 'retry-after-ms': '15' }),
      openaiError(503, { message: 'Service overloaded' }),
      chatReply({ text: 'finally' }),
    );
    const { result, retries, requests } = await run(compat());
    expect(result.text).toBe('finally');
    expect(retries.map((e) => [e.error.code, e.error.status])).toEqual([
      ['rate_limit', 429],
      ['overloaded', 503],
    ]);
    expect(retries[0]).toMatchObject({ delayMs: 15 });
    expect(requests).toBe(3);
  });

  it('context overflow and a bad key are classified and not retried', async () => {
    server.reply(
      PATH,
      openaiError(400, {
        message: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.",
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
      }),
      openaiError(401, { message: 'Invalid API key', type: 'authentication_error' }),
    );
    expect((await run(compat())).result.error).toMatchObject({
      code: 'context_overflow',
      status: 400,
      retryable: false,
    });
    expect((await run(compat())).result.error).toMatchObject({ code: 'auth_error', status: 401, retryable: false });
    expect(server.requests).toHaveLength(2);
  });

  it('an error chunk inside the stream is classified from its body', async () => {
    server.reply(
      PATH,
      {
        kind: 'sse',
        events: [
          ...chatEvents({ text: 'part', finish: null }),
          {
            data: JSON.stringify({ error: { message: 'Rate limited upstream', type: 'rate_limit_error', code: 429 } }),
          },
        ],
        done: true,
      },
      chatReply({ text: 'whole' }),
    );
    const { result, retries } = await run(compat());
    expect(result.text).toBe('whole');
    expect(retries.map((e) => e.error.code)).toEqual(['rate_limit']);
  });

  it('a stream cut in the middle is a network_error: the partial answer is discarded and retried', async () => {
    server.reply(
      PATH,
      { kind: 'sse', events: chatEvents({ text: 'partial answer', finish: null }), cut: true },
      chatReply({ text: 'whole' }),
    );
    const { result, retries } = await run(compat());
    expect(result.text).toBe('whole');
    expect(retries.map((e) => e.error.code)).toEqual(['network_error']);
    expect(JSON.stringify(result.messages)).not.toContain('partial');
  });

  it('a server that refuses the connection is a network_error, retried', async () => {
    const gone = await WireServer.start();
    await gone.close();
    const model = aiSdkModel(createOpenAICompatible({ name: 'compat', baseURL: gone.baseURL })('model-x'));
    const { result, retries } = await run(model);
    expect(result.error).toMatchObject({ code: 'network_error', retryable: true });
    expect(retries).toHaveLength(fastRetry.maxRetries);
  });

  it('the key the provider was given never travels in an error, nor does a secret header', async () => {
    // Keys no pattern recognises: only knowing them can cut them out.
    const key = 'tenant7-Zq9xV2mLp4Rt8Wc';
    const token = 'gateway-Hk3pQ8vWx2Lm';
    server.reply(PATH, {
      kind: 'json',
      status: 401,
      headers: { 'x-echo-auth': `Bearer ${key}` },
      body: { error: { message: `Invalid token ${key} (gateway ${token})`, type: 'authentication_error' } },
    });
    const provider = createOpenAICompatible({ name: 'compat', apiKey: key, baseURL: server.baseURL });
    const model = aiSdkModel(provider('model-x'), { secrets: [key], headers: { 'x-gateway-token': token } });
    const agent = createAgent({ model, retry: false });
    const events: unknown[] = [];
    agent.on('turn_end', (e) => events.push(e));
    const result = await agent.prompt('hi');
    expect(server.requests[0]?.headers['x-gateway-token']).toBe(token);
    expect(result.error).toMatchObject({
      code: 'auth_error',
      message: expect.stringContaining('Invalid token [redacted]'),
    });
    const everywhere = [inspect(result.error, { depth: 8 }), JSON.stringify(events), inspect(events, { depth: 8 })];
    expect(everywhere.join('\n')).not.toContain(key);
    expect(everywhere.join('\n')).not.toContain(token);
    await agent.stop();
  });

  it('an interrupt mid-stream closes the HTTP request and ends the turn as interrupted', async () => {
    const stalled = chatEvents({ text: 'slow slow slow', finish: null }).slice(0, 2);
    const { result, events } = await abortMidStream(server, PATH, stalled, compat());
    expect(result.stopReason).toBe('interrupted');
    expect(server.requests[0]?.clientClosedAfterMs).toBeDefined();
    expect(events.some((e) => e.type === 'message_end' && e.discarded === 'interrupted')).toBe(true);
  });
});
