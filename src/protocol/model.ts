import type { ModelError } from './errors.js';
import type { JsonObject } from './json.js';
import type { AssistantMessage, Message, ModelStopReason, Usage } from './messages.js';

/** A tool as a model sees it: name, description and the JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonObject;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };
export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';

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
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent>;
}

export type { ModelError };
