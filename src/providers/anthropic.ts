// Over 400 lines: one provider's whole mapping, the request body and the stream of answers alike, read against the
// Messages API top to bottom; the two halves share its block types and settings.
import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  TextBlockParam,
  ToolChoice,
  ToolUnion,
} from '@anthropic-ai/sdk/resources/messages';
import {
  type AssistantContent,
  type AssistantMessage,
  addUsage,
  emptyUsage,
  type JsonValue,
  type Model,
  type ModelEvent,
  type ModelRequest,
  type ModelStopReason,
  type ReasoningEffort,
  redactError,
  registerSecret,
  type Usage,
} from '../protocol/index.js';
import { badResponse, type ClassifyContext, classifyError, truncatedStream } from './http-errors.js';
import { abortedError, apiKeyFrom, lazyClient, sameOrigin, strictSchema, toolSchema, usageOf } from './shared.js';
import { toolCallPart } from './tool-call.js';

/**
 * What `anthropic()` takes: the model id, the key and endpoint, and the Messages API features to use (thinking, prompt
 * caching, structured output).
 */
export interface AnthropicOptions {
  /** e.g. `claude-sonnet-4-5`. */
  model: string;
  /** Defaults to `ANTHROPIC_API_KEY`. */
  apiKey?: string;
  baseURL?: string;
  /** Output limit when the agent sets none (the Messages API requires one). Default 8192. */
  maxTokens?: number;
  /**
   * Extended thinking: a token budget, `adaptive` (the model decides), or `false` (off, even when the agent
   * asks for a reasoning effort). Unset: off unless the agent asks for an effort, which becomes a budget.
   */
  thinking?: { budgetTokens: number } | 'adaptive' | false;
  /** Prompt caching breakpoints on the system prompt, the tools and the latest turn (default true). */
  cache?: boolean | { ttl: '5m' | '1h' };
  /** `pause_turn` answers continued automatically before the answer is handed back (default 8). */
  maxPauseContinuations?: number;
  /** Native structured output (`output_config.format`) for a strict-compatible outputSchema (default true). */
  structuredOutput?: boolean;
  /** The name messages and opaque parts are tagged with (default `anthropic`). */
  provider?: string;
  defaultHeaders?: Record<string, string>;
  timeoutMs?: number;
  /** Extra request body fields, merged over ours. */
  extraBody?: Record<string, unknown>;
  /** Use this client instead of making one (retries are still turned off per request). */
  client?: Anthropic;
}

/** Thinking budgets for the agent's reasoning effort; capped at three quarters of max_tokens, so the answer has room. */
const EFFORT_BUDGET: Record<ReasoningEffort, number> = { minimal: 1024, low: 2048, medium: 4096, high: 16384 };

interface Settings {
  provider: string;
  model: string;
  maxTokens: number;
  thinking: AnthropicOptions['thinking'];
  cache: false | { type: 'ephemeral'; ttl?: '5m' | '1h' };
  structuredOutput: boolean;
  extraBody?: Record<string, unknown>;
}

/**
 * The Messages request for a ModelRequest.
 * Mapped: system (a cached text block), messages (consecutive user-side messages merged, tool results first),
 * images (base64 or url), tool results with `is_error`, tools (JSON Schema as `input_schema`), toolChoice
 * (`required` → `any`), maxTokens (default from the options), reasoning effort (a thinking budget,
 * at most three quarters of max_tokens), outputSchema (`output_config.format` when the schema is strict-compatible; otherwise the runtime's
 * instruction in the system prompt does the work), and cache breakpoints on system, the last tool and the last
 * block of the latest turn.
 * Replayed only to the same provider and model: thinking with its signature, redacted thinking, server tool
 * blocks. Reasoning of other models is dropped.
 * Ignored: temperature (deprecated by the Messages API: the SDK no longer has the field, and it is never
 * allowed with thinking); thinking for a request whose toolChoice forces a tool (the API refuses the pair);
 * `minimal` effort is the smallest budget the API accepts (1024).
 */
