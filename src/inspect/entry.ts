// The inspector's functions as the root entry exports them. Each loads its module on its first call: the server,
// the connection and what they import (Node's HTTP module among them, about 1.2 MB of memory in all) would
// otherwise be paid by every program that imports `troupe`, inspector or not.
import type {
  ConnectInspectorOptions,
  InspectorConnection,
  OpenInspector,
  WebSocketInspectorOptions,
} from './connect.js';
import type { InspectorServer, InspectorServerOptions } from './server.js';

/**
 * The offline inspector: a page and three WebSocket endpoints on a loopback address. Programs stream their
 * inspection frames to `/inspect` and take approvals on `/control`; pages read `/ui`. Every request must name
 * the host it was sent to (no DNS rebinding), carry the token, and a page's WebSocket must come from the page's
 * own origin. The page loads nothing but this server's files (Content-Security-Policy `'self'`).
 */
export async function startInspectorServer(options: InspectorServerOptions = {}): Promise<InspectorServer> {
  const server = await import('./server.js');
  return server.startInspectorServer(options);
}

/**
 * Connects a program to the offline inspector (`troupe inspect`): inspection frames go to its `/inspect`
 * endpoint, and commands clicked on the page come back on Troupe's own `/control` channel. Pass `inspect` to
 * `createAgent` / `createSupervisor`, and `attach()` the root: every agent in the tree can then be approved,
 * denied, steered and interrupted from the page, and a supervisor's tasks cancelled and resumed.
 *
 * Commands address the inspected actors, found through the same inspection stream, and each is answered with its
 * outcome. Beside Stately's frames the stream carries the transitions each macrostep took
 * (`@troupe.transitions`), which Stately's adapter drops: the page marks exactly those.
 */
export async function connectInspector(options: ConnectInspectorOptions = {}): Promise<InspectorConnection> {
  const connect = await import('./connect.js');
  return connect.connectInspector(options);
}

/**
 * `createWebSocketInspector` from `@statelyai/inspect`, sanitised, and open before it returns: the adapter keeps
 * only its last `maxDeferredEvents` frames while the socket is connecting, so an agent created earlier could lose
 * its `@xstate.actor` frame. The definitions are serialised deep enough for the agent's nested states.
 */
export async function openWebSocketInspector(options: WebSocketInspectorOptions): Promise<OpenInspector> {
  const connect = await import('./connect.js');
  return connect.openWebSocketInspector(options);
}
