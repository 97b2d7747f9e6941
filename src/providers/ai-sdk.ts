import type {
  LanguageModelV3,
  LanguageModelV4,
  LanguageModelV4FinishReason,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4ProviderMetadata,
  SharedV4ProviderOptions,
} from '@ai-sdk/provider';
import type {
  AssistantContent,
  JsonObject,
  Model,
  ModelEvent,
  ModelRequest,
  ReasoningEffort,
  Usage,
} from '../protocol/index.js';
import { isAbortError, isSecretName, ModelError, redactError, registerSecret } from '../protocol/index.js';
import { callOptions, type Origin, v3CallOptions } from './ai-sdk-prompt.js';
import {
  badResponse,
  type ClassifyContext,
  classifyError,
  errorFromBody,
  stringOf,
  truncatedStream,
} from './http-errors.js';
import { abortedError, finishStopReason, usageOf } from './shared.js';
import { toolCallPart } from './tool-call.js';

/**
 * What `aiSdkModel` takes besides the AI SDK model: the provider name messages are tagged with, a default reasoning
 * effort, and the options and headers sent with every call.
 */
export interface AiSdkOptions {
  /** The name messages and kept provider metadata are tagged with (default: the model's own `provider`). */
  provider?: string;
  /** Reasoning effort when the agent asks for none (the spec's `reasoning` call option; V4 models only). */
  reasoning?: ReasoningEffort;
  /** Passed to every call as it is: the provider's own options, keyed by provider (`{ google: { … } }`). */
  providerOptions?: SharedV4ProviderOptions;
  /** Extra HTTP headers for every call (the values of secret ones, `authorization` or `x-api-key`, are secrets). */
  headers?: Record<string, string>;
  /**
   * The keys the provider was given in code, to be cut out of every error and event as Troupe's own adapters cut
   * theirs (the AI SDK model keeps its key to itself). Keys read from `*_API_KEY` variables are known already.
   */
  secrets?: readonly string[];
}

/**
 * A Troupe model from any model of the AI SDK's provider specification (`LanguageModelV4`, or `V3`): what
 * `@ai-sdk/google`, `@ai-sdk/amazon-bedrock`, `@ai-sdk/mistral`, `@ai-sdk/openai-compatible` and the community
 * providers make. Calls go through `doStream`; the abort signal goes to the provider, so an interrupt closes the
 * HTTP request. Failures are thrown as classified ModelErrors. The provider packages do not retry by themselves
 * (retries belong to the AI SDK's `generateText`, which this adapter does not use): the runtime's retry policy is
 * the only one. The spec is only a type here: nothing of the AI SDK is imported at run time.
 *
 * @example
 * // not run: needs @ai-sdk/google and a key
 * import { google } from '@ai-sdk/google';
 * const model = aiSdkModel(google('gemini-2.5-flash'));
 */
export function aiSdkModel(model: LanguageModelV4 | LanguageModelV3, options: AiSdkOptions = {}): Model {
  const origin: Origin = { provider: options.provider ?? model.provider, model: model.modelId };
  const ctx: ClassifyContext = { provider: origin.provider, label: `${model.provider} (AI SDK)` };
  for (const secret of options.secrets ?? []) registerSecret(secret);
  for (const [name, value] of Object.entries(options.headers ?? {})) if (isSecretName(name)) registerSecret(value);

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    try {
      const call = callOptions(request, origin, options, signal);
      const result =
        model.specificationVersion === 'v4' ? await model.doStream(call) : await model.doStream(v3CallOptions(call));
      // V3 stream parts are a subset of V4's, with the same shapes.
      yield* streamEvents(result.stream as ReadableStream<LanguageModelV4StreamPart>, origin, ctx, signal);
    } catch (error) {
      throw redactError(classifyAiSdkError(ctx, error, signal));
    }
  }

  return { id: model.modelId, provider: origin.provider, stream };
}

interface Block {
  part: AssistantContent;
  metadata?: SharedV4ProviderMetadata;
}

interface OpenCall {
  name: string;
  input: string;
  /** Where its part goes in the message: tool calls keep their place among text and reasoning. */
  slot: number;
}

/**
 * Turns the spec's stream parts into ModelEvents and the final message, in the order the model produced its blocks.
 * Tool input streams as `tool-input-*` deltas (split anywhere); the `tool-call` part that closes it carries the
 * whole input, which is what is parsed. A provider that sends only `tool-call` gets its start and one delta made
 * up. Calls the provider ran itself (`providerExecuted`) and their results are the provider's business, not
 * Troupe's tools: they are left out. The first `error` part fails the call.
 */
