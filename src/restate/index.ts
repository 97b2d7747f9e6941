/**
 * `troupe/restate`: Troupe agents hosted on Restate, a durable execution engine (see docs/guide/restate.md).
 *
 * The Restate SDK is an optional peer dependency, and every module of this entry needs it: the entry loads them
 * only once it has found the SDK, so importing `troupe/restate` without it fails with a `MissingPeerError` that
 * names the install line, not with Node's "Cannot find package".
 *
 * @module troupe/restate
 */
import { loadPeer } from '../host/index.js';
import type * as Api from './api.js';

const api: typeof Api = await loadPeer('@restatedev/restate-sdk', 'troupe/restate', () => import('./api.js'));

export type {
  AgentBalancer,
  AgentClient,
  AgentObject,
  AgentObjectOptions,
  AgentWorker,
  ApprovalAnswer,
  HostedAgentConfig,
  HostedSupervision,
  PendingApproval,
  TurnOutcome,
} from './api.js';
export const { agentClient, agentObject, balanceAgents, hostedInspectorRoot, IngressError, serveAgents } = api;
export type IngressError = Api.IngressError;
