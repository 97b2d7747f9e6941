import { randomBytes } from 'node:crypto';
import { createWebSocketInspector } from '@statelyai/inspect';
import { WebSocket } from 'ws';
import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';
import { type InspectorAck, type InspectorCommand, isLoopbackHost, parseCommand } from './protocol.js';
import { type SanitizeOptions, sanitizeInspection } from './sanitize.js';

type WebSocketInspector = ReturnType<typeof createWebSocketInspector>;

export interface WebSocketInspectorOptions {
  /** A WebSocket server that takes Stately's inspection frames. */
  url: string;
  /** How inspected data is summarised and redacted (see {@link SanitizeOptions}). */
  sanitize?: SanitizeOptions;
  /** Frames kept while the socket is not open (Stately's default is 200; default here 10 000). */
  maxDeferredEvents?: number;
}

export interface OpenInspector {
  /** Pass to `createAgent({ inspect })`: sanitised before anything is serialised. */
  readonly inspect: Observer<InspectionEvent>;
  readonly inspector: WebSocketInspector;
  /** Lets queued frames go out, then closes the socket. */
  close(): Promise<void>;
}

interface AdapterInternals {
  ws?: WebSocket;
  status?: string;
}

/** Waits one macrotask: Stately's Node adapter converts each inspection event in a `setTimeout(0)`. */
function drain(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * `createWebSocketInspector` from `@statelyai/inspect`, sanitised, and open before it returns: the adapter keeps
 * only its last `maxDeferredEvents` frames while the socket is connecting, so an agent created earlier could lose
 * its `@xstate.actor` frame. The definitions are serialised deep enough for the agent's nested states.
 */
export async function openWebSocketInspector(options: WebSocketInspectorOptions): Promise<OpenInspector> {
  const inspector = createWebSocketInspector({
    url: options.url,
    serializationDepthLimit: 64,
    maxDeferredEvents: options.maxDeferredEvents ?? 10_000,
  });
  const adapter = inspector.adapter as unknown as AdapterInternals;
  const ws = adapter.ws;
  if (!ws) throw new Error('createWebSocketInspector did not open a socket');
  if (adapter.status !== 'open') {
    try {
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', (error) => reject(error));
        ws.once('close', () => reject(new Error('closed before it opened')));
      });
    } catch (error) {
      inspector.stop();
      throw new Error(`Cannot reach the inspector at ${options.url}: ${(error as Error).message}`);
    }
  }
  return {
    inspect: sanitizeInspection(inspector.inspect, options.sanitize),
    inspector,
    close: async () => {
      await drain();
      const socket = adapter.ws;
      if (socket && socket.readyState === socket.OPEN) {
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        inspector.stop();
        await closed;
      } else {
        inspector.stop();
      }
    },
  };
}

export interface ConnectInspectorOptions {
  /** What `troupe inspect` printed (`ws://127.0.0.1:PORT/?token=…`); default `process.env.TROUPE_INSPECT`. */
  url?: string;
  sanitize?: SanitizeOptions;
  /** Names this run on the inspector page (default: random). */
  runId?: string;
}

/** What answers approvals by agent id: an `Agent` (for its tree) or a `Supervisor`. */
export interface ApprovalRouter {
  approve(call: { agentId: string; toolCallId: string }): void;
  deny(call: { agentId: string; toolCallId: string }, reason?: string): void;
}

export interface InspectorConnection extends OpenInspector {
  readonly runId: string;
  /**
   * Routes the page's approvals through the root agent or supervisor (`agent.approve({ agentId, toolCallId })`),
   * so the runtime's own bookkeeping sees them. Without it they are sent straight to the inspected agent actor.
   */
  attach(root: ApprovalRouter): void;
  /** Commands received and applied (or refused), for logs and tests. */
  readonly commands: ReadonlyArray<{ command: InspectorCommand; ok: boolean; error?: string }>;
}

/**
 * Connects a program to the offline inspector (`troupe inspect`): inspection frames go to its `/inspect`
 * endpoint, and approvals clicked on the page come back on Troupe's own `/control` channel. Pass `inspect` to
 * `createAgent` / `createSupervisor`; every agent in the tree can then be approved or denied from the page.
 *
 * Commands are applied to the inspected actors themselves, found through the same inspection stream: an
 * `APPROVE` / `DENY` event is sent to the agent actor, and only for a call that agent is awaiting.
 */
