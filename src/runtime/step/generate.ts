import type { z } from 'zod';
import {
  type AssistantMessage,
  addUsage,
  emptyUsage,
  type JsonObject,
  type Message,
  type Model,
  ModelError,
  type ModelEvent,
  type ModelRequest,
  type ModelStopReason,
  OutputValidationError,
  type ReasoningEffort,
  type SerializedError,
  type ToolCallPart,
  type ToolChoice,
  type ToolSpec,
  textOf,
  toModelError,
  toolCallsOf,
  type Usage,
  type UserContent,
  userMessage,
} from '../../protocol/index.js';
import { type AnyTool, outputSpec, parseStructuredAnswer, ToolRegistry } from '../../tools/index.js';
import { type RetryOptions, retryDelay, retryPolicy } from '../env/retry.js';
import { sleep } from '../env/sleep.js';

/**
 * One model call without the agent's loop: the same providers, retries and classified errors as an agent, for the
 * many places an application needs a single completion (a title, a classification, a summary). Tools are offered
 * to the model but never run: the calls it makes come back in `toolCalls`.
 */
export interface GenerateRequest<Output = unknown> {
  /** The user's input; appended after `messages` when both are given. */
  prompt?: string | UserContent[];
  messages?: readonly Message[];
  system?: string;
  /** Tools the model may call: `defineTool` tools or plain specs (name, description, JSON Schema). */
  tools?: readonly (AnyTool | ToolSpec)[];
  toolChoice?: ToolChoice;
  /** The answer must be JSON matching this schema; `result.output` is then the parsed value. */
  outputSchema?: z.ZodType<Output>;
  maxTokens?: number;
  temperature?: number;
  reasoning?: ReasoningEffort;
  /** As an agent's: backoff for rate limits, overload, 5xx and network errors; `false` for none. */
  retry?: RetryOptions | false;
  signal?: AbortSignal;
}

/**
 * What `generate` returns: the model's answer, its text and tool calls, why it stopped, the tokens of every attempt,
 * and the structured answer when a schema was given.
 */
export interface GenerateResult<Output = unknown> {
  message: AssistantMessage;
  text: string;
  toolCalls: ToolCallPart[];
  stopReason: ModelStopReason;
  /** Every attempt's tokens, failed ones included: they were billed. */
  usage: Usage;
  /** Present when `outputSchema` was given. */
  output?: Output;
  /** 1 when the first attempt succeeded. */
  attempts: number;
}

/** What `streamText` yields: the model's own events, and a `retry` before an attempt that replaces a failed one. */
export type GenerateEvent =
  | Exclude<ModelEvent, { type: 'done' }>
  | { type: 'retry'; attempt: number; delayMs: number; error: SerializedError };

/** What `streamText` returns: the model's events as they arrive, and the whole result once the answer is done. */
export interface TextStream<Output = unknown> extends AsyncIterable<GenerateEvent> {
  /** Only the text deltas. */
  readonly textStream: AsyncIterable<string>;
  /** Settles when the call ends: the result, or the classified `ModelError` / `OutputValidationError`. */
  readonly result: Promise<GenerateResult<Output>>;
}

/** One completion, retried as an agent would retry it. Rejects with a `ModelError` (or `OutputValidationError`). */
export function generate<Output = unknown>(
  model: Model,
  request: GenerateRequest<Output>,
): Promise<GenerateResult<Output>> {
  return run(model, request, undefined);
}

/**
 * One completion, streamed. The call starts at once and its events are buffered until read, so awaiting only
 * `result` works too. After a failed attempt a `retry` event says that the text streamed so far is void.
 */
export function streamText<Output = unknown>(model: Model, request: GenerateRequest<Output>): TextStream<Output> {
  const queue = new ReplayQueue<GenerateEvent>();
  const result = run(model, request, (event) => queue.push(event));
  // Whoever reads only the events must not get an unhandled rejection from the result they never awaited.
  result.then(
    () => queue.end(),
    () => queue.end(),
  );
  return {
    result,
    [Symbol.asyncIterator]: () => queue.reader(),
    textStream: {
      async *[Symbol.asyncIterator]() {
        for await (const event of queue.readerIterable()) if (event.type === 'text_delta') yield event.delta;
      },
    },
  };
}

