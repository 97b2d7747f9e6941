import type { ModelError } from '../../protocol/index.js';
import { sleep } from './sleep.js';

/**
 * How the runtime retries a model call that failed with a retryable `ModelError` (a rate limit, an overload, a network
 * or server error): how often, and how long it backs off.
 */
export interface RetryOptions {
  /** Retries after the first attempt (default 4). */
  maxRetries?: number;
  /** The first backoff (default 1 s); each retry doubles it, with jitter over its upper half. */
  initialDelayMs?: number;
  /** No single wait is longer than this (default 30 s). */
  maxDelayMs?: number;
  /** A `retry-after` longer than this is not waited for: the error ends the turn instead (default 60 s). */
  maxRetryAfterMs?: number;
  /**
   * How the wait is made (default: an in-process timer). A durable host replaces it: `troupe/restate` waits with a
   * journaled `ctx.sleep`, so a backoff that a crash interrupts ends at its first deadline, not a new one.
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The jitter's source, in [0, 1) (default `Math.random`); a durable host gives a deterministic one. */
  random?: () => number;
}

export type RetryPolicy = Required<RetryOptions>;

export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  if (options === false)
    return { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0, sleep, random: Math.random };
  return {
    maxRetries: options?.maxRetries ?? 4,
    initialDelayMs: options?.initialDelayMs ?? 1000,
    maxDelayMs: options?.maxDelayMs ?? 30_000,
    maxRetryAfterMs: options?.maxRetryAfterMs ?? 60_000,
    sleep: options?.sleep ?? sleep,
    random: options?.random ?? Math.random,
  };
}

/**
 * How long to wait before retry number `attempt` (1-based), or undefined when the error must end the turn:
 * auth, invalid requests and context overflow are never retried, and the provider's `retry-after` wins over
 * our backoff.
 */
export function retryDelay(
  error: ModelError,
  attempt: number,
  policy: RetryPolicy,
  random = Math.random,
): number | undefined {
  if (!error.retryable || attempt > policy.maxRetries) return undefined;
  if (error.retryAfterMs !== undefined) {
    return error.retryAfterMs <= policy.maxRetryAfterMs ? error.retryAfterMs : undefined;
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
