export type { AgentContext, AgentMachineEvent, PolicyDecision, ToolCallState } from '../machines/agent/index.js';
export { agentMachine } from '../machines/agent/index.js';
export {
  type ConnectInspectorOptions,
  connectInspector,
  type InspectorConnection,
  type InspectorServer,
  type InspectorServerOptions,
  openWebSocketInspector,
  type SanitizeOptions,
  sanitizeInspection,
  startInspectorServer,
  toMermaid,
  toStudioJSON,
} from './inspect/index.js';
export * from './protocol/index.js';
export { type Script, type ScriptedAnswer, type ScriptedModel, scriptedModel } from './providers/index.js';
export {
  Agent,
  type AgentConfig,
  type AgentInfo,
  createAgent,
  type Listener,
  type Policy,
  type PolicyAnswer,
  type PromptInput,
  type PromptOptions,
  type RetryOptions,
  type RunResult,
  type TurnStream,
} from './runtime/index.js';
export {
  type ApprovalTarget,
  createSupervisor,
  describeTree,
  SpawnRefused,
  type SubagentProfile,
  type SupervisionOptions,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
  type TaskInfo,
  type TaskResult,
  type TreeView,
} from './runtime/index.js';
export {
  type ApprovalTarget,
  createSupervisor,
  describeTree,
  SpawnRefused,
  type SubagentProfile,
  type SupervisionOptions,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
  type TaskInfo,
  type TaskResult,
  type TreeView,
} from './runtime/index.js';
export {
  type AnyTool,
  defineTool,
  type ToolContext,
  type ToolDefinition,
  ToolDefinitionError,
  type ToolOutput,
} from './tools/index.js';
export { type AnthropicOptions, anthropic, type OpenAIOptions, openai } from './providers/index.js';
