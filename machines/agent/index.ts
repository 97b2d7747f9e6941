export { type AgentActorRef, agentMachine, type WorkerInput } from './machine.js';
export type * from './types.js';
