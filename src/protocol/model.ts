import type { ModelError } from './errors.js';
import type { JsonObject } from './json.js';
import type { AssistantMessage, Message, ModelStopReason, Usage } from './messages.js';

/** A tool as a model sees it: name, description and the JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonObject;
}

/** Whether the model may, must not or must call a tool, or must call the named one. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };
/** How hard a reasoning model should think before it answers, for providers that let the caller choose. */
export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';

/**
 * What the runtime asks a `Model` for at each step: the system prompt, the history, the tools and the sampling options.
 */
export interface ModelRequest {
  system?: string;
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  maxTokens?: number;
  temperature?: number;
  toolChoice?: ToolChoice;
  reasoning?: { effort: ReasoningEffort };
  /** JSON Schema the final answer must match; adapters use the API's native structured output where it has one. */
  outputSchema?: { name: string; schema: JsonObject };
}

/**
 * What a `Model` streams back: text and reasoning as they arrive, tool calls being written, token usage, and `done`
 * with the whole answer.
 */
export type ModelEvent =
  | { type: 'text_delta'; delta: string }
  | { type: 'reasoning_delta'; delta: string }
  | { type: 'tool_call_start'; id: string; name: string }
  | { type: 'tool_call_delta'; id: string; delta: string }
  | { type: 'tool_call_end'; id: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'done'; message: AssistantMessage; stopReason: ModelStopReason };

/**
 * A model is anything that turns a request into a stream of events ending in `done`.
 * Failures are thrown as {@link ModelError}; retries are the runtime's job, not the model's.
 */
export interface Model {
  readonly id: string;
  readonly provider: string;
  /**
   * Streams the model's answer to `request`, ending in `done`; stops early when `signal` aborts. Throws a `ModelError`
   * on failure.
   */
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent>;
}

export type { ModelError };
