import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  anthropic,
  generate,
  ModelError,
  OutputValidationError,
  openai,
  scriptedModel,
  streamText,
} from '../../src/index.js';
import type { GenerateEvent } from '../../src/runtime/index.js';
import { echo } from '../agent/helpers.js';
import { anthropicError, anthropicReply, chatReply, openaiError } from '../wire/builders.js';
import { WireServer } from '../wire/server.js';

const fast = { initialDelayMs: 1, maxDelayMs: 2, maxRetries: 2 };

describe('generate(): one model call, no tools loop', () => {
  it('returns the answer, its usage and stop reason, and sends system, prompt and settings', async () => {
    const model = scriptedModel([{ text: 'A short title', usage: { input: 12, output: 3 } }]);
    const result = await generate(model, {
      system: 'Title this.',
      prompt: 'A long text',
      maxTokens: 20,
      temperature: 0,
    });

    expect(result.text).toBe('A short title');
    expect(result.stopReason).toBe('stop');
    expect(result.attempts).toBe(1);
    expect(result.usage).toMatchObject({ input: 12, output: 3 });
    expect(model.requests[0]).toMatchObject({
      system: 'Title this.',
      maxTokens: 20,
      temperature: 0,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'A long text' }] }],
    });
  });

  it('offers tools but never runs them: the calls come back to the caller', async () => {
    let ran = false;
    const tool = {
      ...echo,
      execute: () => {
        ran = true;
        return 'no';
      },
    };
    const model = scriptedModel([{ toolCalls: [{ name: 'echo', args: { text: 'hi' } }] }]);
    const result = await generate(model, { prompt: 'use it', tools: [tool], toolChoice: 'required' });

    expect(result.stopReason).toBe('tool_calls');
    expect(result.toolCalls).toMatchObject([{ type: 'tool_call', name: 'echo', arguments: { text: 'hi' } }]);
    expect(ran).toBe(false);
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(['echo']);
    expect(model.requests[0]?.toolChoice).toBe('required');
  });

  it('continues a history the caller owns, with the prompt after it, and leaves that history as it was', async () => {
    const model = scriptedModel([{ text: 'Paris.' }]);
    const history = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'We talk about France.' }] }];
    await generate(model, { messages: history, prompt: 'Capital?' });

    expect(model.requests[0]?.messages).toHaveLength(2);
    expect(history).toHaveLength(1);
  });

  it('parses a structured answer into `output`, and rejects one that does not match with OutputValidationError', async () => {
    const schema = z.object({ sentiment: z.enum(['positive', 'negative']) });
    const good = await generate(scriptedModel([{ text: '```json\n{"sentiment":"positive"}\n```' }]), {
      prompt: 'I love it',
      outputSchema: schema,
    });
    expect(good.output).toEqual({ sentiment: 'positive' });

    const model = scriptedModel([{ text: '{"sentiment":"meh"}' }]);
    const bad = generate(model, { prompt: 'Hmm', outputSchema: schema });
    await expect(bad).rejects.toBeInstanceOf(OutputValidationError);
    await expect(bad).rejects.toThrow(/sentiment/);
    expect(model.requests[0]?.outputSchema?.name).toBe('final_answer');
  });

  it('retries what an agent would retry, counting every attempt, and gives up with the classified error', async () => {
    const flaky = scriptedModel([
      { text: 'par', error: { code: 'overloaded', message: 'busy' } },
      { text: 'Recovered.' },
    ]);
    const result = await generate(flaky, { prompt: 'x', retry: fast });
    expect(result.text).toBe('Recovered.');
    expect(result.attempts).toBe(2);

    const denied = scriptedModel([{ error: { code: 'auth_error', message: 'bad key' } }, { text: 'never' }]);
    const failure = generate(denied, { prompt: 'x', retry: fast });
    await expect(failure).rejects.toMatchObject({ code: 'auth_error' });
    expect(denied.calls).toBe(1);
  });

  it('ends with an aborted ModelError when its signal fires, during the call or while waiting to retry', async () => {
    const slow = scriptedModel([{ text: 'late', latencyMs: 10_000 }]);
    const controller = new AbortController();
    const pending = generate(slow, { prompt: 'x', signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'aborted' });

    const waiting = new AbortController();
    const retrying = generate(scriptedModel([{ error: { code: 'rate_limit', message: 'slow down' } }]), {
      prompt: 'x',
      retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
      signal: waiting.signal,
    });
    setImmediate(() => waiting.abort());
    await expect(retrying).rejects.toMatchObject({ code: 'aborted' });
  });

  it('refuses a request with nothing to answer', async () => {
    await expect(generate(scriptedModel([]), {})).rejects.toThrow(/prompt or messages/);
  });
});

