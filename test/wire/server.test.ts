import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicError, anthropicEvents, chatReply, responsesReply } from './builders.js';
import { WireServer } from './server.js';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('the loopback wire server', () => {
  it('listens on 127.0.0.1 only', () => {
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
  });

  it('frames Chat Completions as the service does: data lines, usage: null, a usage chunk with empty choices, [DONE]', async () => {
    server.reply('/v1/chat/completions', chatReply({ text: 'hi', usage: { prompt: 3, completion: 1 } }));
    const response = await post('/v1/chat/completions', { stream: true });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await response.text();
    const frames = text.split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame.replace(/^data: /, '')));
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(server.requests[0]?.body).toEqual({ stream: true });
  });

  it('names Responses and Messages events, and pads Anthropic payloads', async () => {
    server.reply('/v1/responses', responsesReply({ text: 'x' }));
    const responses = await (await post('/v1/responses', {})).text();
    expect(responses.startsWith('event: response.created\ndata: {"type":"response.created"')).toBe(true);
    expect(responses).toContain('event: response.completed\n');
    const frame = anthropicEvents({ text: 'x' }).at(-1);
    expect(frame?.event).toBe('message_stop');
    expect(frame?.data).toMatch(/\s+}$/);
  });

  it('answers a streaming request with a JSON error body and the provider headers', async () => {
    server.reply('/v1/messages', anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '3' }));
    const response = await post('/v1/messages', { stream: true });
    expect(response.status).toBe(429);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });

  it('cuts a stream by destroying the socket, and refuses unscripted requests with a 500', async () => {
    server.reply('/v1/messages', { kind: 'sse', events: anthropicEvents({ text: 'abc' }).slice(0, 3), cut: true });
    const response = await post('/v1/messages', {});
    await expect(response.text()).rejects.toThrow();
    const unscripted = await post('/v1/messages', {});
    expect(unscripted.status).toBe(500);
  });
});
