/**
 * Error classification: the recorded HTTP error bodies of ../shared/fixtures served to the official SDKs (for a
 * streaming request, as the services answer: plain JSON, not SSE), plus the header rules.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Model, ModelError, type ModelErrorCode } from '../../src/index.js';
import { anthropic, errorFromBody, openai, retryAfterMs, shouldRetryHint } from '../../src/providers/index.js';
import { type WirePath, WireServer } from '../wire/server.js';

const FIXTURES = fileURLToPath(new URL('../../../shared/fixtures', import.meta.url));
const present = existsSync(FIXTURES);

interface Case {
  /** Used when the recording kept no status: the status the API documents for that error. */
  status?: number;
  code: ModelErrorCode;
  providerType: string;
  retryable: boolean;
  requestId?: string;
}

const ANTHROPIC: Record<string, Case> = {
  'error-400-invalid-request-effort': {
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
    requestId: 'req_011Ca7jT9AHpgXgdv8igm4z9',
  },
  'error-400-tool-result-without-tool-use': {
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
  },
  'error-400-tool-use-without-tool-result': {
    status: 400,
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
  },
  'error-404-not-found-model': {
    code: 'invalid_request',
    providerType: 'not_found_error',
    retryable: false,
    requestId: 'req_011CdufXo8Y2LVfY2veyuQWG',
  },
  'error-429-rate-limit-streaming-request': { code: 'rate_limit', providerType: 'rate_limit_error', retryable: true },
  'error-529-overloaded': {
    code: 'overloaded',
    providerType: 'overloaded_error',
    retryable: true,
    requestId: 'req_011CX7J5ZXp3npD8nY7VYZvm',
  },
};

const OPENAI: Record<string, Case & { path: WirePath }> = {
  'azure-error-401-invalid-subscription-key': {
    path: '/v1/chat/completions',
    code: 'auth_error',
    providerType: '401',
    retryable: false,
  },
  'compat-openrouter-error-429-upstream': {
    path: '/v1/chat/completions',
    code: 'rate_limit',
    providerType: '429',
    retryable: true,
  },
  'error-400-model-not-found-responses': {
    path: '/v1/responses',
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
  },
  'error-400-unsupported-parameter-max-tokens': {
    path: '/v1/chat/completions',
    status: 400,
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
  },
  'error-400-unsupported-value-developer-role': {
    path: '/v1/chat/completions',
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
  },
  'error-404-model-not-found-chat': {
    path: '/v1/chat/completions',
    code: 'invalid_request',
    providerType: 'invalid_request_error',
    retryable: false,
  },
  // Quota exhaustion is a 429 that no wait will fix.
  'error-insufficient-quota': {
    path: '/v1/responses',
    status: 429,
    code: 'rate_limit',
    providerType: 'insufficient_quota',
    retryable: false,
  },
};

const KEPT_HEADERS = new Set(['request-id', 'x-request-id', 'x-should-retry', 'retry-after', 'retry-after-ms']);

function load(family: string, name: string): { status: number | null; headers: Record<string, string>; body: unknown } {
  const file = JSON.parse(readFileSync(join(FIXTURES, family, `${name}.json`), 'utf8')) as {
    status: number | null;
    headers?: Record<string, string | string[]>;
    body: unknown;
  };
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(file.headers ?? {})) {
    if (KEPT_HEADERS.has(key.toLowerCase()))
      headers[key.toLowerCase()] = Array.isArray(value) ? String(value[0]) : value;
  }
  return { status: file.status, headers, body: file.body };
}

async function failureOf(model: Model): Promise<unknown> {
  try {
    for await (const _ of model.stream(
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }], tools: [] },
      new AbortController().signal,
    )) {
      // nothing: the request fails
    }
  } catch (error) {
    return error;
  }
  throw new Error('the stream did not fail');
}

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());

