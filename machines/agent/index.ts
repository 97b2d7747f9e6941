export { type AgentActorRef, agentMachine } from './chart.js';
export { type AgentWorker, requestOf, servedBy, type WorkerArgs, workerRequests } from './setup.js';
export type * from './types.js';