export async function connectInspector(options: ConnectInspectorOptions = {}): Promise<InspectorConnection> {
  const raw = options.url ?? process.env.TROUPE_INSPECT;
  if (!raw)
    throw new Error('connectInspector: no url (run `npx troupe inspect` and set TROUPE_INSPECT to what it prints)');
  const base = new URL(raw);
  if (base.protocol !== 'ws:') throw new Error(`connectInspector: expected a ws:// url, got ${base.protocol}`);
  if (!isLoopbackHost(base.hostname))
    throw new Error(`connectInspector: the inspector must be on loopback, not ${base.hostname}`);
  const token = base.searchParams.get('token') ?? '';
  const runId = options.runId ?? `run-${randomBytes(6).toString('base64url')}`;
  const endpoint = (path: string) => {
    const url = new URL(path, base);
    url.search = new URLSearchParams({ token, run: runId }).toString();
    return url.toString();
  };

  // The control channel first: it fails fast when no inspector listens (Stately's adapter would retry forever).
  const control = new WebSocket(endpoint('/control'));
  await new Promise<void>((resolve, reject) => {
    control.once('open', () => resolve());
    control.once('error', (error) => reject(new Error(`Cannot reach the inspector at ${base.host}: ${error.message}`)));
    control.once('unexpected-response', (_req, res) =>
      reject(new Error(`The inspector at ${base.host} refused the connection (${res.statusCode}): check the token`)),
    );
  });

  let open: OpenInspector;
  try {
    open = await openWebSocketInspector({
      url: endpoint('/inspect'),
      ...(options.sanitize ? { sanitize: options.sanitize } : {}),
    });
  } catch (error) {
    control.close();
    throw error;
  }

  const actors = new Map<string, AnyActorRef>();
  let router: ApprovalRouter | undefined;
  const commands: Array<{ command: InspectorCommand; ok: boolean; error?: string }> = [];
  const tap: Observer<InspectionEvent> = {
    next(event) {
      const actorRef = event.actorRef as AnyActorRef;
      if (event.type === '@xstate.actor') actors.set(actorRef.sessionId, actorRef);
      else if (event.type === '@xstate.snapshot' && (event.snapshot as { status?: string }).status !== 'active') {
        actors.delete(actorRef.sessionId);
      }
      open.inspect.next?.(event);
    },
  };

  const apply = (command: InspectorCommand): string | undefined => {
    const actor = actors.get(command.sessionId);
    if (!actor) return 'no such actor in this run';
    const snapshot = actor.getSnapshot() as { status?: string; context?: { calls?: unknown } };
    const calls = snapshot.context?.calls;
    if (snapshot.status !== 'active' || !Array.isArray(calls)) return 'not an agent';
    const awaiting = calls.some(
      (c: { call?: { id?: string }; status?: string }) => c.call?.id === command.toolCallId && c.status === 'awaiting',
    );
    if (!awaiting) return 'that call is not awaiting approval';
    const agentId = (snapshot.context as { agentId?: unknown }).agentId;
    if (router && typeof agentId === 'string') {
      const call = { agentId, toolCallId: command.toolCallId };
      if (command.command === 'APPROVE') router.approve(call);
      else router.deny(call, command.reason);
      return undefined;
    }
    if (command.command === 'APPROVE') actor.send({ type: 'APPROVE', toolCallId: command.toolCallId });
    else
      actor.send({
        type: 'DENY',
        toolCallId: command.toolCallId,
        ...(command.reason === undefined ? {} : { reason: command.reason }),
      });
    return undefined;
  };

  control.on('message', (data, isBinary) => {
    if (isBinary) return;
    const command = parseCommand(data.toString());
    if (!command || command.run !== runId) return;
    const error = apply(command);
    commands.push(error === undefined ? { command, ok: true } : { command, ok: false, error });
    const ack: InspectorAck = { type: 'ack', id: command.id, run: runId, ok: error === undefined };
    if (error !== undefined) ack.error = error;
    if (control.readyState === control.OPEN) control.send(JSON.stringify(ack));
  });
  control.on('error', () => {});

  return {
    runId,
    inspect: tap,
    inspector: open.inspector,
    commands,
    attach: (root) => {
      router = root;
    },
    close: async () => {
      await open.close();
      if (control.readyState === control.OPEN || control.readyState === control.CONNECTING) {
        const closed = new Promise<void>((resolve) => control.once('close', () => resolve()));
        control.close();
        await closed;
      }
    },
  };
}
