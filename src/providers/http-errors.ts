import { describeThrown, isAbortError, ModelError, type ModelErrorCode } from '../protocol/index.js';

/**
 * Classification of provider failures into {@link ModelError}, shared by the OpenAI, Anthropic and AI SDK adapters.
 * Both official SDKs throw `APIError`s of the same shape (`status`, `headers`, `error` = the JSON body or its
 * `error` member); they are recognised by shape, so this module imports neither SDK.
 */

interface HeadersLike {
  get(name: string): string | null;
}

/** How long the server asked us to wait: `retry-after-ms` (milliseconds), else `retry-after` (seconds or a date). */
export function retryAfterMs(headers: HeadersLike | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const after = headers.get('retry-after');
  if (after) {
    const seconds = Number(after.trim());
    if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
    const date = Date.parse(after);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  return undefined;
}

/**
 * How long Google asked us to wait: a `google.rpc.RetryInfo` among the error's `details`, its `retryDelay` a
 * protobuf Duration (`"37s"`, `"0.5s"`). Gemini sends it with quota errors, where a retry sooner fails again.
 */
function retryInfoMs(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    if (!isObject(detail) || !String(detail['@type']).endsWith('google.rpc.RetryInfo')) continue;
    const match = /^(\d+(?:\.\d+)?)s$/.exec(String(detail.retryDelay));
    if (match?.[1]) return Math.round(Number.parseFloat(match[1]) * 1000);
  }
  return undefined;
}