async function run<Output>(
  model: Model,
  request: GenerateRequest<Output>,
  onEvent: ((event: GenerateEvent) => void) | undefined,
): Promise<GenerateResult<Output>> {
  const spec = request.outputSchema ? outputSpec(request.outputSchema) : undefined;
  const modelRequest = toModelRequest(request, spec?.jsonSchema);
  const policy = retryPolicy(request.retry);
  const signal = request.signal ?? new AbortController().signal;
  const usage = emptyUsage();
  for (let attempt = 1; ; attempt++) {
    let done: Extract<ModelEvent, { type: 'done' }> | undefined;
    let attemptUsage: Usage | undefined;
    try {
      for await (const event of model.stream(modelRequest, signal)) {
        if (event.type === 'done') {
          done = event;
          break;
        }
        if (event.type === 'usage') attemptUsage = event.usage;
        onEvent?.(event);
      }
      if (!done) {
        const message = 'The model stream ended without a final message';
        throw new ModelError({ code: 'bad_response', message, provider: model.provider });
      }
    } catch (thrown) {
      if (attemptUsage) addUsage(usage, attemptUsage);
      if (signal.aborted) throw abortedError(model, thrown);
      const error = toModelError(thrown, model.provider);
      const delayMs = retryDelay(error, attempt, policy);
      if (delayMs === undefined) throw error;
      onEvent?.({ type: 'retry', attempt, delayMs, error: error.toJSON() });
      try {
        await sleep(delayMs, signal);
      } catch (abort) {
        throw abortedError(model, abort);
      }
      continue;
    }
    const { message, stopReason } = done;
    addUsage(usage, message.usage ?? attemptUsage ?? emptyUsage());
    const text = textOf(message);
    const toolCalls = toolCallsOf(message);
    const result: GenerateResult<Output> = { message, text, toolCalls, stopReason, usage, attempts: attempt };
    if (spec && toolCalls.length === 0) {
      const answer = parseStructuredAnswer(text, spec.schema);
      if (!answer.ok) throw new OutputValidationError(answer.feedback, 1);
      result.output = answer.value as Output;
    }
    return result;
  }
}

function toModelRequest(request: GenerateRequest, outputJsonSchema: JsonObject | undefined): ModelRequest {
  const messages: Message[] = [...(request.messages ?? [])];
  if (request.prompt !== undefined) messages.push(userMessage(request.prompt));
  if (messages.length === 0) throw new TypeError('generate() needs a prompt or messages');
  const modelRequest: ModelRequest = { messages, tools: toolSpecs(request.tools) };
  let system = request.system;
  if (outputJsonSchema) {
    modelRequest.outputSchema = { name: 'final_answer', schema: outputJsonSchema };
    const instruction = `Reply with only a JSON object (no prose, no code fence) that matches this JSON Schema:\n${JSON.stringify(outputJsonSchema)}`;
    system = system ? `${system}\n\n${instruction}` : instruction;
  }
  if (system !== undefined) modelRequest.system = system;
  if (request.toolChoice !== undefined) modelRequest.toolChoice = request.toolChoice;
  if (request.maxTokens !== undefined) modelRequest.maxTokens = request.maxTokens;
  if (request.temperature !== undefined) modelRequest.temperature = request.temperature;
  if (request.reasoning !== undefined) modelRequest.reasoning = { effort: request.reasoning };
  return modelRequest;
}

function toolSpecs(tools: GenerateRequest['tools']): readonly ToolSpec[] {
  if (!tools || tools.length === 0) return [];
  const defined = tools.filter((tool): tool is AnyTool => 'schema' in tool);
  const specs = new ToolRegistry(defined).specs;
  const plain = tools.filter((tool): tool is ToolSpec => !('schema' in tool));
  return plain.length === 0 ? specs : [...specs, ...plain];
}

function abortedError(model: Model, cause: unknown): ModelError {
  return new ModelError({ code: 'aborted', message: 'The model call was aborted', provider: model.provider, cause });
}

/**
 * A buffer that every reader reads from the start, so a late reader misses nothing (one completion's events are
 * small). Readers waiting for more are woken together.
 */
class ReplayQueue<T> {
  private readonly items: T[] = [];
  private ended = false;
  private waiting: (() => void)[] = [];

  push(item: T): void {
    this.items.push(item);
    this.wakeAll();
  }

  end(): void {
    this.ended = true;
    this.wakeAll();
  }

  private wakeAll(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }

  reader(): AsyncIterator<T> {
    return this.readerIterable()[Symbol.asyncIterator]();
  }

  async *readerIterable(): AsyncGenerator<T> {
    for (let index = 0; ; ) {
      if (index < this.items.length) {
        yield this.items[index++] as T;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}
