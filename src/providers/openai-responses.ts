// Over 400 lines: one provider's whole mapping, the request body and the stream of events alike, read against the
// Responses API top to bottom; the two halves share its item types.
import type {
  FunctionTool,
  ResponseCreateParamsStreaming,
  ResponseInputContent,
  ResponseInputItem,
  ResponseStreamEvent,
  ResponseUsage,
  ToolChoiceFunction,
  ToolChoiceOptions,
} from 'openai/resources/responses/responses';
import type {
  AssistantContent,
  AssistantMessage,
  JsonObject,
  JsonValue,
  ModelEvent,
  ModelRequest,
  ModelStopReason,
  ReasoningEffort,
  Usage,
} from '../protocol/index.js';
import { type ClassifyContext, errorFromBody, truncatedStream } from './http-errors.js';
import {
  abortedError,
  imageUrl,
  sameOrigin,
  strictSchema,
  toolResultImages,
  toolResultText,
  toolSchema,
  usageOf,
} from './shared.js';
import { toolCallPart } from './tool-call.js';

export interface ResponsesSettings {
  provider: string;
  model: string;
  /**
   * `false`: nothing is kept on OpenAI's side; reasoning comes back encrypted (`include:
   * ["reasoning.encrypted_content"]`) and is replayed from the history, so a JSON round trip of the messages
   * still replays. Unset: the API default (stored), and reasoning items are replayed by id.
   */
  store?: boolean;
  /** Reasoning effort used when the request names none. */
  reasoning?: ReasoningEffort;
  /** Reasoning summaries to ask for when reasoning is on (default `auto`; `false` for none). */
  reasoningSummary: 'auto' | 'concise' | 'detailed' | false;
  extraBody?: Record<string, unknown>;
}

/**
 * The Responses request for a ModelRequest.
 * Mapped: system (`instructions`), messages (as input items), images (`input_image`), tools (function tools,
 * `strict: false` unless the schema is strict-compatible: the API defaults `strict` to true, which rejects
 * optional fields), toolChoice, maxTokens (`max_output_tokens`), temperature, reasoning effort (`reasoning`,
 * only when asked, with a summary), outputSchema (`text.format` json_schema), `store`.
 * Replayed only to the same provider and model: reasoning items (when they can be resolved: encrypted
 * content, or stored), other provider items (opaque parts). Reasoning parts of other models are dropped.
 * Ignored: `isError` of tool results (Responses has no such flag; the result text says it).
 */
export function responsesRequestBody(
  request: ModelRequest,
  settings: ResponsesSettings,
): ResponseCreateParamsStreaming {
  const input: ResponseInputItem[] = [];
  for (const message of request.messages) {
    if (message.role === 'user') {
      input.push({
        role: 'user',
        content: message.content.map(
          (part): ResponseInputContent =>
            part.type === 'text'
              ? { type: 'input_text', text: part.text }
              : { type: 'input_image', image_url: imageUrl(part), detail: 'auto' },
        ),
      });
    } else if (message.role === 'assistant') {
      let text = '';
      const flush = () => {
        if (text) input.push({ role: 'assistant', content: text });
        text = '';
      };
      for (const part of message.content) {
        if (part.type === 'text') {
          text += part.text;
          continue;
        }
        if (part.type === 'reasoning') {
          const item = replayableReasoning(part.opaque, settings);
          if (item) {
            flush();
            input.push(item);
          }
        } else if (part.type === 'tool_call') {
          flush();
          input.push({
            type: 'function_call',
            call_id: part.id,
            name: part.name,
            arguments: part.invalidArguments ? part.invalidArguments.text : JSON.stringify(part.arguments),
          });
        } else if (part.type === 'opaque' && sameOrigin(part, settings.provider, settings.model)) {
          flush();
          input.push(part.data as unknown as ResponseInputItem);
        }
      }
      flush();
    } else {
      for (const part of message.content) {
        const images = toolResultImages(part);
        const text = toolResultText(part);
        input.push({
          type: 'function_call_output',
          call_id: part.toolCallId,
          output:
            images.length === 0
              ? text
              : [
                  ...(text ? [{ type: 'input_text' as const, text }] : []),
                  ...images.map((image) => ({
                    type: 'input_image' as const,
                    image_url: imageUrl(image),
                    detail: 'auto' as const,
                  })),
                ],
        });
      }
    }
  }

  const body: ResponseCreateParamsStreaming = { model: settings.model, input, stream: true };
  if (request.system) body.instructions = request.system;
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool): FunctionTool => {
      const parameters = toolSchema(tool.inputSchema);
      const strict = strictSchema(parameters);
      return {
        type: 'function',
        name: tool.name,
        description: tool.description,
        parameters: strict ?? parameters,
        strict: strict !== undefined,
      };
    });
    if (request.toolChoice) body.tool_choice = responsesToolChoice(request.toolChoice);
  }
  if (request.maxTokens !== undefined) body.max_output_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  const effort = request.reasoning?.effort ?? settings.reasoning;
  if (effort) {
    body.reasoning = { effort, ...(settings.reasoningSummary ? { summary: settings.reasoningSummary } : {}) };
  }
  if (settings.store !== undefined) body.store = settings.store;
  if (settings.store === false) body.include = ['reasoning.encrypted_content'];
  if (request.outputSchema) {
    const schema = toolSchema(request.outputSchema.schema);
    const strict = strictSchema(schema);
    body.text = {
      format: {
        type: 'json_schema',
        name: request.outputSchema.name,
        schema: strict ?? schema,
        strict: strict !== undefined,
      },
    };
  }
  return settings.extraBody ? ({ ...body, ...settings.extraBody } as ResponseCreateParamsStreaming) : body;
}

