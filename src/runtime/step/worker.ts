import { fromCallback } from 'xstate';
import type { WorkerInput, WorkerRequest } from '../../../machines/agent/index.js';
import { envOf } from '../env/registry.js';
import './specimens.js';
import { WorkerInbox } from './worker-inbox.js';

/**
 * The agent's worker: lives as long as a run and answers the step's requests, the model's (model-worker.ts) and the
 * tools' (tool-worker.ts). Stopped with the run, it aborts what is in flight.
 */
export const agentWorker = fromCallback<WorkerRequest, WorkerInput>(({ input, system, receive, sendBack }) => {
  const env = envOf(system, input.agentId);
  // Requests and tool replies go through methods, not closures made per agent: V8 drops the optimised code of a
  // function whose every function object died, and a worker's closures die with its agent.
  const inbox = new WorkerInbox(env, sendBack);
  receive(inbox.receive);
  return inbox.stop;
});