function anthropicRequestBody(request: ModelRequest, settings: Settings): MessageCreateParamsStreaming {
  const messages: MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role && Array.isArray(last.content)) {
      // Tool results must open the user message that follows the tool calls.
      const merged = [...last.content, ...blocks];
      if (role === 'user') merged.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
      last.content = merged;
    } else messages.push({ role, content: blocks });
  };

  for (const message of request.messages) {
    if (message.role === 'user') {
      push(
        'user',
        message.content.flatMap((part): ContentBlockParam[] => {
          if (part.type === 'text') return part.text ? [{ type: 'text', text: part.text }] : [];
          return [imageBlock(part.source)];
        }),
      );
    } else if (message.role === 'tool') {
      push(
        'user',
        message.content.map((part): ContentBlockParam => {
          const content = part.content.flatMap((item): (TextBlockParam | ReturnType<typeof imageBlock>)[] => {
            if (item.type === 'text') return item.text ? [{ type: 'text', text: item.text }] : [];
            return [imageBlock(item.source)];
          });
          // An empty result goes without content: the API takes no empty text blocks.
          return {
            type: 'tool_result',
            tool_use_id: part.toolCallId,
            ...(content.length > 0 ? { content } : {}),
            is_error: part.isError,
          };
        }),
      );
    } else {
      const blocks: ContentBlockParam[] = [];
      for (const part of message.content) {
        if (part.type === 'text') {
          if (part.text) blocks.push({ type: 'text', text: part.text });
        } else if (part.type === 'reasoning') {
          const data = part.opaque?.data;
          const signature =
            typeof data === 'object' && data !== null && !Array.isArray(data) ? data.signature : undefined;
          // Thinking goes back only with the signature that proves it unchanged, and only to the model that made it.
          if (
            sameOrigin(part.opaque, settings.provider, settings.model) &&
            typeof signature === 'string' &&
            signature
          ) {
            blocks.push({ type: 'thinking', thinking: part.text, signature });
          }
        } else if (part.type === 'tool_call') {
          blocks.push({ type: 'tool_use', id: part.id, name: part.name, input: part.arguments });
        } else if (sameOrigin(part, settings.provider, settings.model)) {
          blocks.push(part.data as unknown as ContentBlockParam);
        }
      }
      push('assistant', blocks);
    }
  }

  const thinking = thinkingConfig(request, settings);
  const maxTokens = request.maxTokens ?? settings.maxTokens;
  const body: MessageCreateParamsStreaming = { model: settings.model, max_tokens: maxTokens, messages, stream: true };
  const cache = settings.cache;
  if (request.system) {
    body.system = [{ type: 'text', text: request.system, ...(cache ? { cache_control: cache } : {}) }];
  }
  if (request.tools.length > 0) {
    body.tools = request.tools.map(
      (tool, i): ToolUnion => ({
        name: tool.name,
        description: tool.description,
        input_schema: toolSchema(tool.inputSchema) as { type: 'object' },
        ...(cache && i === request.tools.length - 1 ? { cache_control: cache } : {}),
      }),
    );
    if (request.toolChoice) body.tool_choice = anthropicToolChoice(request.toolChoice);
  }
  if (cache) markLatestTurn(messages, cache);
  if (thinking) body.thinking = thinking;
  if (request.outputSchema && settings.structuredOutput) {
    const strict = strictSchema(toolSchema(request.outputSchema.schema));
    if (strict) body.output_config = { format: { type: 'json_schema', schema: strict } };
  }
  return settings.extraBody ? ({ ...body, ...settings.extraBody } as MessageCreateParamsStreaming) : body;
}