function responsesToolChoice(choice: NonNullable<ModelRequest['toolChoice']>): ToolChoiceOptions | ToolChoiceFunction {
  if (typeof choice === 'string') return choice;
  return { type: 'function', name: choice.name };
}

/** A stored reasoning item, as it can go back as input; undefined when it cannot be resolved by the API. */
function replayableReasoning(
  opaque: { provider: string; model: string; data: JsonValue } | undefined,
  settings: ResponsesSettings,
): ResponseInputItem | undefined {
  if (!opaque || !sameOrigin(opaque, settings.provider, settings.model)) return undefined;
  const data = opaque.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data) || typeof data.id !== 'string') return undefined;
  const encrypted = typeof data.encrypted_content === 'string' ? data.encrypted_content : undefined;
  // With store: false the API cannot look a bare `rs_…` id up ("Items are not persisted when store is false").
  if (!encrypted && settings.store === false) return undefined;
  const summary = Array.isArray(data.summary) ? data.summary : [];
  return {
    type: 'reasoning',
    id: data.id,
    summary: summary as unknown as { type: 'summary_text'; text: string }[],
    ...(encrypted ? { encrypted_content: encrypted } : {}),
  };
}

interface ItemState {
  index: number;
  type: string;
  id: string;
  text: string;
  refusal: string;
  reasoning: string;
  callId: string;
  name: string;
  args: string;
  done?: Record<string, unknown>;
  /** Its tool_call_end has been emitted. */
  closed?: boolean;
}

/**
 * Turns a Responses event stream into ModelEvents. Items are kept by their id (argument deltas name the item
 * `fc_…`, while the tool result must echo its `call_…`) and assembled in `output_index` order. Reasoning keeps
 * the item from `output_item.done` (where `encrypted_content` is final; the copy on `output_item.added` is a
 * placeholder). The stream must end in `response.completed` or `response.incomplete`; `response.failed` and
 * `error` events become ModelErrors.
 */
