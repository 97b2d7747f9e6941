import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type {
  AssistantContent,
  AssistantMessage,
  ModelEvent,
  ModelRequest,
  ModelStopReason,
  Usage,
} from '../protocol/index.js';
import { badResponse, type ClassifyContext, truncatedStream } from './http-errors.js';
import {
  abortedError,
  finishStopReason,
  imageUrl,
  sameOrigin,
  strictSchema,
  toolResultImages,
  toolResultText,
  toolSchema,
  usageOf,
} from './shared.js';
import { toolCallPart } from './tool-call.js';

export interface ChatSettings {
  provider: string;
  model: string;
  /** `max_completion_tokens` (OpenAI itself; required by its reasoning models) or `max_tokens` (most compatible servers). */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** `json_schema` (OpenAI, vLLM, …), `json_object` (DeepSeek and others without schemas), or `false` (prompt only). */
  structuredOutput: 'json_schema' | 'json_object' | false;
  /** Ask for the final usage chunk (`stream_options.include_usage`); some old servers reject the option. */
  includeUsage: boolean;
  /** Send strict-compatible tool schemas in strict mode (OpenAI); some compatible servers reject `strict`. */
  strictTools: boolean;
  /** Extra body fields for a compatible server (e.g. `{ top_k: 20 }`); they win over ours. */
  extraBody?: Record<string, unknown>;
}

/**
 * The Chat Completions request for a ModelRequest.
 * Mapped: system (as a `system` message), messages, images (`image_url`, data URLs for base64), tools (`strict`
 * only when the schema is strict-compatible, and only for OpenAI unless `strictTools`), toolChoice, maxTokens,
 * temperature, reasoning effort (`reasoning_effort`, only when asked), outputSchema (`response_format`).
 * Replayed only to the same provider and model: reasoning that came as `reasoning_content` goes back in that
 * field (DeepSeek's thinking mode rejects a tool-call history without it).
 * Ignored: other reasoning (OpenAI streams none here; Groq's `reasoning` field is not taken back), opaque parts,
 * `isError` of tool results (no such field: the result text says it). Images inside tool results are moved to a
 * user message right after the tool messages, since `tool` messages take text only.
 */
export function chatRequestBody(request: ModelRequest, settings: ChatSettings): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.system) messages.push({ role: 'system', content: request.system });
  for (const message of request.messages) {
    if (message.role === 'user') {
      const content: ChatCompletionContentPart[] = message.content.map((part) =>
        part.type === 'text'
          ? { type: 'text', text: part.text }
          : { type: 'image_url', image_url: { url: imageUrl(part) } },
      );
      const only = content[0];
      messages.push({
        role: 'user',
        content: content.length === 1 && only?.type === 'text' ? only.text : content,
      });
    } else if (message.role === 'assistant') {
      let text = '';
      let reasoning: string | undefined;
      const toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = [];
      for (const part of message.content) {
        if (part.type === 'text') text += part.text;
        else if (part.type === 'reasoning') {
          const data = part.opaque?.data;
          const field = typeof data === 'object' && data !== null && !Array.isArray(data) ? data.field : undefined;
          if (field === 'reasoning_content' && sameOrigin(part.opaque, settings.provider, settings.model)) {
            reasoning = (reasoning ?? '') + part.text;
          }
        } else if (part.type === 'tool_call') {
          toolCalls.push({
            id: part.id,
            type: 'function',
            // Broken argument text is not sent back: compatible servers parse it and would reject the request.
            function: { name: part.name, arguments: JSON.stringify(part.arguments) },
          });
        }
      }
      if (!text && toolCalls.length === 0) continue;
      messages.push({
        role: 'assistant',
        content: text || null,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        ...(reasoning !== undefined ? { reasoning_content: reasoning } : {}),
      } as ChatCompletionMessageParam);
    } else {
      const images: ChatCompletionContentPart[] = [];
      for (const part of message.content) {
        messages.push({ role: 'tool', tool_call_id: part.toolCallId, content: toolResultText(part) });
        for (const image of toolResultImages(part))
          images.push({ type: 'image_url', image_url: { url: imageUrl(image) } });
      }
      if (images.length > 0) {
        messages.push({
          role: 'user',
          content: [{ type: 'text', text: 'Images returned by the tools above:' }, ...images],
        });
      }
    }
  }

  const body: ChatCompletionCreateParamsStreaming = { model: settings.model, messages, stream: true };
  if (settings.includeUsage) body.stream_options = { include_usage: true };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool): ChatCompletionTool => {
      const parameters = toolSchema(tool.inputSchema);
      const strict = settings.strictTools ? strictSchema(parameters) : undefined;
      return {
        type: 'function',
        function: {
          name: tool.name,
          description: tool.description,
          parameters: strict ?? parameters,
          ...(strict ? { strict: true } : {}),
        },
      };
    });
    if (request.toolChoice) body.tool_choice = chatToolChoice(request.toolChoice);
  }
  if (request.maxTokens !== undefined) body[settings.maxTokensField] = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.reasoning) body.reasoning_effort = request.reasoning.effort;
  if (request.outputSchema && settings.structuredOutput) {
    const schema = toolSchema(request.outputSchema.schema);
    const strict = strictSchema(schema);
    body.response_format =
      settings.structuredOutput === 'json_object'
        ? { type: 'json_object' }
        : {
            type: 'json_schema',
            json_schema: { name: request.outputSchema.name, schema: strict ?? schema, strict: strict !== undefined },
          };
  }
  return settings.extraBody ? ({ ...body, ...settings.extraBody } as ChatCompletionCreateParamsStreaming) : body;
}