function thinkingConfig(
  request: ModelRequest,
  settings: Settings,
): { type: 'enabled'; budget_tokens: number } | { type: 'adaptive' } | undefined {
  const option = settings.thinking;
  if (option === false) return undefined;
  // The API refuses thinking when tool_choice forces a tool: the explicit choice of this request wins.
  const forced =
    request.tools.length > 0 && (request.toolChoice === 'required' || typeof request.toolChoice === 'object');
  if (forced) return undefined;
  if (option === 'adaptive') return { type: 'adaptive' };
  const maxTokens = request.maxTokens ?? settings.maxTokens;
  const budget = option?.budgetTokens ?? (request.reasoning ? EFFORT_BUDGET[request.reasoning.effort] : undefined);
  if (budget === undefined) return undefined;
  // The API wants 1024 ≤ budget < max_tokens; an effort leaves a quarter of max_tokens for the answer.
  const cap = option?.budgetTokens !== undefined ? maxTokens - 1 : Math.floor((maxTokens * 3) / 4);
  const capped = Math.min(Math.max(1024, budget), cap);
  return capped >= 1024 ? { type: 'enabled', budget_tokens: capped } : undefined;
}

function anthropicToolChoice(choice: NonNullable<ModelRequest['toolChoice']>): ToolChoice {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any' };
  return { type: 'tool', name: choice.name };
}

function imageBlock(
  source: { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string },
): ContentBlockParam & { type: 'image' } {
  if (source.kind === 'url') return { type: 'image', source: { type: 'url', url: source.url } };
  return {
    type: 'image',
    source: {
      type: 'base64',
      media_type: source.mediaType as 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp',
      data: source.data,
    },
  };
}

/** A cache breakpoint on the last block of the latest message that can carry one (never on thinking). */
function markLatestTurn(messages: MessageParam[], cache: { type: 'ephemeral'; ttl?: '5m' | '1h' }): void {
  for (let m = messages.length - 1; m >= 0; m--) {
    const content = messages[m]?.content;
    if (!Array.isArray(content)) continue;
    for (let b = content.length - 1; b >= 0; b--) {
      const block = content[b];
      if (!block || block.type === 'thinking' || block.type === 'redacted_thinking') continue;
      content[b] = { ...block, cache_control: cache } as ContentBlockParam;
      return;
    }
  }
}

type Block =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string; signature: string }
  | { kind: 'tool_use'; id: string; name: string; json: string; closed?: boolean }
  | { kind: 'opaque'; type: string; block: Record<string, unknown>; json: string };

interface Round {
  blocks: Block[];
  stopReason?: string;
  usage: Usage;
  id?: string;
}

/**
 * One Messages stream into ModelEvents, returning the round's blocks. Blocks are kept by `index` (which counts
 * every kind of block and restarts at 0 in each message). `tool_use` input is accumulated from
 * `input_json_delta` (`""` alone means `{}`); a block cut by `max_tokens` gets no `content_block_stop` and keeps
 * its broken JSON, which becomes an error result for that one call. Usage: `message_start` gives input and cache
 * counts, `message_delta` cumulative counts that win where present. The stream must reach `message_stop`;
 * an `error` event is thrown by the SDK and classified by the caller.
 */
