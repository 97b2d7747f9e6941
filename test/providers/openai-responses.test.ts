import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AssistantMessage, createAgent, type Message, type ModelRequest } from '../../src/index.js';
import { openai } from '../../src/providers/index.js';
import { openaiError, responsesEvents, responsesReply } from '../wire/builders.js';
import { WireServer } from '../wire/server.js';
import { abortMidStream, fastRetry, makeTools, record } from './helpers.js';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

const PATH = '/v1/responses';
const model = (extra: Partial<Parameters<typeof openai>[0]> = {}) =>
  openai({ model: 'gpt-test', apiKey: 'sk-test', baseURL: server.baseURL, api: 'responses', ...extra });

async function run(m: ReturnType<typeof openai>, request: ModelRequest) {
  const events = [];
  for await (const event of m.stream(request, new AbortController().signal)) events.push(event);
  return events;
}

describe('openai({ api: "responses" }) through the agent', () => {
  it('is the default for OpenAI itself (no baseURL, no OPENAI_BASE_URL)', () => {
    const saved = process.env.OPENAI_BASE_URL;
    try {
      delete process.env.OPENAI_BASE_URL;
      expect(openai({ model: 'gpt-5', apiKey: 'sk-test' }).provider).toBe('openai');
      expect(openai({ model: 'x', apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1' }).provider).toBe('openai-chat');
      process.env.OPENAI_BASE_URL = 'http://127.0.0.1:1/v1';
      expect(openai({ model: 'x', apiKey: 'k' }).provider).toBe('openai-chat');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_BASE_URL;
      else process.env.OPENAI_BASE_URL = saved;
    }
  });

  it('streams text and maps usage (cached tokens out of input, reasoning tokens kept)', async () => {
    server.reply(
      PATH,
      responsesReply({ text: 'Bonjour à tous', usage: { input: 100, output: 30, cached: 64, reasoning: 12 } }),
    );
    const agent = createAgent({ model: model(), system: 'You are terse.' });
    const result = await agent.prompt('hello');
    expect(result.text).toBe('Bonjour à tous');
    expect(result.usage).toEqual({ input: 36, output: 30, cacheRead: 64, cacheWrite: 0, reasoning: 12 });
    const assistant = result.messages[1] as AssistantMessage;
    expect(assistant.responseId).toBe('resp_test1');
    expect(server.requests[0]?.body).toEqual({
      model: 'gpt-test',
      stream: true,
      instructions: 'You are terse.',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'hello' }] }],
    });
    await agent.stop();
  });

  it('runs parallel function calls (split arguments) and sends function_call_output paired by call_id', async () => {
    const { tools, seen } = makeTools();
    server.reply(
      PATH,
      responsesReply({
        toolCalls: [
          { callId: 'call_1', name: 'add', args: '{"a":3,"b":4}' },
          { callId: 'call_2', name: 'weather', args: '{"city":"Kyoto","unit":"C"}' },
        ],
        split: 2,
      }),
      responsesReply({ text: 'Seven, and mild in Kyoto.' }),
    );
    const agent = createAgent({ model: model(), tools, maxTokens: 500, temperature: 0.5 });
    const result = await agent.prompt('go');
    expect(result.text).toBe('Seven, and mild in Kyoto.');
    expect(seen.map((s) => s.name)).toEqual(['add', 'weather']);

    const first = server.requests[0]?.body;
    expect(first.max_output_tokens).toBe(500);
    expect(first.temperature).toBe(0.5);
    expect(first.tools.map((t: { name: string; strict: boolean }) => [t.name, t.strict])).toEqual([
      ['add', true],
      ['weather', false], // optional `unit`: strict must be false or the API rejects the schema
      ['broken', true],
    ]);
    expect(first.tools[1].parameters.required).toEqual(['city']);

    const second = server.requests[1]?.body;
    expect(second.input).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'go' }] },
      { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":3,"b":4}' },
      { type: 'function_call', call_id: 'call_2', name: 'weather', arguments: '{"city":"Kyoto","unit":"C"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '7' },
      { type: 'function_call_output', call_id: 'call_2', output: 'Kyoto: 21°C' },
    ]);
    await agent.stop();
  });

  it('with store: false asks for encrypted reasoning and replays it (after a JSON round trip) to the same model only', async () => {
    server.reply(
      PATH,
      responsesReply({
        reasoning: { id: 'rs_abc', summary: ['First, add.', 'Then answer.'], encrypted: 'gAAAAB-final-blob' },
        toolCalls: [{ callId: 'call_9', name: 'add', args: '{"a":1,"b":1}' }],
        usage: { input: 50, output: 80, reasoning: 64 },
      }),
      responsesReply({ text: 'Two.' }),
    );
    const { tools } = makeTools();
    const agent = createAgent({ model: model({ store: false }), tools, reasoning: 'high' });
    const events = record(agent);
    const result = await agent.prompt('1+1?');
    expect(result.text).toBe('Two.');
    const reasoningDeltas = events.flatMap((e) =>
      e.type === 'message_update' && e.delta.type === 'reasoning' ? [e.delta.delta] : [],
    );
    expect(reasoningDeltas.join('')).toBe('First, add.\n\nThen answer.');

    const first = server.requests[0]?.body;
    expect(first.store).toBe(false);
    expect(first.include).toEqual(['reasoning.encrypted_content']);
    expect(first.reasoning).toEqual({ effort: 'high', summary: 'auto' });
    const assistant = result.messages[1] as AssistantMessage;
    expect(assistant.content[0]).toEqual({
      type: 'reasoning',
      text: 'First, add.\n\nThen answer.',
      opaque: {
        provider: 'openai',
        model: 'gpt-test',
        data: {
          type: 'reasoning',
          id: 'rs_abc',
          summary: [
            { type: 'summary_text', text: 'First, add.' },
            { type: 'summary_text', text: 'Then answer.' },
          ],
          encrypted_content: 'gAAAAB-final-blob', // from output_item.done, not the placeholder
        },
      },
    });
    const replayed = server.requests[1]?.body.input[1];
    expect(replayed).toEqual(
      assistant.content[0]?.type === 'reasoning' ? assistant.content[0].opaque?.data : undefined,
    );

    // A saved history (JSON round trip) replays the same way; another model gets no reasoning item.
    const history = JSON.parse(JSON.stringify(agent.messages)) as Message[];
    server.reply(PATH, responsesReply({ text: 'again' }), responsesReply({ text: 'other' }));
    await createAgent({ model: model({ store: false }), messages: history }).prompt('more');
    expect(server.requests[2]?.body.input[1]).toMatchObject({
      type: 'reasoning',
      encrypted_content: 'gAAAAB-final-blob',
    });
    await createAgent({ model: model({ store: false, model: 'gpt-other' }), messages: history }).prompt('more');
    expect(server.requests[3]?.body.input.some((item: { type?: string }) => item.type === 'reasoning')).toBe(false);
    await agent.stop();
  });

  it('uses native structured output (text.format json_schema) for outputSchema', async () => {
    server.reply(PATH, responsesReply({ text: '{"city":"Oslo"}' }));
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    };
    await run(model(), {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
      tools: [],
      toolChoice: { name: 'add' },
      outputSchema: { name: 'final_answer', schema },
    });
    expect(server.requests[0]?.body.text).toEqual({
      format: { type: 'json_schema', name: 'final_answer', schema, strict: true },
    });
  });

  it('maps response.incomplete to length and content_filter, and a refusal', async () => {
    server.reply(
      PATH,
      responsesReply({ text: 'cut', status: 'incomplete', incompleteReason: 'max_output_tokens' }),
      responsesReply({ text: '', status: 'incomplete', incompleteReason: 'content_filter' }),
      responsesReply({ refusal: 'No.' }),
    );
    const request: ModelRequest = { messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }], tools: [] };
    expect((await run(model(), request)).at(-1)).toMatchObject({ type: 'done', stopReason: 'length' });
    expect((await run(model(), request)).at(-1)).toMatchObject({ type: 'done', stopReason: 'content_filter' });
    expect((await run(model(), request)).at(-1)).toMatchObject({ type: 'done', stopReason: 'refusal' });
  });
});