/** The server's explicit retry hint (`x-should-retry: true | false`), if it gave one. */
export function shouldRetryHint(headers: HeadersLike | undefined): boolean | undefined {
  const value = headers?.get('x-should-retry')?.trim().toLowerCase();
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

const CONTEXT_OVERFLOW =
  /context[_ ]length|context window|maximum context|prompt is too long|too many tokens|input is too long|input tokens exceed|exceeds the context|exceeds the maximum number of tokens|reduce the length of the (messages|prompt)/i;

/** Gemini answers a bad API key with 400 INVALID_ARGUMENT, not 401. */
const BAD_KEY = /API key not valid|API_KEY_INVALID/;

/** Errors a retry cannot fix, whatever the server hints. */
const NEVER_RETRY: ReadonlySet<ModelErrorCode> = new Set(['auth_error', 'invalid_request', 'context_overflow']);

/** The provider's own error type names, mapped for errors that come without an HTTP status (inside a 200 stream). */
const BY_TYPE: Record<string, ModelErrorCode> = {
  overloaded_error: 'overloaded',
  rate_limit_error: 'rate_limit',
  rate_limit_exceeded: 'rate_limit',
  insufficient_quota: 'rate_limit',
  api_error: 'server_error',
  server_error: 'server_error',
  internal_server_error: 'server_error',
  timeout_error: 'network_error',
  authentication_error: 'auth_error',
  permission_error: 'auth_error',
  invalid_api_key: 'auth_error',
  billing_error: 'auth_error',
  invalid_request_error: 'invalid_request',
  not_found_error: 'invalid_request',
  request_too_large: 'invalid_request',
  context_length_exceeded: 'context_overflow',
  // Google's RPC status names (`error.status`), for errors met inside a stream.
  RESOURCE_EXHAUSTED: 'rate_limit',
  UNAVAILABLE: 'overloaded',
  INTERNAL: 'server_error',
  DEADLINE_EXCEEDED: 'network_error',
  UNAUTHENTICATED: 'auth_error',
  PERMISSION_DENIED: 'auth_error',
  INVALID_ARGUMENT: 'invalid_request',
};

export interface ErrorFacts {
  status?: number;
  /** The provider's error type (`error.type`), e.g. `rate_limit_error`. */
  type?: string;
  /** The provider's error code (`error.code`), e.g. `context_length_exceeded`; Azure and OpenRouter send numbers. */
  code?: string;
  message: string;
}

/** The protocol's error code for what a provider said. */
function errorCodeFor(facts: ErrorFacts): ModelErrorCode {
  const { status, type, code, message } = facts;
  if (code === 'context_length_exceeded' || type === 'context_length_exceeded') return 'context_overflow';
  if ((status === undefined || status === 400 || status === 413 || status === 422) && CONTEXT_OVERFLOW.test(message))
    return 'context_overflow';
  if (BAD_KEY.test(message)) return 'auth_error';
  if (type === 'overloaded_error' || code === 'overloaded_error') return 'overloaded';
  if (status !== undefined) {
    if (status === 401 || status === 402 || status === 403) return 'auth_error';
    if (status === 408) return 'network_error';
    if (status === 429) return 'rate_limit';
    if (status === 503 || status === 529) return 'overloaded';
    if (status >= 500) return 'server_error';
    if (status === 409) return 'server_error';
    if (status >= 400) return 'invalid_request';
  }
  const byType = (type && BY_TYPE[type]) || (code && BY_TYPE[code]);
  if (byType) return byType;
  // OpenRouter and Groq put an HTTP status inside a streamed error body.
  const numeric = Number(code);
  if (status === undefined && Number.isInteger(numeric) && numeric >= 400)
    return errorCodeFor({ ...facts, status: numeric, code: undefined });
  return 'unknown';
}

export interface ClassifyContext {
  provider: string;
  /** Prefix for messages, e.g. `OpenAI Responses`. */
  label?: string;
}

/**
 * Builds a ModelError from an error body and headers (an HTTP error response or an error event inside a stream).
 * A string body is read as JSON when it holds an object, and otherwise serves as the message.
 */
export function errorFromBody(
  ctx: ClassifyContext,
  body: unknown,
  init: {
    status?: number;
    headers?: HeadersLike;
    /** Headers read only for the request id (a 200 stream's headers say nothing about its in-stream error). */
    idHeaders?: HeadersLike;
    cause?: unknown;
    fallbackMessage?: string;
  } = {},
): ModelError {
  const outer = isObject(body) ? body : (objectIn(body) ?? {});
  const inner = isObject(outer.error) ? outer.error : outer;
  // Google names the kind of failure in `status` (`RESOURCE_EXHAUSTED`), beside the HTTP status as `code`.
  const type =
    stringOf(inner.type) ?? stringOf(outer.type === 'error' ? undefined : outer.type) ?? stringOf(inner.status);
  const code = stringOf(inner.code) ?? (typeof inner.code === 'number' ? String(inner.code) : undefined);
  const nestedStatus = typeof inner.status_code === 'number' ? inner.status_code : undefined;
  const message = redactKeys(
    stringOf(inner.message) ??
      init.fallbackMessage ??
      (typeof body === 'string' && body ? body : `HTTP ${init.status ?? 'error'}`),
  );
  const status = init.status ?? nestedStatus;
  const errorCode = errorCodeFor({ status, type, code, message });
  const ids = init.headers ?? init.idHeaders;
  const requestId =
    ids?.get('request-id') ??
    ids?.get('x-request-id') ??
    stringOf(outer.request_id) ??
    stringOf(inner.request_id) ??
    undefined;
  let shouldRetry = shouldRetryHint(init.headers);
  // `x-should-retry: true` cannot make a bad key or a too-long prompt work; quota exhaustion is not a rate limit.
  if (shouldRetry === true && NEVER_RETRY.has(errorCode)) shouldRetry = undefined;
  if (code === 'insufficient_quota' || type === 'insufficient_quota') shouldRetry = false;
  const label = ctx.label ?? ctx.provider;
  return new ModelError({
    code: errorCode,
    message: `${label}: ${message}`,
    status: init.status,
    providerType: type ?? code,
    requestId,
    retryAfterMs: retryAfterMs(init.headers) ?? retryInfoMs(inner.details),
    shouldRetry,
    provider: ctx.provider,
    cause: init.cause,
  });
}

/**
 * Classifies anything an SDK call or stream threw. ModelErrors pass through; an abort is `aborted`; SDK
 * `APIError`s are classified by status, body and headers; a connection failure or a socket closed mid-stream is
 * `network_error`; unparsable stream data is `bad_response`.
 */
export function classifyError(ctx: ClassifyContext, error: unknown, signal?: AbortSignal): ModelError {
  if (error instanceof ModelError) return error;
  const label = ctx.label ?? ctx.provider;
  if (signal?.aborted || isAbortError(error)) {
    return new ModelError({
      code: 'aborted',
      message: `${label}: the call was aborted`,
      provider: ctx.provider,
      cause: error,
    });
  }
  if (error instanceof Error) {
    // Anthropic's SDK names its errors; OpenAI's leaves `name` as "Error", so the class name is checked too.
    const names = [error.name, error.constructor?.name];
    if (names.some((name) => name === 'APIConnectionError' || name === 'APIConnectionTimeoutError')) {
      return new ModelError({
        code: 'network_error',
        message: `${label}: ${error.message}`,
        provider: ctx.provider,
        cause: error,
      });
    }
    const apiError = error as Error & { status?: unknown; headers?: unknown; error?: unknown };
    if ('status' in apiError && 'error' in apiError && 'headers' in apiError) {
      const status = typeof apiError.status === 'number' ? apiError.status : undefined;
      const headers = isHeaders(apiError.headers) ? apiError.headers : undefined;
      // With no status the SDK met an error event inside a 200 stream: `error` is the event's payload.
      return errorFromBody(ctx, apiError.error ?? undefined, {
        status,
        headers: status === undefined ? undefined : headers,
        idHeaders: headers,
        cause: error,
        fallbackMessage: error.message,
      });
    }
    if (error instanceof SyntaxError) {
      return new ModelError({
        code: 'bad_response',
        message: `${label}: the stream carried data that is not JSON (${error.message})`,
        provider: ctx.provider,
        cause: error,
      });
    }
    // undici reports a connection that closed mid-body as `TypeError: terminated` (cause: SocketError).
    if (
      error.name === 'TypeError' &&
      /terminated|fetch failed|socket|ECONNRESET|other side closed/i.test(error.message)
    ) {
      return new ModelError({
        code: 'network_error',
        message: `${label}: the connection failed mid-stream (${error.message})`,
        provider: ctx.provider,
        cause: error,
      });
    }
    return new ModelError({
      code: 'unknown',
      message: `${label}: ${error.message}`,
      provider: ctx.provider,
      cause: error,
    });
  }
  return new ModelError({
    code: 'unknown',
    message: `${label}: ${describeThrown(error)}`,
    provider: ctx.provider,
    cause: error,
  });
}

/** A stream that closed before its terminal event: the connection was cut, so a retry may well succeed. */
export function truncatedStream(ctx: ClassifyContext, what: string): ModelError {
  return new ModelError({
    code: 'network_error',
    message: `${ctx.label ?? ctx.provider}: the stream ended before ${what}`,
    provider: ctx.provider,
  });
}

/** A stream whose events break the API's own rules: not retried, since the same request gets the same answer. */
export function badResponse(ctx: ClassifyContext, what: string): ModelError {
  return new ModelError({
    code: 'bad_response',
    message: `${ctx.label ?? ctx.provider}: ${what}`,
    provider: ctx.provider,
  });
}

/**
 * Error texts are shown to users and travel in events: anything shaped like an API key is cut out (OpenAI's
 * 401 text quotes the start and end of the key it got).
 */
function redactKeys(text: string): string {
  return text.replace(/\b(sk-(?:ant-|proj-)?|key-|Bearer\s+)[\w*.-]{4,}/g, '$1[redacted]');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON object held in a string body, or `undefined`. */
function objectIn(body: unknown): Record<string, unknown> | undefined {
  if (typeof body !== 'string' || body === '') return undefined;
  try {
    const value: unknown = JSON.parse(body);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** `value` when it is a non-empty string. */
export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function isHeaders(value: unknown): value is HeadersLike {
  return isObject(value) && typeof (value as { get?: unknown }).get === 'function';
}