describe('streamText(): the same call, streamed', () => {
  it('streams deltas in order and settles the result with the whole text', async () => {
    const model = scriptedModel([{ text: 'Hello, streaming world.', chunkSize: 4 }]);
    const stream = streamText(model, { prompt: 'x' });
    const deltas: string[] = [];
    for await (const delta of stream.textStream) deltas.push(delta);

    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('Hello, streaming world.');
    expect((await stream.result).text).toBe('Hello, streaming world.');
  });

  it('announces a retry, so a reader knows the text so far is void', async () => {
    const model = scriptedModel([
      { text: 'broken half', error: { code: 'network_error', message: 'reset' } },
      { text: 'whole answer' },
    ]);
    const stream = streamText(model, { prompt: 'x', retry: fast });
    const events: GenerateEvent[] = [];
    for await (const event of stream) events.push(event);

    const retry = events.findIndex((e) => e.type === 'retry');
    expect(retry).toBeGreaterThan(0);
    expect(events[retry]).toMatchObject({ type: 'retry', attempt: 1, error: { code: 'network_error' } });
    const after = events.slice(retry + 1).flatMap((e) => (e.type === 'text_delta' ? [e.delta] : []));
    expect(after.join('')).toBe('whole answer');
  });

  it('keeps every event for a reader that arrives after the call ended, and rejects only `result` on failure', async () => {
    const stream = streamText(scriptedModel([{ text: 'abc', chunkSize: 1 }]), { prompt: 'x' });
    await stream.result;
    const late: string[] = [];
    for await (const delta of stream.textStream) late.push(delta);
    expect(late).toEqual(['a', 'b', 'c']);

    const failing = streamText(scriptedModel([{ error: { code: 'invalid_request', message: 'no' } }]), {
      prompt: 'x',
    });
    const seen: GenerateEvent[] = [];
    for await (const event of failing) seen.push(event); // ends, does not throw
    expect(seen).toEqual([]);
    await expect(failing.result).rejects.toBeInstanceOf(ModelError);
  });
});

describe('generate() through the official SDKs against the loopback wire server', () => {
  let server: WireServer;
  beforeAll(async () => {
    server = await WireServer.start();
  });
  afterAll(() => server.close());
  afterEach(() => server.reset());

  it('OpenAI-compatible Chat Completions: a 429 with retry-after is retried, then the answer returns', async () => {
    server.reply(
      '/v1/chat/completions',
      openaiError(429, { message: 'Rate limit reached', type: 'rate_limit_exceeded' }, { 'retry-after-ms': '5' }),
      chatReply({ text: 'Fine now.', usage: { prompt: 9, completion: 3 } }),
    );
    const model = openai({ model: 'gpt-test', apiKey: 'sk-test', baseURL: server.baseURL });
    const result = await generate(model, { prompt: 'hi', retry: fast });

    expect(result.text).toBe('Fine now.');
    expect(result.attempts).toBe(2);
    expect(server.requests).toHaveLength(2);
  });

  it('Anthropic: a 400 is not retried and arrives classified, with the HTTP status', async () => {
    server.reply(
      '/v1/messages',
      anthropicError(400, 'invalid_request_error', 'max_tokens: too large'),
      anthropicReply({ text: 'unused' }),
    );
    const model = anthropic({ model: 'claude-test', apiKey: 'sk-ant-test', baseURL: server.url });
    const failure = generate(model, { prompt: 'hi', retry: fast });

    await expect(failure).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
    expect(server.requests).toHaveLength(1);
  });
});
