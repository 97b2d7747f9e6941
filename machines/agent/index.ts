export { type AgentActorRef, agentMachine } from './chart.js';
export type { WorkerInput } from './setup.js';
export type * from './types.js';
