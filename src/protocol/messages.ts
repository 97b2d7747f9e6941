import type { JsonObject, JsonValue } from './json.js';

/**
 * Provider-specific data that must be replayed verbatim, and only to the provider and model that made it
 * (thinking signatures, encrypted reasoning, redacted thinking, server tool blocks). Adapters drop it on the
 * way out to any other model.
 */
export interface ProviderData {
  provider: string;
  model: string;
  data: JsonValue;
}

export interface TextPart {
  type: 'text';
  text: string;
}

export type ImageSource = { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string };

export interface ImagePart {
  type: 'image';
  source: ImageSource;
}

/** Visible reasoning (a summary or thinking text); `opaque` holds what the provider needs to accept it back. */
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  opaque?: ProviderData;
}

export interface ToolCallPart {
  type: 'tool_call';
  /** The id the tool result must echo (OpenAI `call_id`, Anthropic `tool_use.id`). */
  id: string;
  name: string;
  /** Parsed arguments; `{}` when the model sent none or sent JSON that does not parse. */
  arguments: JsonObject;
  /** Set when the model's argument text was not a JSON object: the raw text and why it failed. */
  invalidArguments?: { text: string; error: string };
  opaque?: ProviderData;
}

/** A block only its own provider understands (redacted thinking, server tool use and results). */
export interface OpaquePart {
  type: 'opaque';
  kind: string;
  provider: string;
  model: string;
  data: JsonValue;
}

export type ToolResultContent = TextPart | ImagePart;

export interface ToolResultPart {
  type: 'tool_result';
  toolCallId: string;
  toolName: string;
  content: ToolResultContent[];
  isError: boolean;
  /** For observers (UIs, logs); adapters never send it to a model. */
  details?: JsonValue;
}

export type UserContent = TextPart | ImagePart;
export type AssistantContent = TextPart | ReasoningPart | ToolCallPart | OpaquePart;

/**
 * Where a user-role message came from: the caller, a steer into a running turn, a child's notification, output
 * feedback, or the note that stands for compacted messages (only ever in what is sent, never stored).
 */
export type UserMessageSource = 'prompt' | 'steer' | 'notification' | 'feedback' | 'compaction';

export interface UserMessage {
  role: 'user';
  content: UserContent[];
  source?: UserMessageSource;
}

export type ModelStopReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'refusal' | 'pause_turn';

/**
 * Tokens of one model call (or a sum of calls). `input` excludes cached tokens on every provider, so the whole
 * prompt is `input + cacheRead + cacheWrite`; `reasoning` is the part of `output` spent on reasoning.
 */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Where the provider reports it. */
  reasoning: number;
}

export interface AssistantMessage {
  role: 'assistant';
  content: AssistantContent[];
  provider: string;
  model: string;
  stopReason: ModelStopReason;
  usage: Usage;
  /** The provider's response id, where it gives one. */
  responseId?: string;
}

/** The results of one step's tool batch, in call order. */
export interface ToolMessage {
  role: 'tool';
  content: ToolResultPart[];
}

export type Message = UserMessage | AssistantMessage | ToolMessage;

export function emptyUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
}

export function addUsage(into: Usage, add: Usage): Usage {
  into.input += add.input;
  into.output += add.output;
  into.cacheRead += add.cacheRead;
  into.cacheWrite += add.cacheWrite;
  into.reasoning += add.reasoning;
  return into;
}

export function userMessage(input: string | UserContent[], source: UserMessageSource = 'prompt'): UserMessage {
  const content = typeof input === 'string' ? [{ type: 'text' as const, text: input }] : input;
  return { role: 'user', content, source };
}

/**
 * The text of a message, as a person reading the conversation would take it: a user or assistant message's text
 * parts, joined (reasoning, tool calls and images left out); a tool message's results, each one's text parts
 * joined, one result a line, in call order (an error result's text is its error). `""` for no message.
 *
 * @example
 * // In a scripted model's function form, the answer to a tool call is the last message of the request:
 * const model = scriptedModel((request) => {
 *   const last = request.messages.at(-1);
 *   if (last?.role === 'tool') return { text: `The tool said: ${textOf(last)}` };
 *   return { toolCalls: [{ name: 'get_weather', args: { city: 'Oslo' } }] };
 * });
 */
export function textOf(message: Message | undefined): string {
  if (!message) return '';
  if (message.role === 'tool') return message.content.map((result) => textOfParts(result.content)).join('\n');
  return textOfParts(message.content);
}

function textOfParts(parts: readonly (UserContent | AssistantContent)[]): string {
  let text = '';
  for (const part of parts) if (part.type === 'text') text += part.text;
  return text;
}

export function toolCallsOf(message: AssistantMessage): ToolCallPart[] {
  return message.content.filter((part): part is ToolCallPart => part.type === 'tool_call');
}

/** A tool result that is one text (built as one literal: tool results are made on every call). */
export function textResult(call: { id: string; name: string }, text: string, isError = false): ToolResultPart {
  return { type: 'tool_result', toolCallId: call.id, toolName: call.name, content: [{ type: 'text', text }], isError };
}

export function errorResult(call: { id: string; name: string }, text: string): ToolResultPart {
  return textResult(call, text, true);
}
