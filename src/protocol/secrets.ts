import { ModelError } from './errors.js';

/**
 * The API keys this process's models hold, so that whatever carries text out of the process (error messages and
 * causes, inspector frames) can cut them out, whatever a server echoed back. Keys shorter than 8 characters are
 * not kept: cutting `ollama` out of every text would say nothing secret and break much.
 */
const keys = new Set<string>();

export function registerSecret(value: string | undefined): void {
  if (typeof value === 'string' && value.length >= 8) keys.add(value);
}

export function knownSecrets(): readonly string[] {
  return [...keys];
}

export const REDACTED_SECRET = '[redacted]';

export function redactSecrets(text: string, secrets: readonly string[] = knownSecrets()): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED_SECRET);
  return out;
}

/**
 * The error with every known key cut out of everywhere it travels: its message (and so its stack), and its
 * cause, which is replaced by a plain copy (name, message, status, headers, body) with the keys cut out. Made
 * anew, since an Error's stack is written when it is made.
 */
export function redactError(error: ModelError): ModelError {
  const secrets = knownSecrets();
  if (secrets.length === 0) return error;
  return new ModelError({
    code: error.code,
    message: redactSecrets(error.message, secrets),
    status: error.status,
    providerType: error.providerType,
    requestId: error.requestId,
    retryAfterMs: error.retryAfterMs,
    provider: error.provider,
    shouldRetry: error.retryable,
    ...(error.cause === undefined ? {} : { cause: redactValue(error.cause, secrets, 0) }),
  });
}

function redactValue(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof value === 'string') return redactSecrets(value, secrets);
  if (typeof value !== 'object' || value === null || depth > 6) return value;
  try {
    if (value instanceof Error) {
      const copy = new Error(redactSecrets(value.message, secrets));
      copy.name = value.name;
      for (const key of ['status', 'error', 'requestID', 'code', 'type']) {
        if (key in value)
          (copy as unknown as Record<string, unknown>)[key] = redactValue((value as never)[key], secrets, depth + 1);
      }
      const headers = (value as { headers?: unknown }).headers;
      if (headers !== undefined) (copy as unknown as Record<string, unknown>).headers = headersOf(headers, secrets);
      if (value.cause !== undefined) copy.cause = redactValue(value.cause, secrets, depth + 1);
      return copy;
    }
    if (Array.isArray(value)) return value.map((item) => redactValue(item, secrets, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = redactValue(item, secrets, depth + 1);
    return out;
  } catch {
    return '[unreadable]';
  }
}

function headersOf(headers: unknown, secrets: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const entries =
    typeof (headers as { entries?: unknown }).entries === 'function'
      ? [...(headers as { entries(): Iterable<[string, string]> }).entries()]
      : Object.entries(headers as Record<string, string>);
  for (const [name, value] of entries) out[name] = redactSecrets(String(value), secrets);
  return out;
}