function chatToolChoice(choice: NonNullable<ModelRequest['toolChoice']>): ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.name } };
}

let unnamedCalls = 0;

interface OpenCall {
  id: string;
  name: string;
  args: string;
}

/** Chunk fields that compatible servers add and the SDK types do not know. */
interface CompatDelta {
  reasoning_content?: string | null;
  reasoning?: string | null;
}
interface CompatUsage {
  prompt_cache_hit_tokens?: number;
}

/**
 * Turns a Chat Completions chunk stream into ModelEvents. Only choice 0 is read (Troupe never asks for `n > 1`).
 * Tool calls are grouped by their `index`: id and name come in the first chunk, argument text in pieces that
 * split anywhere; arguments are parsed once, at the end. The stream must bring a `finish_reason`; usage may come
 * on the finish chunk (DeepSeek, OpenRouter) or in a last chunk with empty `choices` (OpenAI).
 */
export async function* chatEvents(
  stream: AsyncIterable<ChatCompletionChunk>,
  settings: Pick<ChatSettings, 'provider' | 'model'>,
  ctx: ClassifyContext,
  signal: AbortSignal,
): AsyncGenerator<ModelEvent> {
  let text = '';
  let reasoning = '';
  let reasoningField: 'reasoning_content' | 'reasoning' | undefined;
  let refusal = '';
  let finish: string | undefined;
  let usage: Usage | undefined;
  let responseId: string | undefined;
  const calls = new Map<number, OpenCall>();

  for await (const chunk of stream) {
    if (!responseId && chunk.id) responseId = chunk.id;
    if (chunk.usage) usage = chatUsage(chunk.usage);
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (!choice) continue;
    const delta = choice.delta ?? {};
    const compat = delta as CompatDelta;
    const thinking = compat.reasoning_content ?? compat.reasoning;
    if (typeof thinking === 'string' && thinking) {
      reasoningField ??= typeof compat.reasoning_content === 'string' ? 'reasoning_content' : 'reasoning';
      reasoning += thinking;
      yield { type: 'reasoning_delta', delta: thinking };
    }
    if (typeof delta.content === 'string' && delta.content) {
      text += delta.content;
      yield { type: 'text_delta', delta: delta.content };
    }
    if (typeof delta.refusal === 'string' && delta.refusal) {
      refusal += delta.refusal;
      yield { type: 'text_delta', delta: delta.refusal };
    }
    for (const piece of delta.tool_calls ?? []) {
      const index = piece.index ?? calls.size;
      let call = calls.get(index);
      if (!call) {
        const name = piece.function?.name;
        if (!name) throw badResponse(ctx, `tool call ${index} began without a function name`);
        // Some servers send no id: make one that stays unique across the steps of a history.
        call = { id: piece.id || `call_${responseId ?? 'x'}_${++unnamedCalls}`, name, args: '' };
        calls.set(index, call);
        yield { type: 'tool_call_start', id: call.id, name: call.name };
      }
      const args = piece.function?.arguments;
      if (args) {
        call.args += args;
        yield { type: 'tool_call_delta', id: call.id, delta: args };
      }
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  if (signal.aborted) throw abortedError(ctx.provider, ctx.label ?? ctx.provider);
  if (finish === undefined) throw truncatedStream(ctx, 'its finish_reason');

  const content: AssistantContent[] = [];
  if (reasoning) {
    const data = { field: reasoningField ?? 'reasoning' };
    content.push({
      type: 'reasoning',
      text: reasoning,
      opaque: { provider: settings.provider, model: settings.model, data },
    });
  }
  if (text || refusal) content.push({ type: 'text', text: text + refusal });
  const ordered = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, call]) => call);
  for (const call of ordered) {
    yield { type: 'tool_call_end', id: call.id };
    content.push(toolCallPart(call.id, call.name, call.args));
  }
  const stopReason = chatStopReason(finish, ordered.length > 0, refusal !== '' && text === '');
  const finalUsage = usage ?? usageOf({});
  if (usage) yield { type: 'usage', usage };
  const message: AssistantMessage = {
    role: 'assistant',
    content,
    provider: settings.provider,
    model: settings.model,
    stopReason,
    usage: finalUsage,
    ...(responseId ? { responseId } : {}),
  };
  yield { type: 'done', message, stopReason };
}

function chatStopReason(finish: string, hasCalls: boolean, refused: boolean): ModelStopReason {
  return refused ? 'refusal' : finishStopReason(finish, hasCalls);
}

function chatUsage(raw: OpenAI.CompletionUsage): Usage {
  const prompt = raw.prompt_tokens ?? 0;
  const cached = raw.prompt_tokens_details?.cached_tokens ?? (raw as CompatUsage).prompt_cache_hit_tokens ?? 0;
  return usageOf({
    input: prompt - cached,
    output: raw.completion_tokens ?? 0,
    cacheRead: cached,
    reasoning: raw.completion_tokens_details?.reasoning_tokens ?? 0,
  });
}