export async function* responsesEvents(
  stream: AsyncIterable<ResponseStreamEvent>,
  settings: Pick<ResponsesSettings, 'provider' | 'model'>,
  ctx: ClassifyContext,
  signal: AbortSignal,
): AsyncGenerator<ModelEvent> {
  const items = new Map<string, ItemState>();
  let responseId: string | undefined;
  let terminal: { status: string; reason?: string; usage?: ResponseUsage | null; output?: unknown[] } | undefined;

  const item = (id: string | undefined, index?: number): ItemState => {
    const key = id ?? `#${index ?? 0}`;
    let state = items.get(key);
    if (!state) {
      state = {
        index: index ?? items.size,
        type: 'message',
        id: key,
        text: '',
        refusal: '',
        reasoning: '',
        callId: '',
        name: '',
        args: '',
      };
      items.set(key, state);
    }
    return state;
  };

  for await (const event of stream) {
    if (terminal) continue;
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
        responseId ??= event.response?.id;
        break;
      case 'response.output_item.added': {
        const added = event.item as unknown as Record<string, unknown>;
        const state = item(added.id as string | undefined, event.output_index);
        state.index = event.output_index;
        state.type = String(added.type);
        if (state.type === 'function_call') {
          state.callId = String(added.call_id ?? state.id);
          state.name = String(added.name ?? '');
          yield { type: 'tool_call_start', id: state.callId, name: state.name };
        }
        break;
      }
      case 'response.output_text.delta': {
        item(event.item_id, event.output_index).text += event.delta;
        yield { type: 'text_delta', delta: event.delta };
        break;
      }
      case 'response.refusal.delta': {
        item(event.item_id, event.output_index).refusal += event.delta;
        yield { type: 'text_delta', delta: event.delta };
        break;
      }
      case 'response.reasoning_summary_part.added': {
        const state = item(event.item_id, event.output_index);
        if (state.reasoning) {
          state.reasoning += '\n\n';
          yield { type: 'reasoning_delta', delta: '\n\n' };
        }
        break;
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        item(event.item_id, event.output_index).reasoning += event.delta;
        yield { type: 'reasoning_delta', delta: event.delta };
        break;
      }
      case 'response.function_call_arguments.delta': {
        const state = item(event.item_id, event.output_index);
        state.args += event.delta;
        yield { type: 'tool_call_delta', id: state.callId || state.id, delta: event.delta };
        break;
      }
      case 'response.function_call_arguments.done':
        item(event.item_id, event.output_index).args = event.arguments;
        break;
      case 'response.output_item.done': {
        const done = event.item as unknown as Record<string, unknown>;
        const state = item(done.id as string | undefined, event.output_index);
        state.done = done;
        if (state.type === 'function_call' || done.type === 'function_call') {
          state.type = 'function_call';
          if (typeof done.arguments === 'string') state.args = done.arguments;
          if (typeof done.call_id === 'string') state.callId = done.call_id;
          if (typeof done.name === 'string') state.name = done.name;
          state.closed = true;
          yield { type: 'tool_call_end', id: state.callId };
        } else {
          state.type = String(done.type ?? state.type);
        }
        break;
      }
      case 'response.completed':
      case 'response.incomplete':
        terminal = {
          status: event.response.status ?? (event.type === 'response.completed' ? 'completed' : 'incomplete'),
          reason: event.response.incomplete_details?.reason ?? undefined,
          usage: event.response.usage,
          output: event.response.output as unknown[],
        };
        responseId ??= event.response.id;
        break;
      case 'response.failed': {
        const failure = event.response?.error;
        throw errorFromBody(
          ctx,
          { error: failure ?? { message: 'the response failed' } },
          { fallbackMessage: 'the response failed' },
        );
      }
      case 'error': {
        // The documented flat shape; the real nested one (`{"error":{…}}`) is thrown by the SDK itself.
        const flat = event as unknown as Record<string, unknown>;
        throw errorFromBody(ctx, { error: { ...flat, type: flat.code ?? flat.type } });
      }
      default:
        break;
    }
  }
  if (signal.aborted) throw abortedError(ctx.provider, ctx.label ?? ctx.provider);
  if (!terminal) throw truncatedStream(ctx, 'response.completed');

  // `response.completed` carries the final items too: take encrypted reasoning from there when the item's own
  // `done` event was missed.
  for (const output of terminal.output ?? []) {
    const record = output as Record<string, unknown>;
    if (typeof record.id !== 'string') continue;
    const state = items.get(record.id);
    if (state && !state.done) state.done = record;
  }

  const content: AssistantContent[] = [];
  let calls = 0;
  let refused = false;
  let text = false;
  for (const state of [...items.values()].sort((a, b) => a.index - b.index)) {
    if (state.type === 'reasoning') {
      const done = state.done ?? {};
      const data: JsonObject = { type: 'reasoning', id: state.id, summary: (done.summary as JsonValue) ?? [] };
      if (typeof done.encrypted_content === 'string') data.encrypted_content = done.encrypted_content;
      const summaryText = state.reasoning || summaryOf(done.summary);
      content.push({
        type: 'reasoning',
        text: summaryText,
        opaque: { provider: settings.provider, model: settings.model, data },
      });
    } else if (state.type === 'function_call') {
      calls++;
      // A call cut off by the output limit never saw its output_item.done.
      if (!state.closed) yield { type: 'tool_call_end', id: state.callId };
      content.push(toolCallPart(state.callId, state.name, state.args));
    } else if (state.type === 'message') {
      const body = state.text + state.refusal;
      if (state.refusal) refused = true;
      if (state.text) text = true;
      if (body) content.push({ type: 'text', text: body });
    } else if (state.done) {
      content.push({
        type: 'opaque',
        kind: state.type,
        provider: settings.provider,
        model: settings.model,
        data: state.done as JsonValue,
      });
    }
  }

  let stopReason: ModelStopReason;
  if (terminal.status === 'incomplete') {
    stopReason = terminal.reason === 'content_filter' ? 'content_filter' : 'length';
  } else if (calls > 0) stopReason = 'tool_calls';
  else if (refused && !text) stopReason = 'refusal';
  else stopReason = 'stop';

  const usage = terminal.usage ? responsesUsage(terminal.usage) : usageOf({});
  if (terminal.usage) yield { type: 'usage', usage };
  const message: AssistantMessage = {
    role: 'assistant',
    content,
    provider: settings.provider,
    model: settings.model,
    stopReason,
    usage,
    ...(responseId ? { responseId } : {}),
  };
  yield { type: 'done', message, stopReason };
}

function summaryOf(summary: unknown): string {
  if (!Array.isArray(summary)) return '';
  return summary
    .map((part) => (typeof part === 'object' && part !== null && typeof part.text === 'string' ? part.text : ''))
    .filter(Boolean)
    .join('\n\n');
}

function responsesUsage(raw: ResponseUsage): Usage {
  const cached = raw.input_tokens_details?.cached_tokens ?? 0;
  return usageOf({
    input: (raw.input_tokens ?? 0) - cached,
    output: raw.output_tokens ?? 0,
    cacheRead: cached,
    reasoning: raw.output_tokens_details?.reasoning_tokens ?? 0,
  });
}
