import { fromCallback } from 'xstate';
import type { WorkerInput, WorkerRequest } from '../../../machines/agent/index.js';
import { envOf } from '../env/registry.js';
import { requestModel } from './model-worker.js';
import './specimens.js';
import { ToolResultOutbox } from './tool-result-outbox.js';
import { requestTools } from './tool-worker.js';

/**
 * The agent's worker: lives as long as a run and answers the step's requests, the model's (model-worker.ts) and the
 * tools' (tool-worker.ts). Stopped with the run, it aborts what is in flight.
 */
export const agentWorker = fromCallback<WorkerRequest, WorkerInput>(({ input, system, receive, sendBack }) => {
  const env = envOf(system, input.agentId);
  // Tool replies go through the outbox's methods, not a closure made per agent: V8 drops the optimised code of a
  // function whose every function object died, and a worker's closures die with its agent.
  const outbox = new ToolResultOutbox(env, sendBack);
  receive((request) => {
    if (request.type === 'MODEL_REQUEST') requestModel(env, request, sendBack, outbox);
    else requestTools(env, request, outbox);
  });
  return () => env.abortInFlight();
});
