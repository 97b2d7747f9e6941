/**
 * `troupe/host`: what a host that runs agents' turns itself needs beyond the public API (the Restate host,
 * `troupe/restate`, imports nothing else of Troupe's). A program does not need it.
 *
 * @module troupe/host
 */
export type { InspectorRoot } from '../inspect/control.js';
export {
  type AccountView,
  addUsage,
  CANCELLED_TEXT,
  checkStrategy,
  describeThrown,
  ESCALATED,
  type EscalatedFailure,
  emptyUsage,
  escalatedEnd,
  escalationCause,
  escalationError,
  type FailureClass,
  type FinishedAgents,
  failureClassOf,
  failureVerdict,
  finishAgent,
  handOffOf,
  INTERRUPTED_TEXT,
  JOINED_TEXT,
  type JoinPolicy,
  joinDecided,
  type KeepLimits,
  type NotificationDelivery,
  notificationDelivery,
  notificationMessage,
  type RestartOptions,
  type ResumeRefusal,
  restartDecision,
  restartsWithin,
  resumeRefused,
  type SerializedError,
  type StrategyOptions,
  type TaskEnd,
  type TaskEndCause,
  type TaskStatus,
  type TurnStopReason,
  taskEnd,
  toModelError,
} from '../protocol/index.js';
export { loadPeer } from '../protocol/peers.js';
export {
  type HostedAgent,
  hostedAgent,
  type RetryOptions,
  SpawnRefused,
  SubagentConfigs,
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  tooManyAgents,
} from '../runtime/index.js';
