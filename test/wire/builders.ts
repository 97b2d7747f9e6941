/**
 * Scripted turns in each API's real wire shape (modelled on the recorded streams in ../shared/fixtures):
 * Chat Completions chunks with `usage: null` and a final usage chunk with empty `choices`; Responses events
 * with names, `sequence_number`s, item ids `fc_…` and call ids `call_…`; Anthropic events with `ping`s between
 * a block's start and its first delta, cumulative `message_delta` usage, signatures in one `signature_delta`.
 */
import type { SseEvent, WireReply } from './server.js';

const json = (value: unknown) => JSON.stringify(value);

/** Splits text into pieces of `size` characters (anywhere, mid-token included). */
export function pieces(text: string, size: number): string[] {
  if (size <= 0 || text.length <= size) return text ? [text] : [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

// ---------------------------------------------------------------- Chat Completions

export interface ChatTurn {
  id?: string;
  model?: string;
  text?: string;
  refusal?: string;
  reasoning?: string;
  reasoningField?: 'reasoning_content' | 'reasoning';
  toolCalls?: { id: string; name: string; args: string }[];
  /** Characters per argument / text fragment (default 3: splits mid-token). */
  split?: number;
  finish?: string | null;
  usage?: { prompt: number; completion: number; cached?: number; reasoning?: number };
  /** DeepSeek / OpenRouter style: usage rides on the finish chunk instead of a separate chunk. */
  usageOnFinish?: boolean;
}

export function chatEvents(turn: ChatTurn): SseEvent[] {
  const id = turn.id ?? 'chatcmpl-test1';
  const model = turn.model ?? 'gpt-test-2026';
  const size = turn.split ?? 3;
  const chunk = (delta: unknown, finish: string | null = null, usage: unknown = null, choices = true) =>
    ({
      data: json({
        id,
        object: 'chat.completion.chunk',
        created: 1782321896,
        model,
        system_fingerprint: 'fp_test',
        choices: choices ? [{ index: 0, delta, logprobs: null, finish_reason: finish }] : [],
        usage,
      }),
    }) satisfies SseEvent;
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '', refusal: null })];
  const field = turn.reasoningField ?? 'reasoning_content';
  for (const piece of pieces(turn.reasoning ?? '', size)) events.push(chunk({ content: null, [field]: piece }));
  for (const piece of pieces(turn.text ?? '', size)) events.push(chunk({ content: piece }));
  for (const piece of pieces(turn.refusal ?? '', size)) events.push(chunk({ content: null, refusal: piece }));
  (turn.toolCalls ?? []).forEach((call, index) => {
    events.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of pieces(call.args, size)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  const usage = turn.usage
    ? {
        prompt_tokens: turn.usage.prompt,
        completion_tokens: turn.usage.completion,
        total_tokens: turn.usage.prompt + turn.usage.completion,
        prompt_tokens_details: { cached_tokens: turn.usage.cached ?? 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: turn.usage.reasoning ?? 0, audio_tokens: 0 },
      }
    : null;
  const finish = turn.finish === undefined ? (turn.toolCalls?.length ? 'tool_calls' : 'stop') : turn.finish;
  if (finish !== null) events.push(chunk({}, finish, turn.usageOnFinish ? usage : null));
  if (usage && !turn.usageOnFinish) events.push(chunk(undefined, null, usage, false));
  return events;
}

export function chatReply(turn: ChatTurn, extra: Partial<Extract<WireReply, { kind: 'sse' }>> = {}): WireReply {
  return { kind: 'sse', events: chatEvents(turn), done: true, split: true, ...extra };
}

// ---------------------------------------------------------------- Responses

export interface ResponsesTurn {
  id?: string;
  model?: string;
  reasoning?: { id?: string; summary: string[]; encrypted?: string };
  text?: string;
  refusal?: string;
  toolCalls?: { itemId?: string; callId: string; name: string; args: string }[];
  split?: number;
  status?: 'completed' | 'incomplete';
  incompleteReason?: 'max_output_tokens' | 'content_filter';
  usage?: { input: number; output: number; cached?: number; reasoning?: number };
}

export function responsesEvents(turn: ResponsesTurn): SseEvent[] {
  const id = turn.id ?? 'resp_test1';
  const model = turn.model ?? 'gpt-test-2026';
  const size = turn.split ?? 3;
  let seq = 0;
  const events: SseEvent[] = [];
  const emit = (type: string, body: Record<string, unknown>) =>
    events.push({ event: type, data: json({ type, ...body, sequence_number: seq++ }) });
  const response = (status: string, output: unknown[], usage: unknown) => ({
    id,
    object: 'response',
    created_at: 1782321745,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: turn.incompleteReason ?? 'max_output_tokens' } : null,
    model,
    output,
    usage,
  });
  emit('response.created', { response: response('in_progress', [], null) });
  emit('response.in_progress', { response: response('in_progress', [], null) });
  const output: unknown[] = [];
  let index = 0;
  if (turn.reasoning) {
    const rid = turn.reasoning.id ?? 'rs_test1';
    const placeholder = turn.reasoning.encrypted ? 'gAAAA-placeholder' : undefined;
    emit('response.output_item.added', {
      item: { id: rid, type: 'reasoning', summary: [], ...(placeholder ? { encrypted_content: placeholder } : {}) },
      output_index: index,
    });
    turn.reasoning.summary.forEach((text, summary_index) => {
      emit('response.reasoning_summary_part.added', {
        item_id: rid,
        output_index: index,
        summary_index,
        part: { type: 'summary_text', text: '' },
      });
      for (const delta of pieces(text, size * 4)) {
        emit('response.reasoning_summary_text.delta', { item_id: rid, output_index: index, summary_index, delta });
      }
      emit('response.reasoning_summary_text.done', { item_id: rid, output_index: index, summary_index, text });
      emit('response.reasoning_summary_part.done', {
        item_id: rid,
        output_index: index,
        summary_index,
        part: { type: 'summary_text', text },
      });
    });
    const item = {
      id: rid,
      type: 'reasoning',
      summary: turn.reasoning.summary.map((text) => ({ type: 'summary_text', text })),
      ...(turn.reasoning.encrypted ? { encrypted_content: turn.reasoning.encrypted } : {}),
    };
    emit('response.output_item.done', { item, output_index: index });
    output.push(item);
    index++;
  }
  if (turn.text !== undefined || turn.refusal !== undefined) {
    const mid = 'msg_test1';
    emit('response.output_item.added', {
      item: { id: mid, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
      output_index: index,
    });
    const kind = turn.refusal !== undefined ? 'refusal' : 'output_text';
    const body = turn.refusal ?? turn.text ?? '';
    emit('response.content_part.added', {
      item_id: mid,
      output_index: index,
      content_index: 0,
      part: kind === 'refusal' ? { type: 'refusal', refusal: '' } : { type: 'output_text', annotations: [], text: '' },
    });
    for (const delta of pieces(body, size)) {
      emit(kind === 'refusal' ? 'response.refusal.delta' : 'response.output_text.delta', {
        item_id: mid,
        output_index: index,
        content_index: 0,
        delta,
        ...(kind === 'refusal' ? {} : { logprobs: [] }),
      });
    }
    const part =
      kind === 'refusal' ? { type: 'refusal', refusal: body } : { type: 'output_text', annotations: [], text: body };
    emit('response.content_part.done', { item_id: mid, output_index: index, content_index: 0, part });
    const item = { id: mid, type: 'message', status: 'completed', content: [part], role: 'assistant' };
    emit('response.output_item.done', { item, output_index: index });
    output.push(item);
    index++;
  }
  (turn.toolCalls ?? []).forEach((call, n) => {
    const itemId = call.itemId ?? `fc_test${n + 1}`;
    emit('response.output_item.added', {
      item: {
        id: itemId,
        type: 'function_call',
        status: 'in_progress',
        arguments: '',
        call_id: call.callId,
        name: call.name,
      },
      output_index: index,
    });
    for (const delta of pieces(call.args, size)) {
      emit('response.function_call_arguments.delta', { item_id: itemId, output_index: index, delta });
    }
    emit('response.function_call_arguments.done', { item_id: itemId, output_index: index, arguments: call.args });
    const item = {
      id: itemId,
      type: 'function_call',
      status: 'completed',
      arguments: call.args,
      call_id: call.callId,
      name: call.name,
    };
    emit('response.output_item.done', { item, output_index: index });
    output.push(item);
    index++;
  });
  const usage = turn.usage
    ? {
        input_tokens: turn.usage.input,
        input_tokens_details: { cached_tokens: turn.usage.cached ?? 0 },
        output_tokens: turn.usage.output,
        output_tokens_details: { reasoning_tokens: turn.usage.reasoning ?? 0 },
        total_tokens: turn.usage.input + turn.usage.output,
      }
    : null;
  const status = turn.status ?? 'completed';
  emit(status === 'completed' ? 'response.completed' : 'response.incomplete', {
    response: response(status, output, usage),
  });
  return events;
}

export function responsesReply(
  turn: ResponsesTurn,
  extra: Partial<Extract<WireReply, { kind: 'sse' }>> = {},
): WireReply {
  return { kind: 'sse', events: responsesEvents(turn), split: true, ...extra };
}

// ---------------------------------------------------------------- Anthropic Messages

export interface AnthropicTurn {
  id?: string;
  model?: string;
  thinking?: { text: string; signature: string };
  redacted?: string[];
  text?: string;
  toolUses?: { id: string; name: string; input: string }[];
  /** Server blocks as they come whole in content_block_start (e.g. web_search_tool_result). */
  serverBlocks?: Record<string, unknown>[];
  split?: number;
  stopReason?: string;
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
  /** Leaves the last tool_use block without content_block_stop (max_tokens mid-input). */
  cutLastToolUse?: boolean;
}

export function anthropicEvents(turn: AnthropicTurn): SseEvent[] {
  const events: SseEvent[] = [];
  // Payloads carry whitespace padding as the service's do.
  const emit = (type: string, body: Record<string, unknown>) =>
    events.push({ event: type, data: `${json({ type, ...body }).slice(0, -1)}      }` });
  const size = turn.split ?? 3;
  const usage = turn.usage ?? { input: 10, output: 5 };
  emit('message_start', {
    message: {
      model: turn.model ?? 'claude-test-4',
      id: turn.id ?? 'msg_test1',
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        cache_creation_input_tokens: usage.cacheWrite ?? 0,
        cache_read_input_tokens: usage.cacheRead ?? 0,
        output_tokens: 1,
      },
    },
  });
  let index = 0;
  let first = true;
  const ping = () => {
    if (first) emit('ping', {});
    first = false;
  };
  if (turn.thinking) {
    emit('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    ping();
    for (const thinking of pieces(turn.thinking.text, size * 4)) {
      emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } });
    }
    emit('content_block_delta', { index, delta: { type: 'signature_delta', signature: turn.thinking.signature } });
    emit('content_block_stop', { index });
    index++;
  }
  for (const data of turn.redacted ?? []) {
    emit('content_block_start', { index, content_block: { type: 'redacted_thinking', data } });
    ping();
    emit('content_block_stop', { index });
    index++;
  }
  for (const block of turn.serverBlocks ?? []) {
    emit('content_block_start', { index, content_block: block });
    ping();
    emit('content_block_stop', { index });
    index++;
  }
  if (turn.text) {
    emit('content_block_start', { index, content_block: { type: 'text', text: '' } });
    ping();
    for (const text of pieces(turn.text, size))
      emit('content_block_delta', { index, delta: { type: 'text_delta', text } });
    emit('content_block_stop', { index });
    index++;
  }
  const uses = turn.toolUses ?? [];
  uses.forEach((use, n) => {
    emit('content_block_start', { index, content_block: { type: 'tool_use', id: use.id, name: use.name, input: {} } });
    ping();
    const parts = use.input === '' ? [''] : pieces(use.input, size);
    for (const partial_json of parts)
      emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } });
    if (!(turn.cutLastToolUse && n === uses.length - 1)) emit('content_block_stop', { index });
    index++;
  });
  emit('message_delta', {
    delta: { stop_reason: turn.stopReason ?? (uses.length ? 'tool_use' : 'end_turn'), stop_sequence: null },
    usage: {
      input_tokens: usage.input,
      cache_creation_input_tokens: usage.cacheWrite ?? 0,
      cache_read_input_tokens: usage.cacheRead ?? 0,
      output_tokens: usage.output,
    },
  });
  emit('message_stop', {});
  return events;
}

export function anthropicReply(
  turn: AnthropicTurn,
  extra: Partial<Extract<WireReply, { kind: 'sse' }>> = {},
): WireReply {
  return {
    kind: 'sse',
    events: anthropicEvents(turn),
    split: true,
    headers: { 'request-id': 'req_stream1' },
    ...extra,
  };
}

// ---------------------------------------------------------------- errors, as the services send them

export function openaiError(
  status: number,
  error: { message: string; type?: string; code?: string | number | null; param?: string | null },
  headers: Record<string, string> = {},
): WireReply {
  return {
    kind: 'json',
    status,
    body: { error: { type: null, code: null, param: null, ...error } },
    headers: { 'x-request-id': `req_openai_${status}`, ...headers },
  };
}

export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): WireReply {
  const requestId = `req_anthropic_${status}`;
  return {
    kind: 'json',
    status,
    body: { type: 'error', error: { type, message }, request_id: requestId },
    headers: { 'request-id': requestId, ...headers },
  };
}
