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
export { jsonSchema } from './json-schema.js';
export {
  type CacheOptions,
  cacheByArgs,
  logCalls,
  retryOnError,
  type ToolExecute,
  type ToolLogEntry,
  type ToolMiddleware,
  type ToolRetryOptions,
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
export { callKey, dedupeCalls, RepetitionCounter, type RepetitionLadder } from './repetition.js';
export { ResultBudget } from './result-budget.js';
export { checkSkills, loadSkills, type Skill, skillsIndex, skillTool } from './skills.js';
export { parseStructuredAnswer } from './structured.js';
export { type FinishedOutput, type ToolResultOptions, ToolResults } from './tool-results.js';
