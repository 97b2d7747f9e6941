export { type AgentActorRef, type AgentMachine, agentMachine, type WorkerInput } from './machine.js';
export type * from './types.js';
