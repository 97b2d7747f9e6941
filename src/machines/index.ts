/**
 * `troupe/machines`: the pure statecharts an agent and a supervisor run, their types, and the exporters that draw
 * them, for inspectors, diagram tools and tests of a customised machine (`agentMachine.provide(...)`).
 *
 * @module troupe/machines
 */
export {
  type AgentContext,
  type AgentMachineEvent,
  type AgentMachineInput,
  agentMachine,
  type PolicyDecision,
  type ToolCallState,
  type ToolCallStatus,
  type TurnInput,
  type ValidationOutcomes,
} from '../../machines/agent/index.js';
export { type GoalContext, goalMachine } from '../../machines/goal/index.js';
export {
  type SupervisorContext,
  type SupervisorEvent,
  type SupervisorInput,
  supervisorMachine,
} from '../../machines/supervisor/index.js';
export { type TransitionInfo, toMermaid, toStudioJSON, transitionList } from '../inspect/export.js';
