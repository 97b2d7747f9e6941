import {
  contentPartProblem,
  describeThrown,
  errorResult,
  jsonCopy,
  redactToolResult,
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

const RETURN_HINT = 'return a string, { content: string | [{ type: "text", text }] }, or a JSON value';

/**
 * Turns whatever a tool returned into a tool result part. What cannot be a result (a symbol, a function, content
 * entries that are not content parts, a value JSON cannot carry) becomes an error result saying so, never a
 * malformed part marked as a success. `details` are copied JSON-safe (see `jsonCopy`): what the tool keeps
 * changing afterwards does not change the history. Each result is built as one literal: on this V8 a spread of a
 * shared base takes a slow path, and this runs for every call. Every known secret is cut out of the result (see
 * `redactToolResult`) before anything stores, emits or shows it.
 */
export function toToolResult(call: ToolCallPart, output: ToolOutput | unknown): NormalizedOutput {
  const normalized = normalize(call, output);
  normalized.result = redactToolResult(normalized.result);
  return normalized;
}

function normalize(call: ToolCallPart, output: ToolOutput | unknown): NormalizedOutput {
  if (typeof output === 'string') return { result: textResult(call, output), terminate: false };
  if (isStructured(output)) {
    const content = contentOf(output.content);
    if (typeof content === 'string') return refused(call, content);
    const result: ToolResultPart = {
      type: 'tool_result',
      toolCallId: call.id,
      toolName: call.name,
      content,
      isError: output.isError === true,
    };
    if (output.details !== undefined) {
      const details = jsonCopy(output.details);
      if (details !== undefined) result.details = details;
    }
    return { result, terminate: output.terminate === true };
  }
  if (output === undefined) return { result: textResult(call, ''), terminate: false };
  if (typeof output === 'symbol' || typeof output === 'function') {
    return refused(call, `it returned a ${typeof output}, which cannot be sent to a model`);
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(output);
  } catch (error) {
    return refused(call, `it returned a value that is not JSON (${describeThrown(error)})`);
  }
  return { result: textResult(call, json ?? ''), terminate: false };
}

function refused(call: ToolCallPart, why: string): NormalizedOutput {
  return {
    result: errorResult(call, `Tool ${call.name} gave no usable result: ${why}; ${RETURN_HINT}.`),
    terminate: false,
  };
}

/** The content as result parts (copied, so the tool cannot change them later), or why it is not content. */
function contentOf(content: string | readonly unknown[]): ToolResultContent[] | string {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const parts: ToolResultContent[] = new Array(content.length);
  for (let i = 0; i < content.length; i++) {
    const part = content[i];
    const problem = contentPartProblem(part);
    if (problem) return `content[${i}] is ${problem}`;
    parts[i] = jsonCopy(part) as unknown as ToolResultContent;
  }
  return parts;
}

function isStructured(output: unknown): output is Exclude<ToolOutput, string> {
  if (typeof output !== 'object' || output === null || !('content' in output)) return false;
  const content = (output as { content: unknown }).content;
  return typeof content === 'string' || Array.isArray(content);
}

// structured.ts takes it from here.
export { describeThrown };
