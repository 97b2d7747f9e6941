/**
 * What kind of model failure a `ModelError` is. `rate_limit`, `overloaded`, `network_error` and `server_error` are
 * retried by the runtime; `context_overflow` means the history must shrink; `auth_error` needs a new key.
 */
export type ModelErrorCode =
  | 'auth_error'
  | 'rate_limit'
  | 'overloaded'
  | 'invalid_request'
  | 'context_overflow'
  | 'network_error'
  | 'server_error'
  | 'bad_response'
  | 'aborted'
  | 'unknown';

const RETRYABLE: ReadonlySet<ModelErrorCode> = new Set(['rate_limit', 'overloaded', 'network_error', 'server_error']);

/** What a provider adapter knows about a failure when it builds a `ModelError`. */
export interface ModelErrorInit {
  code: ModelErrorCode;
  message: string;
  /** HTTP status, when the failure came with one. */
  status?: number;
  /** The provider's own error type (`rate_limit_error`, `invalid_request_error`, …). */
  providerType?: string;
  requestId?: string;
  /** How long the provider asked us to wait before retrying. */
  retryAfterMs?: number;
  /** An explicit retry hint from the provider (`x-should-retry`), which overrides the code's default. */
  shouldRetry?: boolean;
  provider?: string;
  cause?: unknown;
}

/** A classified model failure: what a program needs to decide whether to retry, re-auth, or shrink the context. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  readonly status?: number;
  readonly providerType?: string;
  readonly requestId?: string;
  readonly retryAfterMs?: number;
  readonly provider?: string;
  readonly retryable: boolean;

  constructor(init: ModelErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.providerType = init.providerType;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.provider = init.provider;
    this.retryable = init.shouldRetry ?? RETRYABLE.has(init.code);
  }

  /** The error as events and journals carry it: its name, code, message and HTTP facts, never its cause. */
  toJSON(): SerializedError {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.status === undefined ? {} : { status: this.status }),
      ...(this.providerType === undefined ? {} : { providerType: this.providerType }),
      ...(this.requestId === undefined ? {} : { requestId: this.requestId }),
    };
  }
}

/** The final answer did not match the requested `outputSchema`, after every correction the model was given. */
export class OutputValidationError extends Error {
  override readonly name = 'OutputValidationError';
  readonly code = 'output_invalid' as const;
  constructor(
    message: string,
    readonly attempts: number,
  ) {
    super(message);
  }

  /** The error as events and journals carry it: its name, code and message. */
  toJSON(): SerializedError {
    return { name: this.name, code: this.code, message: this.message };
  }
}

/** An error the runtime ends a turn with: a name, a stable code, and a message, serialised as just those. */
export abstract class CodedError extends Error {
  abstract readonly code: string;

  /** The error as events and journals carry it: its name, code and message. */
  toJSON(): SerializedError {
    return { name: this.name, code: this.code, message: this.message };
  }
}

/**
 * The agent's actor stopped on an error it could not turn into a turn's end (a bug, or a machine driven with a
 * malformed event): every turn still waiting settles with it, and the agent takes no more prompts.
 */
export class AgentFailedError extends CodedError {
  override readonly name = 'AgentFailedError';
  readonly code = 'agent_failed' as const;
}

/**
 * A guardrail said no (a hook threw it): the turn ends with the stop reason `guardrail_tripped` and this error,
 * whose message is the guardrail's reason. Throw it from any hook, e.g. an input check in `beforeTurn`.
 */
export class GuardrailTripped extends CodedError {
  override readonly name = 'GuardrailTripped';
  readonly code = 'guardrail_tripped' as const;
}

/**
 * A token, cost or wall-time budget of the agent or of an ancestor ran out: the turn ends with the stop reason
 * `budget_exhausted` and this error, whose message says which budget, whose, and by how much.
 */
export class BudgetExhausted extends CodedError {
  override readonly name = 'BudgetExhausted';
  readonly code = 'budget_exhausted' as const;
}

/** A hook failed closed (it threw, or did not answer within its time): the turn ends with stop reason `error`. */
export class HookFailed extends CodedError {
  override readonly name = 'HookFailed';
  readonly code = 'hook_failed' as const;
}

/** The errors a turn can end with, as `turn_end` events and rejected prompts carry them. */
export type TurnError =
  | ModelError
  | OutputValidationError
  | AgentFailedError
  | GuardrailTripped
  | HookFailed
  | BudgetExhausted;

/** The JSON shape of an error as it travels in events and machine context. */
export interface SerializedError {
  name: string;
  code: string;
  message: string;
  status?: number;
  providerType?: string;
  requestId?: string;
}

/** Classifies anything thrown by a model into a ModelError, keeping a ModelError as it is. */
export function toModelError(error: unknown, provider?: string): ModelError {
  try {
    if (error instanceof ModelError) return error;
  } catch {
    // `instanceof` on a revoked proxy throws: it is no ModelError.
  }
  if (isAbortError(error))
    return new ModelError({ code: 'aborted', message: 'The model call was aborted', provider, cause: error });
  return new ModelError({ code: 'unknown', message: describeThrown(error), provider, cause: error });
}

/**
 * Whether `error` is an abort (an `AbortSignal` fired, or an SDK's own abort error): an interrupted call, not a failure
 * to report or retry.
 */
export function isAbortError(error: unknown): boolean {
  try {
    return error instanceof Error && (error.name === 'AbortError' || error.name === 'APIUserAbortError');
  } catch {
    return false; // a getter that throws: whatever it is, it is not an abort
  }
}

/**
 * A one-line description of anything thrown, which never throws itself. Code may throw any value: one without a
 * `toString` (`Object.create(null)`), one whose `toString` or `message` getter throws, a revoked proxy. Every
 * catch that builds a message from what it caught goes through here, or its own failure escapes the catch.
 */
export function describeThrown(error: unknown): string {
  try {
    if (error instanceof Error) {
      const message = error.message;
      if (typeof message === 'string' && message !== '') return message;
      return typeof error.name === 'string' && error.name !== '' ? error.name : 'Error';
    }
    if (typeof error === 'string') return error;
    return String(error);
  } catch {
    // Falls through to the descriptions that call nothing on the value.
  }
  try {
    const json = JSON.stringify(error);
    if (typeof json === 'string') return json.length > 200 ? `${json.slice(0, 200)}…` : json;
  } catch {
    // Not JSON either.
  }
  return `a thrown ${error === null ? 'null' : typeof error} that cannot be turned into text`;
}

/**
 * A feature whose SDK is an optional peer dependency was used, but the package is not installed: the message names
 * the package and the install line. Only that package's absence becomes this error; a broken install of it (a
 * missing dependency of its own, a native module that does not load) is rethrown as it is.
 */
export class MissingPeerError extends CodedError {
  override readonly name = 'MissingPeerError';
  readonly code = 'missing_peer' as const;
  /** The npm package to install. */
  readonly package: string;

  constructor(pkg: string, feature: string, install: string, options?: { cause?: unknown }) {
    super(`${feature} needs ${pkg}: npm install ${install}`, options);
    this.package = pkg;
  }
}
