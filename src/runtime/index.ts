export {
  Agent,
  type AgentConfig,
  createAgent,
  type PromptInput,
  type PromptOptions,
  type TurnStream,
} from './agent.js';
export type { Listener } from './bus.js';
export type { AgentInfo, Policy, PolicyAnswer, RunResult } from './env.js';
export type { RetryOptions } from './retry.js';
