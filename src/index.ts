export type { AgentContext, AgentMachineEvent, PolicyDecision, ToolCallState } from '../machines/agent/index.js';
export { agentMachine } from '../machines/agent/index.js';
export {
  type ConnectInspectorOptions,
  connectInspector,
  type InspectorConnection,
  openWebSocketInspector,
} from './inspect/connect.js';
export { toMermaid, toStudioJSON } from './inspect/export.js';
export { type SanitizeOptions, sanitizeInspection } from './inspect/sanitize.js';
export { type InspectorServer, type InspectorServerOptions, startInspectorServer } from './inspect/server.js';
export {
  type ParsedShell,
  type PermissionMode,
  PermissionRuleError,
  Permissions,
  type PermissionsConfig,
  parseRule,
  parseShell,
  type RuleArgument,
  type SimpleCommand,
  type ToolTraits,
} from './permissions/index.js';
export * from './protocol/index.js';
export {
  type AnthropicOptions,
  anthropic,
  type OpenAIOptions,
  openai,
  type Script,
  type ScriptedAnswer,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedToolCall,
  type ScriptStep,
  scriptedModel,
} from './providers/index.js';
export {
  Agent,
  type AgentConfig,
  type AgentInfo,
  type AgentState,
  type ApprovalTarget,
  type ConversationInput,
  createAgent,
  createSupervisor,
  describeTree,
  type GenerateEvent,
  type GenerateRequest,
  type GenerateResult,
  generate,
  type Listener,
  type MissedRuns,
  type Policy,
  type PolicyAnswer,
  type PromptInput,
  type PromptOptions,
  type RetryOptions,
  type RunResult,
  type Schedule,
  type ScheduleOptions,
  SpawnRefused,
  type SubagentProfile,
  type SupervisionOptions,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
  streamText,
  type TaskInfo,
  type TaskResult,
  type TextStream,
  type TreeView,
  type TurnStream,
} from './runtime/index.js';
export {
  type AnyTool,
  defineTool,
  type ExecutionMode,
  type ToolContext,
  type ToolDefinition,
  ToolDefinitionError,
  type ToolOutput,
} from './tools/index.js';
