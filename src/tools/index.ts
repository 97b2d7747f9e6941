export { groupCalls } from './batching.js';
export {
  type AnyTool,
  defineTool,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
} from './define-tool.js';
export { intentOf } from './intent.js';
export { jsonSchema } from './json-schema.js';
export {
  cacheByArgs,
  logCalls,
  retryOnError,
  type ToolLogEntry,
  type ToolMiddleware,
  ToolTimeoutError,
  timeoutAfter,
  withMiddleware,
} from './middleware.js';
export { type NormalizedOutput, toToolResult } from './output.js';
export {
  describeIssues,
  type OutputSpec,
  outputSpec,
  ToolDefinitionError,
  ToolRegistry,
} from './registry.js';
export { callKey, dedupeCalls, RepetitionCounter } from './repetition.js';
export { ResultBudget } from './result-budget.js';
export { checkSkills, loadSkills, type Skill, skillsIndex, skillTool } from './skills.js';
export { parseStructuredAnswer } from './structured.js';
export { type FinishedOutput, type ToolResultOptions, ToolResults } from './tool-results.js';
