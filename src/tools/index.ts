export { groupCalls } from './batching.js';
export {
  type AnyTool,
  defineTool,
  type ExecutionMode,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
} from './define-tool.js';
export { intentOf } from './intent.js';
export { type NormalizedOutput, toToolResult } from './output.js';
export {
  describeIssues,
  type OutputSpec,
  outputSpec,
  ToolDefinitionError,
  ToolRegistry,
} from './registry.js';
export { parseStructuredAnswer } from './structured.js';
