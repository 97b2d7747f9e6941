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

/** Plain text in a message or a tool result. */
export interface TextPart {
  type: 'text';
  text: string;
}

/** Where an image's bytes are: inline as base64 with their media type, or at a URL the provider fetches. */
export type ImageSource = { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string };

/** An image in a user message or a tool result (a screenshot, a chart), for models that read images. */
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

/**
 * A tool call the model asked for in its answer; the agent runs it and answers with a `ToolResultPart` of the same
 * `id`.
 */
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

/** What a tool result may hold: text and images. */
export type ToolResultContent = TextPart | ImagePart;

/**
 * A tool's answer to one call, as the model sees it: `isError` tells the model the call failed (a thrown error, a
 * refusal, a timeout) so that it can try another way.
 */
export interface ToolResultPart {
  type: 'tool_result';
  toolCallId: string;
  toolName: string;
  content: ToolResultContent[];
  isError: boolean;
  /** For observers (UIs, logs); adapters never send it to a model. */
  details?: JsonValue;
}

/** What a user message may hold: text and images. */
export type UserContent = TextPart | ImagePart;
/** What a model's answer may hold: text, reasoning, tool calls and provider-only blocks. */
export type AssistantContent = TextPart | ReasoningPart | ToolCallPart | OpaquePart;

/**
 * Where a user-role message came from: the caller, a steer into a running turn, a child's notification, output
 * feedback, or the note that stands for compacted messages (only ever in what is sent, never stored).
 */
export type UserMessageSource = 'prompt' | 'steer' | 'notification' | 'feedback' | 'compaction';

/**
 * A user-role message: the caller's prompt, a steer, a subagent's notification or output feedback (`source` says
 * which).
 */
export interface UserMessage {
  role: 'user';
  content: UserContent[];
  source?: UserMessageSource;
}

/**
 * Why the model stopped answering, as its provider said: `tool_calls` means it waits for tool results; `length` means
 * it hit its output limit.
 */
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

/**
 * A model's answer as it joins the history: its content, which provider and model wrote it, why it stopped and the
 * tokens it used.
 */
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

/**
 * One entry of an agent's history: what the user (or a steer, a notification) said, what the model answered, and the
 * results of its tool calls.
 */
export type Message = UserMessage | AssistantMessage | ToolMessage;

/** A `Usage` of zero tokens, to add others to with `addUsage`. */
export function emptyUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
}

/** Adds `add`'s token counts into `into` and returns `into`: a running total of a turn, an agent or a tree. */
export function addUsage(into: Usage, add: Usage): Usage {
  into.input += add.input;
  into.output += add.output;
  into.cacheRead += add.cacheRead;
  into.cacheWrite += add.cacheWrite;
  into.reasoning += add.reasoning;
  return into;
}

/** Builds a user message from text or content parts, as `agent.prompt` does with its input. */
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

/** The tool calls of an assistant message, in the order the model made them. */
export function toolCallsOf(message: AssistantMessage): ToolCallPart[] {
  return message.content.filter((part): part is ToolCallPart => part.type === 'tool_call');
}

/** A tool result that is one text (built as one literal: tool results are made on every call). */
export function textResult(call: { id: string; name: string }, text: string, isError = false): ToolResultPart {
  return { type: 'tool_result', toolCallId: call.id, toolName: call.name, content: [{ type: 'text', text }], isError };
}

/**
 * A failed tool result of one text, as the model sees a tool that threw: for hosts and middleware that answer a call
 * themselves.
 */
export function errorResult(call: { id: string; name: string }, text: string): ToolResultPart {
  return textResult(call, text, true);
}
