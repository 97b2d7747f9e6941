// The real turns the first agent takes and keeps, so that a collection keeps their objects' hidden classes.
import './agent/specimens.js';

export {
  Agent,
  type ConversationInput,
  createAgent,
  type HostedAgent,
  hostedAgent,
  type PromptInput,
  type PromptOptions,
  type TurnStream,
} from './agent/agent.js';
export type { AgentConfig, AgentProfile } from './agent/config.js';
export type { GoalOptions, GoalResult, GoalView } from './agent/goal.js';
export type { AgentState } from './agent/state.js';
export { describeTree, type TreeView } from './agent/tree-view.js';
export type { Listener, ListenOptions } from './env/bus.js';
export type { AgentInfo, Policy, PolicyAnswer, RunResult } from './env/env.js';
export {
  type BeforeToolCallAnswer,
  GuardrailTripped,
  HookFailed,
  type HookList,
  type Hooks,
  type TurnEnd,
} from './env/hooks.js';
export { LiveTools, type StepInfo, type ToolSelector } from './env/live-tools.js';
export type { RetryOptions } from './env/retry.js';
export type { ScheduleState } from './schedule/book.js';
export type { MissedRuns, Schedule, ScheduleOptions } from './schedule/schedule.js';
export type { Session, SessionStatus } from './session/session.js';
export {
  ForkEditError,
  type ReplayResult,
  type SessionInfo,
  SessionManager,
  type SessionsOptions,
  sessions,
} from './sessions.js';
export {
  type GenerateEvent,
  type GenerateRequest,
  type GenerateResult,
  generate,
  streamText,
  type TextStream,
} from './step/generate.js';
export { type Guardrail, type GuardrailOptions, guardrails } from './step/guardrails.js';
export {
  createSupervisor,
  SpawnRefused,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
  type TaskInfo,
} from './supervisor.js';
export { type ProfiledConfig, SubagentConfigs } from './tree/subagent-profiles.js';
export {
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  type TaskResult,
  tooManyAgents,
} from './tree/subagent-tools.js';
export type { ApprovalTarget, SubagentProfile, SupervisionOptions } from './tree/tree.js';
