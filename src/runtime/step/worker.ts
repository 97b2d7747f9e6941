import type { AnyActorRef } from 'xstate';
import { type AgentWorker, servedBy, type WorkerArgs, workerRequests } from '../../../machines/agent/index.js';
import type { AgentEnv } from '../env/env.js';
import { envOf } from '../env/registry.js';
import './specimens.js';
import { WorkerInbox } from './worker-inbox.js';

/** Each agent's worker inbox, made at its first request. */
const inboxes = new WeakMap<AgentEnv, WorkerInbox>();

function inboxOf(env: AgentEnv): WorkerInbox {
  let inbox = inboxes.get(env);
  if (!inbox) {
    inbox = new WorkerInbox(env);
    inboxes.set(env, inbox);
  }
  return inbox;
}

/**
 * The agent's worker: answers the step's requests, the model's (model-worker.ts) and the tools' (tool-worker.ts),
 * by sending the agent its replies. Leaving a run, the chart's `abortInFlight` closes what is in flight.
 */
const agentWorker: AgentWorker = (request, { context, self, system }) =>
  inboxOf(envOf(system, context.agentId)).request(request, self as AnyActorRef);

/** The chart's request actions, served by the agent's worker. */
export const workerActions = servedBy(agentWorker);

/** Asks the model again for a step restored in the middle of its model call (outside any macrostep). */
export function requestModelAgain({ context, self, system }: WorkerArgs): void {
  inboxOf(envOf(system, context.agentId)).take(workerRequests.requestModel(context), self as AnyActorRef);
}
