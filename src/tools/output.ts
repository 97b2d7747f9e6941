import type { JsonValue, ToolCallPart, ToolResultContent, ToolResultPart } from '../protocol/index.js';
import type { ToolOutput } from './define-tool.js';

export interface NormalizedOutput {
  result: ToolResultPart;
  terminate: boolean;
}

/** Turns whatever a tool returned into a tool result part. */
export function toToolResult(call: ToolCallPart, output: ToolOutput | unknown): NormalizedOutput {
  const base = { type: 'tool_result' as const, toolCallId: call.id, toolName: call.name };
  if (typeof output === 'string') {
    return { result: { ...base, content: [{ type: 'text', text: output }], isError: false }, terminate: false };
  }
  if (isStructured(output)) {
    const content: ToolResultContent[] =
      typeof output.content === 'string' ? [{ type: 'text', text: output.content }] : output.content;
    const result: ToolResultPart = { ...base, content, isError: output.isError === true };
    if (output.details !== undefined) result.details = output.details as JsonValue;
    return { result, terminate: output.terminate === true };
  }
  const text = output === undefined ? '' : JSON.stringify(output);
  return { result: { ...base, content: [{ type: 'text', text }], isError: false }, terminate: false };
}

function isStructured(output: unknown): output is Exclude<ToolOutput, string> {
  if (typeof output !== 'object' || output === null || !('content' in output)) return false;
  const content = (output as { content: unknown }).content;
  return typeof content === 'string' || Array.isArray(content);
}

export function describeThrown(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
