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

  toJSON(): SerializedError {
    return { name: this.name, code: this.code, message: this.message };
  }
}

export type TurnError = ModelError | OutputValidationError;

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
  if (error instanceof ModelError) return error;
  if (isAbortError(error))
    return new ModelError({ code: 'aborted', message: 'The model call was aborted', provider, cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new ModelError({ code: 'unknown', message, provider, cause: error });
}

export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'APIUserAbortError');
}
