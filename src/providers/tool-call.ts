import type { JsonObject, ToolCallPart } from '../protocol/index.js';

/**
 * Builds a tool call from its complete argument text. Broken JSON is kept (with the parse error) rather than
 * thrown, so the agent can answer that one call with an error result while the rest of the message stands.
 * Empty text means no arguments: Anthropic sends "" for a tool without input.
 */
export function toolCallPart(id: string, name: string, text: string): ToolCallPart {
  if (text.trim() === '') return { type: 'tool_call', id, name, arguments: {} };
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return { type: 'tool_call', id, name, arguments: parsed as JsonObject };
    }
    return { type: 'tool_call', id, name, arguments: {}, invalidArguments: { text, error: 'not a JSON object' } };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { type: 'tool_call', id, name, arguments: {}, invalidArguments: { text, error: reason } };
  }
}
