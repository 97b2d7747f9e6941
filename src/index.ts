/**
 * `troupe`: what a program calls to run agents, and the types it needs to write those calls, in groups:
 *
 * - agents and their turns: `createAgent`, `Agent`, `AgentConfig`, `AgentProfile`, `PromptInput`, `PromptOptions`,
 *   `RunResult`, the events (`AgentEvent`, `AgentEventType`, `AgentEventOf`) and messages (`Message`, `UserMessage`,
 *   `AssistantMessage`, `Usage`, `JsonValue`, `JsonObject`, `textOf`);
 * - supervisors: `createSupervisor`, `Supervisor`, `SupervisorConfig`, `SupervisionOptions`, `SubagentProfile`,
 *   `SwarmTask`, `SwarmOptions`, `TaskResult`;
 * - one-shot calls: `generate`, `streamText`, `GenerateRequest`, `GenerateResult`;
 * - sessions: `sessions`, `SessionManager`, `SessionsOptions`, `Session`, `JsonlStore`, `SqliteStore`, `Store`;
 * - models: `openai`, `anthropic`, `aiSdkModel` (any AI SDK provider), `scriptedModel` and their options, `Model`, `ModelRequest`, `ModelEvent`;
 * - tools: `defineTool` and its types, `jsonSchema`, `loadSkills`, the middleware (`withMiddleware`, `cacheByArgs`,
 *   `logCalls`, `retryOnError`, `timeoutAfter`);
 * - control: permissions (`PermissionsConfig`, `PermissionMode`, `Policy`, `PolicyAnswer`), `Hooks`,
 *   `BudgetLimits`, `guardrails`, `projectInstructions`;
 * - observing: `traceAgents`, `connectInspector`, `openWebSocketInspector`, `startInspectorServer`;
 * - the errors a caller catches.
 *
 * Hosts that run turns themselves (`troupe/restate`) import `troupe/host`; inspectors and tools that read the
 * statecharts import `troupe/machines`; tests import `troupe/testing`.
 *
 * @module troupe
 */

export { projectInstructions } from './context/index.js';
export { connectInspector, openWebSocketInspector, startInspectorServer } from './inspect/entry.js';
export { traceAgents } from './observe/otel.js';
export type { PermissionMode, Permissions, PermissionsConfig } from './permissions/index.js';
export { PermissionRuleError } from './permissions/index.js';
export type {
  AgentEvent,
  AgentEventOf,
  AgentEventType,
  AssistantMessage,
  BudgetLimits,
  FailureAction,
  FailureClass,
  JsonObject,
  JsonValue,
  Message,
  Model,
  ModelEvent,
  ModelRequest,
  RestartIntensity,
  StrategyOptions,
  SupervisionStrategy,
  Usage,
  UserMessage,
} from './protocol/index.js';
export {
  AgentFailedError,
  BudgetExhausted,
  CodedError,
  FAILURE_DEFAULTS,
  GuardrailTripped,
  HistoryError,
  HookFailed,
  MissingPeerError,
  ModelError,
  type ModelErrorCode,
  OutputValidationError,
  textOf,
} from './protocol/index.js';
export {
  type AiSdkOptions,
  type AnthropicOptions,
  aiSdkModel,
  anthropic,
  type OpenAIOptions,
  openai,
  type ScriptedAnswer,
  scriptedModel,
} from './providers/index.js';
export {
  Agent,
  type AgentConfig,
  type AgentProfile,
  createAgent,
  createSupervisor,
  ForkEditError,
  type GenerateRequest,
  type GenerateResult,
  type Guardrail,
  generate,
  guardrails,
  type Hooks,
  type LiveTools,
  type Policy,
  type PolicyAnswer,
  type PromptInput,
  type PromptOptions,
  type RunResult,
  type Session,
  SessionManager,
  type SessionsOptions,
  type SubagentProfile,
  type SupervisionOptions,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
  sessions,
  streamText,
  type TaskResult,
} from './runtime/index.js';
export {
  CorruptJournalError,
  JournalError,
  JournalVersionError,
  JsonlStore,
  SessionLockedError,
  SqliteStore,
  type Store,
} from './session/index.js';
export {
  type AnyTool,
  cacheByArgs,
  defineTool,
  jsonSchema,
  loadSkills,
  logCalls,
  retryOnError,
  type ToolContext,
  type ToolDefinition,
  ToolDefinitionError,
  type ToolMiddleware,
  type ToolOutput,
  ToolTimeoutError,
  timeoutAfter,
  withMiddleware,
} from './tools/index.js';
