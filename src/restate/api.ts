/**
 * `troupe/restate`: Troupe agents hosted on Restate, a durable execution engine (see docs/guide/restate.md).
 *
 * @module troupe/restate
 */
export {
  type AgentObject,
  type AgentObjectOptions,
  type ApprovalAnswer,
  agentObject,
  type HostedAgentConfig,
  type PendingApproval,
  type TurnOutcome,
} from './agent-object.js';
export { type AgentBalancer, balanceAgents } from './balancer.js';
export { type AgentClient, agentClient, IngressError } from './client.js';
export { hostedInspectorRoot } from './inspect.js';
export { type AgentWorker, serveAgents } from './serve.js';
export type { HostedSupervision } from './subagents.js';
