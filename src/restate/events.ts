import type * as restate from '@restatedev/restate-sdk';
import type { Agent, AgentEvent } from '../index.js';

/**
 * Forwards a hosted agent's events to the object's listener, marking those of a replay `replayed: true`, as a resumed
 * embedded session does (docs/architecture/journal.md, "Resume"). Restate replays a turn from its journal after a
 * crash, a suspension or a retry, and the runtime publishes that turn's events again as the journaled answers come
 * back; they are the replay's as long as the SDK is still replaying journal entries, and live from the first effect the
 * journal does not hold (a model call's deltas, a tool's result that was never journaled, the turn's end). The SDK says
 * which through its `isProcessing()` (experimental, and documented as fit for exactly this: telling what to log, never
 * steering control flow); a context without it counts as live.
 */
export function forwardEvents(ctx: restate.ObjectContext, agent: Agent, on: (event: AgentEvent) => void): () => void {
  const internal = ctx as Partial<restate.internal.ContextInternal>;
  const replaying = () => internal.isProcessing?.() === false;
  return agent.on('*', (event) => on(replaying() ? { ...event, replayed: true } : event));
}