describe.skipIf(!present)('recorded HTTP error bodies, through the SDKs', () => {
  for (const [name, expected] of Object.entries(ANTHROPIC)) {
    it(`anthropic-http/${name}`, async () => {
      const { status, headers, body } = load('anthropic-http', name);
      const http = status ?? expected.status ?? 0;
      server.reset();
      server.reply('/v1/messages', { kind: 'json', status: http, body, headers });
      const error = await failureOf(anthropic({ model: 'claude-test', apiKey: 'k', baseURL: server.url }));
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({
        code: expected.code,
        status: http,
        providerType: expected.providerType,
        retryable: expected.retryable,
      });
      if (expected.requestId) expect((error as ModelError).requestId).toBe(expected.requestId);
      expect(server.requests).toHaveLength(1); // SDK retries are off
    });
  }
  for (const [name, expected] of Object.entries(OPENAI)) {
    it(`openai-http/${name}`, async () => {
      const { status, headers, body } = load('openai-http', name);
      const http = status ?? expected.status ?? 0;
      server.reset();
      server.reply(expected.path, { kind: 'json', status: http, body, headers });
      const api = expected.path === '/v1/responses' ? 'responses' : 'chat';
      const error = await failureOf(openai({ model: 'gpt-test', apiKey: 'k', baseURL: server.baseURL, api }));
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({
        code: expected.code,
        status: http,
        providerType: expected.providerType,
        retryable: expected.retryable,
      });
      expect(server.requests).toHaveLength(1);
    });
  }
});

describe('error classification rules', () => {
  const headers = (values: Record<string, string>) => new Headers(values);

  it('reads retry-after-ms before retry-after (seconds or an HTTP date)', () => {
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(retryAfterMs(headers({ 'retry-after': '2' }))).toBe(2000);
    expect(
      retryAfterMs(
        headers({ 'retry-after': 'Mon, 30 Nov 2026 00:00:10 GMT' }),
        Date.parse('Mon, 30 Nov 2026 00:00:00 GMT'),
      ),
    ).toBe(10_000);
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });

  it('honours x-should-retry, except to retry what no retry can fix', () => {
    expect(shouldRetryHint(headers({ 'x-should-retry': 'true' }))).toBe(true);
    expect(shouldRetryHint(headers({ 'x-should-retry': 'false' }))).toBe(false);
    expect(shouldRetryHint(headers({}))).toBeUndefined();
    const ctx = { provider: 'p' };
    const body = { error: { type: 'invalid_request_error', message: 'bad' } };
    expect(errorFromBody(ctx, body, { status: 400, headers: headers({ 'x-should-retry': 'true' }) }).retryable).toBe(
      false,
    );
    expect(
      errorFromBody(ctx, { error: { message: 'x' } }, { status: 409, headers: headers({ 'x-should-retry': 'true' }) })
        .retryable,
    ).toBe(true);
    expect(
      errorFromBody(ctx, { error: { message: 'x' } }, { status: 503, headers: headers({ 'x-should-retry': 'false' }) }),
    ).toMatchObject({
      code: 'overloaded',
      retryable: false,
    });
  });

  it('maps statuses and in-stream error types', () => {
    const ctx = { provider: 'p' };
    const code = (status: number | undefined, error: Record<string, unknown>) =>
      errorFromBody(ctx, { error }, { status }).code;
    expect(code(403, { type: 'permission_error', message: 'no' })).toBe('auth_error');
    expect(code(408, { message: 'timeout' })).toBe('network_error');
    expect(
      code(413, { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes' }),
    ).toBe('invalid_request');
    expect(code(400, { message: 'input is too long for requested model' })).toBe('context_overflow');
    expect(code(502, { message: 'bad gateway' })).toBe('server_error');
    expect(code(undefined, { type: 'api_error', message: 'Internal server error' })).toBe('server_error');
    expect(code(undefined, { type: 'rate_limit_error', message: 'slow down' })).toBe('rate_limit');
    expect(code(undefined, { code: 'context_length_exceeded', message: 'too long' })).toBe('context_overflow');
    expect(code(undefined, { message: 'Tool call validation failed', status_code: 400 })).toBe('invalid_request');
    expect(code(undefined, { code: 503, message: 'upstream down' })).toBe('overloaded');
    expect(code(undefined, { message: 'mystery' })).toBe('unknown');
  });

  it('a connection refused is network_error and retryable', async () => {
    const closed = await WireServer.start();
    const url = closed.baseURL;
    await closed.close();
    const error = await failureOf(openai({ model: 'm', apiKey: 'k', baseURL: url }));
    expect(error).toMatchObject({ code: 'network_error', retryable: true });
  });

  it('the OpenAI adapter needs a key', async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      expect(await failureOf(openai({ model: 'm', baseURL: server.baseURL }))).toMatchObject({ code: 'auth_error' });
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });
});
