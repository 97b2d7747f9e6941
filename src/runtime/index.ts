// The real turns the first agent takes and keeps, so that a collection keeps their objects' hidden classes.
import './agent/specimens.js';

export {
  Agent,
  createAgent,
  type HostedAgent,
  hostedAgent,
  type PromptInput,
  type PromptOptions,
} from './agent/agent.js';
export type { AgentConfig, AgentProfile } from './agent/config.js';
export { describeTree, type TreeView } from './agent/tree-view.js';
export type { Policy, PolicyAnswer, RunResult } from './env/env.js';
export type {
  Hooks,
  TurnEnd,
} from './env/hooks.js';
export { LiveTools } from './env/live-tools.js';
export type { RetryOptions } from './env/retry.js';
export type { MissedRuns } from './schedule/schedule.js';
export type { Session } from './session/session.js';
export {
  ForkEditError,
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
} from './step/generate.js';
export { type Guardrail, guardrails } from './step/guardrails.js';
export {
  createSupervisor,
  SpawnRefused,
  Supervisor,
  type SupervisorConfig,
  type SwarmOptions,
  type SwarmTask,
} from './supervisor.js';
export { SubagentConfigs } from './tree/subagent-profiles.js';
export {
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  type TaskResult,
  tooManyAgents,
} from './tree/subagent-tools.js';
export type { SubagentProfile, SupervisionOptions } from './tree/tree.js';