async function* anthropicRound(
  stream: AsyncIterable<unknown>,
  ctx: ClassifyContext,
  signal: AbortSignal,
): AsyncGenerator<ModelEvent, Round> {
  const blocks = new Map<number, Block>();
  const round: Round = { blocks: [], usage: emptyUsage() };
  const raw: Record<string, number> = {};
  let stopped = false;
  const takeUsage = (usage: unknown) => {
    if (typeof usage !== 'object' || usage === null) return;
    for (const [key, value] of Object.entries(usage)) if (typeof value === 'number') raw[key] = value;
    const details = (usage as { output_tokens_details?: { thinking_tokens?: unknown } }).output_tokens_details;
    if (typeof details?.thinking_tokens === 'number') raw.thinking_tokens = details.thinking_tokens;
  };

  for await (const item of stream) {
    const event = item as Record<string, unknown> & { type: string };
    if (stopped) continue;
    switch (event.type) {
      case 'message_start': {
        const message = event.message as { id?: string; usage?: unknown } | undefined;
        round.id = message?.id;
        takeUsage(message?.usage);
        break;
      }
      case 'content_block_start': {
        const index = Number(event.index);
        const block = (event.content_block ?? {}) as Record<string, unknown>;
        const type = String(block.type);
        if (type === 'text') {
          const text = typeof block.text === 'string' ? block.text : '';
          blocks.set(index, { kind: 'text', text });
          if (text) yield { type: 'text_delta', delta: text };
        } else if (type === 'thinking') {
          const text = typeof block.thinking === 'string' ? block.thinking : '';
          blocks.set(index, {
            kind: 'thinking',
            text,
            signature: typeof block.signature === 'string' ? block.signature : '',
          });
          if (text) yield { type: 'reasoning_delta', delta: text };
        } else if (type === 'tool_use') {
          const id = String(block.id ?? `toolu_${index}`);
          const name = String(block.name ?? '');
          blocks.set(index, { kind: 'tool_use', id, name, json: '' });
          yield { type: 'tool_call_start', id, name };
        } else {
          // redacted_thinking, server_tool_use, web_search_tool_result, …: kept whole, replayed as they came.
          blocks.set(index, { kind: 'opaque', type, block: { ...block }, json: '' });
        }
        break;
      }
      case 'content_block_delta': {
        const block = blocks.get(Number(event.index));
        const delta = (event.delta ?? {}) as Record<string, unknown>;
        if (!block) throw badResponse(ctx, `a delta for block ${String(event.index)}, which never started`);
        if (delta.type === 'text_delta' && block.kind === 'text') {
          const text = String(delta.text ?? '');
          block.text += text;
          if (text) yield { type: 'text_delta', delta: text };
        } else if (delta.type === 'thinking_delta' && block.kind === 'thinking') {
          const text = String(delta.thinking ?? '');
          block.text += text;
          if (text) yield { type: 'reasoning_delta', delta: text };
        } else if (delta.type === 'signature_delta' && block.kind === 'thinking') {
          block.signature += String(delta.signature ?? '');
        } else if (delta.type === 'input_json_delta') {
          const piece = String(delta.partial_json ?? '');
          if (block.kind === 'tool_use') {
            block.json += piece;
            if (piece) yield { type: 'tool_call_delta', id: block.id, delta: piece };
          } else if (block.kind === 'opaque') block.json += piece;
        } else if (delta.type === 'citations_delta' && block.kind === 'text') {
          // Citations are not kept: the text stands alone when replayed.
        }
        break;
      }
      case 'content_block_stop': {
        const block = blocks.get(Number(event.index));
        if (block?.kind === 'tool_use') {
          block.closed = true;
          yield { type: 'tool_call_end', id: block.id };
        }
        break;
      }
      case 'message_delta': {
        const delta = (event.delta ?? {}) as { stop_reason?: string | null };
        if (delta.stop_reason) round.stopReason = delta.stop_reason;
        takeUsage(event.usage);
        break;
      }
      case 'message_stop':
        stopped = true;
        break;
      default:
        break;
    }
  }
  if (signal.aborted) throw abortedError(ctx.provider, ctx.label ?? ctx.provider);
  if (!stopped) throw truncatedStream(ctx, 'message_stop');
  if (!round.stopReason) throw badResponse(ctx, 'the message stopped without a stop_reason');
  round.blocks = [...blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, block]) => block);
  round.usage = usageOf({
    input: raw.input_tokens,
    output: raw.output_tokens,
    cacheRead: raw.cache_read_input_tokens,
    cacheWrite: raw.cache_creation_input_tokens,
    reasoning: raw.thinking_tokens,
  });
  return round;
}

function toContent(blocks: Block[], provider: string, model: string): { content: AssistantContent[]; open: string[] } {
  const content: AssistantContent[] = [];
  const open: string[] = [];
  for (const block of blocks) {
    if (block.kind === 'text') {
      if (block.text) content.push({ type: 'text', text: block.text });
    } else if (block.kind === 'thinking') {
      content.push({
        type: 'reasoning',
        text: block.text,
        opaque: { provider, model, data: { signature: block.signature } },
      });
    } else if (block.kind === 'tool_use') {
      content.push(toolCallPart(block.id, block.name, block.json));
      if (!block.closed) open.push(block.id);
    } else {
      const data = { ...block.block };
      if (block.json) {
        try {
          data.input = JSON.parse(block.json);
        } catch {
          // A server tool cut by max_tokens: its input stays as it started.
        }
      }
      content.push({ type: 'opaque', kind: block.type, provider, model, data: data as JsonValue });
    }
  }
  return { content, open };
}