async function* streamEvents(
  stream: ReadableStream<LanguageModelV4StreamPart>,
  origin: Origin,
  ctx: ClassifyContext,
  signal: AbortSignal,
): AsyncGenerator<ModelEvent> {
  const blocks: Block[] = [];
  const open = new Map<string, Block>();
  const calls = new Map<string, OpenCall>();
  let finish: { reason: LanguageModelV4FinishReason; usage: LanguageModelV4Usage } | undefined;
  let responseId: string | undefined;
  const reader = stream.getReader();
  // A provider that leaves the signal unread still stops: a cancelled reader ends its pending read.
  const stop = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      const part = next.value;
      switch (part.type) {
        case 'text-start':
        case 'reasoning-start': {
          const block: Block = {
            part: part.type === 'text-start' ? { type: 'text', text: '' } : { type: 'reasoning', text: '' },
            metadata: part.providerMetadata,
          };
          blocks.push(block);
          open.set(`${part.type.slice(0, 4)}:${part.id}`, block);
          break;
        }
        case 'text-delta':
        case 'reasoning-delta': {
          const block = open.get(`${part.type.slice(0, 4)}:${part.id}`);
          if (!block || (block.part.type !== 'text' && block.part.type !== 'reasoning'))
            throw badResponse(ctx, `${part.type} for block ${part.id}, which was never started`);
          block.part.text += part.delta;
          block.metadata = merged(block.metadata, part.providerMetadata);
          if (part.delta)
            yield { type: part.type === 'text-delta' ? 'text_delta' : 'reasoning_delta', delta: part.delta };
          break;
        }
        case 'text-end':
        case 'reasoning-end': {
          const block = open.get(`${part.type.slice(0, 4)}:${part.id}`);
          if (block) block.metadata = merged(block.metadata, part.providerMetadata);
          break;
        }
        case 'tool-input-start':
          if (part.providerExecuted || calls.has(part.id)) break;
          calls.set(part.id, { name: part.toolName, input: '', slot: reserve(blocks) });
          yield { type: 'tool_call_start', id: part.id, name: part.toolName };
          break;
        case 'tool-input-delta': {
          const call = calls.get(part.id);
          if (!call || !part.delta) break;
          call.input += part.delta;
          yield { type: 'tool_call_delta', id: part.id, delta: part.delta };
          break;
        }
        case 'tool-call': {
          if (part.providerExecuted) break;
          let call = calls.get(part.toolCallId);
          if (!call) {
            call = { name: part.toolName, input: '', slot: reserve(blocks) };
            calls.set(part.toolCallId, call);
            yield { type: 'tool_call_start', id: part.toolCallId, name: part.toolName };
            if (part.input) yield { type: 'tool_call_delta', id: part.toolCallId, delta: part.input };
          }
          call.input = part.input;
          const slot = blocks[call.slot];
          if (slot) slot.part = toolCallPart(part.toolCallId, part.toolName, part.input);
          if (slot && part.providerMetadata) slot.metadata = part.providerMetadata;
          calls.delete(part.toolCallId);
          yield { type: 'tool_call_end', id: part.toolCallId };
          break;
        }
        case 'response-metadata':
          responseId ??= part.id;
          break;
        case 'finish':
          finish = { reason: part.finishReason, usage: part.usage };
          break;
        case 'error':
          throw part.error;
        default:
          // stream-start (warnings), tool results of provider-run tools, sources, files, raw chunks, pings.
          break;
      }
    }
  } finally {
    signal.removeEventListener('abort', stop);
    // Stops the provider's stream (and its HTTP body) when the caller leaves early or a part failed the call.
    stop();
  }
  if (signal.aborted) throw abortedError(ctx.provider, ctx.label ?? ctx.provider);
  // A tool call whose input began but whose `tool-call` never came: its input is what arrived.
  for (const [id, call] of calls) {
    const slot = blocks[call.slot];
    if (slot) slot.part = toolCallPart(id, call.name, call.input);
    yield { type: 'tool_call_end', id };
  }
  if (!finish || finish.reason.unified === 'interrupted') throw truncatedStream(ctx, 'its finish part');
  if (finish.reason.unified === 'error') {
    throw new ModelError({
      code: 'server_error',
      message: `${ctx.label}: the model stopped with an error (${finish.reason.raw ?? 'no reason given'})`,
      provider: ctx.provider,
      providerType: finish.reason.raw,
    });
  }

  const content: AssistantContent[] = [];
  for (const { part, metadata } of blocks) {
    if (part.type === 'text' && part.text === '') continue;
    // Reasoning is always tagged with its origin (only that model gets it back); a tool call only when it has metadata.
    if (part.type === 'reasoning' || (part.type === 'tool_call' && metadata))
      part.opaque = { provider: origin.provider, model: origin.model, data: (metadata ?? {}) as JsonObject };
    content.push(part);
  }
  const hasCalls = content.some((part) => part.type === 'tool_call');
  const stopReason = finishStopReason(finish.reason.unified, hasCalls);
  const usage = usageFrom(finish.usage);
  yield { type: 'usage', usage };
  yield {
    type: 'done',
    stopReason,
    message: {
      role: 'assistant',
      content,
      provider: origin.provider,
      model: origin.model,
      stopReason,
      usage,
      ...(responseId ? { responseId } : {}),
    },
  };
}

