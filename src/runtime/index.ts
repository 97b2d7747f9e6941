export {
  Agent,
  type ConversationInput,
  createAgent,
  hostNotify,
  hostSteer,
  type PromptInput,
  type PromptOptions,
  type TurnStream,
} from './agent.js';
export type { AgentConfig, AgentProfile } from './agent-config.js';
export type { AgentState } from './agent-state.js';
export type { Listener, ListenOptions } from './bus.js';
export type { AgentInfo, Policy, PolicyAnswer, RunResult } from './env.js';
export {
  type GenerateEvent,
  type GenerateRequest,
  type GenerateResult,
  generate,
  streamText,
  type TextStream,
} from './generate.js';
export type { GoalOptions, GoalResult, GoalView } from './goal.js';
export { type Guardrail, type GuardrailOptions, guardrails } from './guardrails.js';
export {
  type BeforeToolCallAnswer,
  GuardrailTripped,
  HookFailed,
  type HookList,
  type Hooks,
  type TurnEnd,
} from './hooks.js';
export { LiveTools, type StepInfo, type ToolSelector } from './live-tools.js';
export type { RetryOptions } from './retry.js';
export type { MissedRuns, Schedule, ScheduleOptions } from './schedule.js';
export type { ScheduleState } from './schedule-book.js';
export type { Session, SessionStatus } from './session.js';
export {
  type ReplayResult,
  type SessionInfo,
  SessionManager,
  type SessionsOptions,
  sessions,
} from './session-manager.js';
export { type ProfiledConfig, SubagentConfigs } from './subagent-profiles.js';
export {
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  type TaskResult,
  tooManyAgents,
} from './subagent-tools.js';
export {
  createSupervisor,
  describeTree,
  SpawnRefused,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
  type TaskInfo,
  type TreeView,
} from './supervisor.js';
export type { ApprovalTarget, SubagentProfile, SupervisionOptions } from './supervisor-tree.js';
