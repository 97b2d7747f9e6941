import type { JsonValue } from '../protocol/index.js';
import type { AnyTool, ToolContext, ToolDefinition, ToolOutput } from './define-tool.js';
import { describeThrown } from './output.js';

/** A tool's `execute` as middleware sees it: always a promise. */
export type ToolExecute = (args: unknown, ctx: ToolContext) => Promise<ToolOutput>;

/**
 * Wraps a tool's `execute`: it may run it, run it again, skip it, or change what goes in and comes out. `tool` is
 * the definition being wrapped (its name, traits and settings), for middleware that depends on it.
 */
export type ToolMiddleware = (next: ToolExecute, tool: AnyTool) => ToolExecute;

/**
 * The same tool with its `execute` wrapped: the first middleware is the outermost (`withMiddleware(t, logCalls(), retryOnError())`
 * logs once per call, around every retry). The definition is copied, never changed, so a tool shared by several
 * agents can be wrapped differently for each; everything else (schema, traits, `executionMode`) stays as it is.
 */
export function withMiddleware<T extends ToolDefinition>(tool: T, ...middleware: readonly ToolMiddleware[]): T {
  const inner: ToolExecute = async (args, ctx) => tool.execute(args as never, ctx);
  let execute = inner;
  for (let i = middleware.length - 1; i >= 0; i--) execute = (middleware[i] as ToolMiddleware)(execute, tool);
  return { ...tool, execute };
}

export interface ToolRetryOptions {
  /** Attempts after the first (default 2). */
  retries?: number;
  /** Delay before the first retry, doubled each time up to `maxDelayMs` (defaults 200 and 5,000). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Which failures are worth another attempt (default: every thrown error). Results with `isError` never are. */
  retryOn?: (error: unknown, attempt: number) => boolean;
}

/**
 * Runs a tool again when it throws, with exponential backoff and full jitter. An abort of the call (interrupt or
 * timeout) stops retrying at once: the call is over and nobody waits for its result.
 */
export function retryOnError(options: ToolRetryOptions = {}): ToolMiddleware {
  const retries = options.retries ?? 2;
  const initial = options.initialDelayMs ?? 200;
  const max = options.maxDelayMs ?? 5_000;
  return (next) => async (args, ctx) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(args, ctx);
      } catch (error) {
        if (attempt > retries || ctx.signal.aborted || options.retryOn?.(error, attempt) === false) throw error;
        const ceiling = Math.min(max, initial * 2 ** (attempt - 1));
        await delay(Math.random() * ceiling, ctx.signal, error);
      }
    }
  };
}

function delay(ms: number, signal: AbortSignal, original: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(original);
    const onAbort = () => {
      clearTimeout(timer);
      reject(original);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Thrown by {@link timeoutAfter}: the model sees "Tool x failed: timed out after N ms". */
export class ToolTimeoutError extends Error {
  override readonly name = 'ToolTimeoutError';
}

/**
 * Fails an attempt that takes longer than `ms` and aborts the signal the tool was given for it. Inside `retryOnError`
 * it limits each attempt; outside, the whole call (the definition's own `timeoutMs` is the latter, built in).
 */
export function timeoutAfter(ms: number): ToolMiddleware {
  return (next) => (args, ctx) => {
    const controller = new AbortController();
    const outer = ctx.signal;
    const forward = () => controller.abort(outer.reason);
    if (outer.aborted) controller.abort(outer.reason);
    else outer.addEventListener('abort', forward, { once: true });
    const scoped: ToolContext = {
      toolCallId: ctx.toolCallId,
      agentId: ctx.agentId,
      signal: controller.signal,
      update: ctx.update,
    };
    return new Promise<ToolOutput>((resolve, reject) => {
      const timer = setTimeout(() => {
        const error = new ToolTimeoutError(`timed out after ${ms} ms`);
        controller.abort(error);
        reject(error);
      }, ms);
      next(args, scoped)
        .then(resolve, reject)
        .finally(() => {
          clearTimeout(timer);
          outer.removeEventListener('abort', forward);
        });
    });
  };
}

export interface CacheOptions {
  /** How long an answer stays good (default: for the life of the wrapped tool). */
  ttlMs?: number;
  /** Answers kept, the least recently used dropped first (default 256). */
  maxEntries?: number;
  /** The cache key of a call (default: its arguments as JSON with sorted keys). */
  key?: (args: unknown) => string;
  /** A clock, for tests. */
  now?: () => number;
}

/**
 * Answers a call with the same arguments from memory. Only successful answers are kept (a thrown error or an
 * `isError` result runs again next time), and calls with the same key in flight together share one run.
 */
export function cacheByArgs(options: CacheOptions = {}): ToolMiddleware {
  const maxEntries = options.maxEntries ?? 256;
  const keyOf = options.key ?? stableJson;
  const now = options.now ?? Date.now;
  const entries = new Map<string, { output: ToolOutput; expires: number }>();
  const inFlight = new Map<string, Promise<ToolOutput>>();
  return (next) => async (args, ctx) => {
    const key = keyOf(args);
    const hit = entries.get(key);
    if (hit && hit.expires > now()) {
      entries.delete(key);
      entries.set(key, hit); // most recently used last
      return hit.output;
    }
    if (hit) entries.delete(key);
    const running = inFlight.get(key);
    if (running) return running;
    const call = next(args, ctx);
    inFlight.set(key, call);
    try {
      const output = await call;
      const failed = typeof output === 'object' && output !== null && output.isError === true;
      if (!failed) {
        entries.set(key, {
          output,
          expires: options.ttlMs === undefined ? Number.POSITIVE_INFINITY : now() + options.ttlMs,
        });
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
      }
      return output;
    } finally {
      inFlight.delete(key);
    }
  };
}

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` are one key. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) return inner;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(inner).sort()) sorted[key] = (inner as Record<string, unknown>)[key];
    return sorted;
  });
}

export interface ToolLogEntry {
  tool: string;
  toolCallId: string;
  agentId: string;
  durationMs: number;
  outcome: 'ok' | 'error' | 'thrown';
  /** The thrown error's message. */
  error?: string;
  /** Only with `{ args: true }`: arguments may hold what a log should not. */
  args?: JsonValue;
}

/** Reports every call when it ends: name, ids, duration and outcome (arguments only when asked for). */
export function logCalls(
  log: (entry: ToolLogEntry) => void = (entry) => console.log('[troupe] tool', entry),
  options: { args?: boolean } = {},
): ToolMiddleware {
  return (next, tool) => async (args, ctx) => {
    const startedAt = performance.now();
    const entry = (outcome: ToolLogEntry['outcome'], error?: string): ToolLogEntry => ({
      tool: tool.name,
      toolCallId: ctx.toolCallId,
      agentId: ctx.agentId,
      durationMs: performance.now() - startedAt,
      outcome,
      ...(error === undefined ? {} : { error }),
      ...(options.args ? { args: args as JsonValue } : {}),
    });
    try {
      const output = await next(args, ctx);
      const failed = typeof output === 'object' && output !== null && output.isError === true;
      log(entry(failed ? 'error' : 'ok'));
      return output;
    } catch (error) {
      log(entry('thrown', describeThrown(error)));
      throw error;
    }
  };
}