describe('Responses failures', () => {
  it('an unknown model (400 model_not_found) is invalid_request', async () => {
    server.reply(
      PATH,
      openaiError(400, {
        message: "The requested model 'gpt-nope' does not exist.",
        type: 'invalid_request_error',
        code: 'model_not_found',
        param: 'model',
      }),
    );
    const result = await createAgent({ model: model(), retry: fastRetry }).prompt('x');
    expect(result.error).toMatchObject({ code: 'invalid_request', status: 400, providerType: 'invalid_request_error' });
  });

  it('an error event then response.failed inside a 200 stream is classified (insufficient_quota: no retry)', async () => {
    const events = responsesEvents({ text: '' }).slice(0, 2);
    events.push(
      {
        event: 'error',
        data: JSON.stringify({
          type: 'error',
          sequence_number: 2,
          error: {
            type: 'insufficient_quota',
            code: 'insufficient_quota',
            message: 'You exceeded your current quota',
            param: null,
          },
        }),
      },
      {
        event: 'response.failed',
        data: JSON.stringify({
          type: 'response.failed',
          sequence_number: 3,
          response: {
            id: 'resp_x',
            status: 'failed',
            error: { code: 'insufficient_quota', message: 'quota' },
            usage: null,
          },
        }),
      },
    );
    server.reply(PATH, { kind: 'sse', events });
    const result = await createAgent({ model: model(), retry: fastRetry }).prompt('x');
    expect(result.error).toMatchObject({ code: 'rate_limit', providerType: 'insufficient_quota', retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('response.failed with a server_error is retried', async () => {
    const failed = responsesEvents({ text: '' }).slice(0, 2);
    failed.push({
      event: 'response.failed',
      data: JSON.stringify({
        type: 'response.failed',
        sequence_number: 2,
        response: {
          id: 'resp_x',
          status: 'failed',
          error: { code: 'server_error', message: 'The model failed' },
          usage: null,
        },
      }),
    });
    server.reply(PATH, { kind: 'sse', events: failed }, responsesReply({ text: 'ok now' }));
    const agent = createAgent({ model: model(), retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('x');
    expect(result.text).toBe('ok now');
    expect(events.find((e) => e.type === 'model_retry')).toMatchObject({ error: { code: 'server_error' } });
    await agent.stop();
  });

  it('a stream without response.completed is a classified error', async () => {
    server.reply(PATH, { kind: 'sse', events: responsesEvents({ text: 'never completes' }).slice(0, -1) });
    const result = await createAgent({ model: model(), retry: false }).prompt('x');
    expect(result.error).toMatchObject({ code: 'network_error' });
    expect(result.error?.message).toMatch(/response\.completed/);
  });

  it('abort mid-stream closes the request', async () => {
    const { result, events } = await abortMidStream(
      server,
      PATH,
      responsesEvents({ text: 'a long answer' }).slice(0, 5),
      model(),
    );
    expect(result.stopReason).toBe('interrupted');
    expect(events.some((e) => e.type === 'message_end' && e.discarded === 'interrupted')).toBe(true);
  });
});