/** A place for a tool call among the blocks, filled when its input is whole. */
function reserve(blocks: Block[]): number {
  blocks.push({ part: { type: 'text', text: '' } });
  return blocks.length - 1;
}

function merged(
  into: SharedV4ProviderMetadata | undefined,
  add: SharedV4ProviderMetadata | undefined,
): SharedV4ProviderMetadata | undefined {
  if (!add) return into;
  if (!into) return add;
  const out: SharedV4ProviderMetadata = { ...into };
  for (const [key, value] of Object.entries(add)) out[key] = { ...out[key], ...value };
  return out;
}

/** The spec counts `inputTokens.total` as the whole prompt; Troupe's `input` is its uncached part. */
function usageFrom(usage: LanguageModelV4Usage): Usage {
  const { inputTokens: input, outputTokens: output } = usage;
  const cacheRead = input.cacheRead ?? 0;
  const cacheWrite = input.cacheWrite ?? 0;
  return usageOf({
    input: input.noCache ?? (input.total ?? 0) - cacheRead - cacheWrite,
    output: output.total ?? (output.text ?? 0) + (output.reasoning ?? 0),
    cacheRead,
    cacheWrite,
    reasoning: output.reasoning ?? 0,
  });
}

/** AI SDK errors the classifier knows by name (`AISDKError.name`), beyond `AI_APICallError`. */
const BY_NAME: Record<string, ModelError['code']> = {
  AI_LoadAPIKeyError: 'auth_error',
  AI_InvalidPromptError: 'invalid_request',
  AI_InvalidArgumentError: 'invalid_request',
  AI_UnsupportedFunctionalityError: 'invalid_request',
  AI_TypeValidationError: 'bad_response',
  AI_JSONParseError: 'bad_response',
  AI_InvalidResponseDataError: 'bad_response',
  AI_EmptyResponseBodyError: 'bad_response',
  AI_NoContentGeneratedError: 'bad_response',
};

/**
 * Classifies what a provider threw or put in an `error` part. `APICallError`s carry the HTTP status, headers and
 * body, classified as for Troupe's own adapters; an error part is often the provider's error object itself (a
 * compatible server's `{ message, type, code }`, Gemini's `{ code, message, status }` with `statusCode`). Errors
 * are recognised by their names and shapes, so the AI SDK is not imported.
 */
function classifyAiSdkError(ctx: ClassifyContext, error: unknown, signal: AbortSignal): ModelError {
  if (error instanceof ModelError) return error;
  if (signal.aborted || isAbortError(error)) return classifyError(ctx, error, signal);
  if (error instanceof Error) {
    if (error.name === 'AI_APICallError') return apiCallError(ctx, error, signal);
    const code = BY_NAME[error.name];
    if (code)
      return new ModelError({ code, message: `${ctx.label}: ${error.message}`, provider: ctx.provider, cause: error });
    return classifyError(ctx, error, signal);
  }
  if (typeof error === 'object' && error !== null) {
    const payload = error as { statusCode?: unknown; data?: unknown; message?: unknown };
    const status = typeof payload.statusCode === 'number' ? payload.statusCode : undefined;
    const body = typeof payload.data === 'object' && payload.data !== null ? payload.data : error;
    return errorFromBody(ctx, { error: body }, { status, cause: error, fallbackMessage: stringOf(payload.message) });
  }
  return classifyError(ctx, error, signal);
}

function apiCallError(ctx: ClassifyContext, error: Error, signal: AbortSignal): ModelError {
  const call = error as Error & {
    statusCode?: number;
    responseHeaders?: Record<string, string>;
    responseBody?: string;
    data?: unknown;
    isRetryable?: boolean;
    cause?: unknown;
  };
  if (call.statusCode === undefined || call.statusCode < 400) {
    // No response ("Cannot connect to API"), or a 200 whose body failed while it was read ("Failed to process
    // successful response", a socket closed mid-stream): what went wrong is the cause, which the AI SDK wraps.
    if (call.cause !== undefined) {
      const inner = classifyAiSdkError(ctx, call.cause, signal);
      if (inner.code !== 'unknown') return inner;
    }
    const code = call.isRetryable ? 'network_error' : 'unknown';
    return new ModelError({ code, message: `${ctx.label}: ${error.message}`, provider: ctx.provider, cause: error });
  }
  const headers = call.responseHeaders;
  return errorFromBody(ctx, call.data ?? call.responseBody, {
    status: call.statusCode,
    headers: headers ? { get: (name) => headers[name.toLowerCase()] ?? null } : undefined,
    cause: error,
    fallbackMessage: error.message,
  });
}
