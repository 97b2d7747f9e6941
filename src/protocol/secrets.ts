import { ModelError } from './errors.js';
import type { JsonValue } from './json.js';
import type { ToolResultPart } from './messages.js';

/**
 * The one definition of a secret, used by every channel that carries text out of the process (tool results, and
 * so events, the journal, the CLI and traces; inspector frames; errors) and by every child's environment:
 *
 * - a variable, header or object key is secret by its NAME: `*API_KEY*` (and `PRIVATE_`, `ACCESS_`, `SIGNING_`,
 *   `ENCRYPTION_`, `MASTER_` keys), `*TOKEN*` (not `*TOKENS*` or `TOKENIZER*`: counts), `*SECRET*`, `*PASSWORD*`,
 *   `*PASSWD*`, `*PASSPHRASE*`, `*CREDENTIAL*`, `*_AUTH` (not `SSH_AUTH_SOCK`, a path), `*AUTHORIZATION*`, `*COOKIE*`, `*BEARER*`, `*_PAT`;
 *   camelCase and dashes count as underscores (`apiKey`, `x-api-key`, `Authorization`, `GITHUB_TOKEN`);
 * - a value is secret when it is a URL with a password in it (`postgres://user:pass@host`), whatever its name;
 * - the values known to be secret are those of the environment's secret variables, the keys the process's models
 *   hold, and every header and environment value of an MCP server's configuration (`registerSecret`).
 *
 * Values shorter than 8 characters are not kept: cutting `ollama` out of every text would say nothing secret and
 * break much.
 */
const SECRET_NAME =
  /(API|PRIVATE|ACCESS|SIGNING|ENCRYPTION|MASTER)_?KEY|TOKEN(?![A-Z])|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|(^|_)AUTH$|AUTHORIZATION|COOKIE|BEARER|(^|_)PAT$/;
const CREDENTIAL_URL = /^[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:[^/\s@]+@/i;
const MIN_LENGTH = 8;

/** Whether a variable, header or key with this name holds a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(
    name
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/[-.\s]/g, '_')
      .toUpperCase(),
  );
}

/** Whether an environment variable is secret, by its name or by its value. */
export function isSecretVariable(name: string, value: string | undefined): boolean {
  return isSecretName(name) || (value !== undefined && CREDENTIAL_URL.test(value));
}

/** The values of an environment's secret variables. */
function environmentSecrets(env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value.length >= MIN_LENGTH && isSecretVariable(name, value)) out.push(value);
  }
  return out;
}

const registered = new Set<string>();
let fromEnvironment: string[] | undefined;
let known: readonly string[] | undefined;

export function registerSecret(value: string | undefined): void {
  if (typeof value !== 'string' || value.length < MIN_LENGTH || registered.has(value)) return;
  registered.add(value);
  known = undefined;
}

/**
 * Reads the environment's secrets again. They are read once, at their first use, and again whenever tools that
 * start processes are made (the shell, MCP servers): reading the environment on every tool result would cost more
 * than the rest of a quick call.
 */
export function rememberEnvironmentSecrets(env: Readonly<Record<string, string | undefined>> = processEnv()): void {
  fromEnvironment = environmentSecrets(env);
  known = undefined;
}

function processEnv(): Readonly<Record<string, string | undefined>> {
  return typeof process === 'undefined' ? {} : process.env;
}

/** Every secret value this process knows, longest first (a secret that contains another is cut whole). */
export function knownSecrets(): readonly string[] {
  if (known) return known;
  fromEnvironment ??= environmentSecrets(processEnv());
  known = [...new Set([...registered, ...fromEnvironment])].sort((a, b) => b.length - a.length);
  return known;
}

const REDACTED_SECRET = '[redacted]';

export function redactSecrets(text: string, secrets: readonly string[] = knownSecrets()): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED_SECRET);
  return out;
}

/** A JSON value with every known secret cut out of its strings (keys included); the value itself when none was. */
export function redactJson<T extends JsonValue>(value: T, secrets: readonly string[] = knownSecrets()): T {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return redactSecrets(value, secrets) as T;
  if (typeof value !== 'object' || value === null) return value;
  let changed = false;
  if (Array.isArray(value)) {
    const out = value.map((item) => {
      const cut = redactJson(item, secrets);
      if (cut !== item) changed = true;
      return cut;
    });
    return (changed ? out : value) as T;
  }
  const out: Record<string, JsonValue> = {};
  for (const [key, item] of Object.entries(value)) {
    const cutKey = redactSecrets(key, secrets);
    const cut = redactJson(item as JsonValue, secrets);
    if (cut !== item || cutKey !== key) changed = true;
    out[cutKey] = cut;
  }
  return (changed ? out : value) as T;
}

/**
 * A tool result with every known secret cut out of its texts and details, before anything stores, emits or shows
 * it: whatever a command printed (its parent's environment read from /proc, a server echoing a header) reaches
 * the model, the journal and every listener as "[redacted]". Images are left as they are.
 */
export function redactToolResult(result: ToolResultPart, secrets: readonly string[] = knownSecrets()): ToolResultPart {
  if (secrets.length === 0) return result;
  let content = result.content;
  for (let i = 0; i < content.length; i++) {
    const part = content[i];
    if (part?.type !== 'text') continue;
    const text = redactSecrets(part.text, secrets);
    if (text === part.text) continue;
    if (content === result.content) content = [...content];
    content[i] = { type: 'text', text };
  }
  const details = result.details === undefined ? undefined : redactJson(result.details, secrets);
  if (content === result.content && details === result.details) return result;
  return details === undefined ? { ...result, content } : { ...result, content, details };
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