function stopReasonOf(reason: string): ModelStopReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'refusal';
    case 'pause_turn':
      return 'pause_turn';
    default:
      // end_turn, stop_sequence
      return 'stop';
  }
}

/**
 * A Claude model through the Messages API. Streams text, thinking (kept with its signature for replay),
 * redacted thinking and server tool blocks (opaque, replayed only to this provider and model), tool calls;
 * continues `pause_turn` automatically (the paused content goes back as the assistant turn and the answers are
 * joined into one message, usage summed). The SDK's own retries are off; the abort signal goes to the SDK.
 */
export function anthropic(options: AnthropicOptions): Model {
  const provider = options.provider ?? 'anthropic';
  const ctx: ClassifyContext = { provider, label: 'Anthropic' };
  const cacheOption = options.cache ?? true;
  const settings: Settings = {
    provider,
    model: options.model,
    maxTokens: options.maxTokens ?? 8192,
    thinking: options.thinking,
    cache:
      cacheOption === false ? false : { type: 'ephemeral', ...(cacheOption === true ? {} : { ttl: cacheOption.ttl }) },
    structuredOutput: options.structuredOutput ?? true,
    extraBody: options.extraBody,
  };
  const maxContinuations = options.maxPauseContinuations ?? 8;
  // Known from now on to every error this process reports and to the inspector's sanitiser.
  registerSecret(options.apiKey ?? options.client?.apiKey ?? undefined);
  // The SDK is imported on the first request (~26 MB of memory, tens of ms of start-up, otherwise paid by every user).
  const getClient = lazyClient({ name: '@anthropic-ai/sdk', feature: 'anthropic()' }, options.client, () => {
    const apiKey = apiKeyFrom(options.apiKey, 'ANTHROPIC_API_KEY', ctx);
    return import('@anthropic-ai/sdk').then(
      ({ default: Anthropic }) =>
        new Anthropic({
          apiKey,
          maxRetries: 0,
          ...(options.baseURL ? { baseURL: options.baseURL } : {}),
          ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
          ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
        }),
    );
  });

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    try {
      const sdk = await getClient();
      const content: AssistantContent[] = [];
      const usage = emptyUsage();
      let responseId: string | undefined;
      let stopReason: ModelStopReason = 'stop';
      let current = request;
      for (let round = 0; ; round++) {
        const body = anthropicRequestBody(current, settings);
        const events = await sdk.messages.create(body, { signal, maxRetries: 0 });
        const result = yield* anthropicRound(events, ctx, signal);
        const { content: parts, open } = toContent(result.blocks, provider, options.model);
        // A tool_use block cut off by max_tokens never saw its content_block_stop.
        for (const id of open) yield { type: 'tool_call_end', id };
        content.push(...parts);
        addUsage(usage, result.usage);
        responseId ??= result.id;
        stopReason = stopReasonOf(result.stopReason ?? 'end_turn');
        if (stopReason !== 'pause_turn' || round >= maxContinuations) break;
        // Continue the paused turn: send what the model has said so far back as its (unfinished) answer.
        const paused: AssistantMessage = {
          role: 'assistant',
          content: [...content],
          provider,
          model: options.model,
          stopReason,
          usage: emptyUsage(),
        };
        current = { ...request, messages: [...request.messages, paused] };
      }
      yield { type: 'usage', usage };
      const message: AssistantMessage = {
        role: 'assistant',
        content,
        provider,
        model: options.model,
        stopReason,
        usage,
        ...(responseId ? { responseId } : {}),
      };
      yield { type: 'done', message, stopReason };
    } catch (error) {
      throw redactError(classifyError(ctx, error, signal));
    }
  }

  return { id: options.model, provider, stream };
}
