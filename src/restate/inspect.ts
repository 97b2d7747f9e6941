import type { InspectorRoot } from '../host/index.js';
import type { AgentClient } from './client.js';

/**
 * What the inspector page's controls act through for agents hosted on Restate: attach it to the worker's inspector
 * connection (`connection.attach(hostedInspectorRoot(agentClient(ingressUrl)))`), and the page's steer, interrupt,
 * approve and deny buttons on a hosted turn go to the agent over Restate's ingress: steers and interrupts to its
 * control object, answers to its `approve` handler, which resolves the awakeable the turn waits on.
 *
 * Not to the turn's agent in this process: a hosted turn's inputs must be in its journal, or a replay (another
 * worker after a crash, a resumed suspension) would not see them, and an approval answered in memory would leave
 * the awakeable, and the turn's effect queue behind it, waiting for ever. Through the ingress a command reaches the
 * agent wherever its turn runs, is taken exactly once, and each page click is one request (no retry: a request that
 * fails is reported to the page as not delivered).
 */
export function hostedInspectorRoot(client: AgentClient): InspectorRoot {
  return {
    approve: ({ agentId, toolCallId }) => client.approve(agentId, { toolCallId, approve: true }),
    deny: ({ agentId, toolCallId }, reason) =>
      client.approve(agentId, { toolCallId, approve: false, ...(reason === undefined ? {} : { reason }) }),
    get: (agentId) => ({
      steer: (text) => client.steer(agentId, text),
      interrupt: () => client.interrupt(agentId),
    }),
  };
}
