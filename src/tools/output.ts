import {
  type JsonValue,
  type ToolCallPart,
  type ToolResultContent,
  type ToolResultPart,
  textResult,
} from '../protocol/index.js';
import type { ToolOutput } from './define-tool.js';

export interface NormalizedOutput {
  result: ToolResultPart;
  terminate: boolean;
}

/**
 * Turns whatever a tool returned into a tool result part. Each result is built as one literal: on this V8 a
 * spread of a shared base takes a slow path, and this runs for every call.
 */
export function toToolResult(call: ToolCallPart, output: ToolOutput | unknown): NormalizedOutput {
  if (typeof output === 'string') return { result: textResult(call, output), terminate: false };
  if (isStructured(output)) {
    const content: ToolResultContent[] =
      typeof output.content === 'string' ? [{ type: 'text', text: output.content }] : output.content;
    const result: ToolResultPart = {
      type: 'tool_result',
      toolCallId: call.id,
      toolName: call.name,
      content,
      isError: output.isError === true,
    };
    if (output.details !== undefined) result.details = output.details as JsonValue;
    return { result, terminate: output.terminate === true };
  }
  return { result: textResult(call, output === undefined ? '' : JSON.stringify(output)), terminate: false };
}

function isStructured(output: unknown): output is Exclude<ToolOutput, string> {
  if (typeof output !== 'object' || output === null || !('content' in output)) return false;
  const content = (output as { content: unknown }).content;
  return typeof content === 'string' || Array.isArray(content);
}

export { describeThrown } from '../protocol/index.js';
