import { randomBytes } from 'node:crypto';
import type { createWebSocketInspector } from '@statelyai/inspect';
import type { WebSocket } from 'ws';
import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';
import { loadPeer } from '../protocol/peers.js';
import { applyCommand, type InspectorRoot } from './control.js';
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

/** Documented where the root entry exports it: ./entry.ts. */
export async function openWebSocketInspector(options: WebSocketInspectorOptions): Promise<OpenInspector> {
  const { createWebSocketInspector } = await loadPeer(
    '@statelyai/inspect',
    'openWebSocketInspector()',
    () => import('@statelyai/inspect'),
  );
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

export interface InspectorConnection extends OpenInspector {
  readonly runId: string;
  /**
   * Lets the page control the run through the root agent or supervisor's public methods (`approve`, `steer`,
   * `interrupt`, and a supervisor's `cancel`, `cancelBatch`, `resume`), so the runtime's own bookkeeping sees every
   * command. Without it only approvals work, sent straight to the inspected agent actor.
   */
  attach(root: InspectorRoot): void;
  /** Commands received and applied (or refused), for logs and tests. */
  readonly commands: ReadonlyArray<{ command: InspectorCommand; ok: boolean; error?: string; detail?: string }>;
}

/** Documented where the root entry exports it (./entry.ts); commands are answered by `applyCommand`. */
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
  const { WebSocket } = await import('ws'); // on first use: a program that never connects does not load it
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
  // Agents' actors by agent id, for frames that start from the event bus (which names agents, not actors).
  const agentActors = new Map<string, string>();
  let router: InspectorRoot | undefined;
  let stopLabels: (() => void) | undefined;
  const commands: Array<{ command: InspectorCommand; ok: boolean; error?: string; detail?: string }> = [];
  const tap: Observer<InspectionEvent> = {
    next(event) {
      const actorRef = event.actorRef as AnyActorRef;
      if (event.type === '@xstate.actor') actors.set(actorRef.sessionId, actorRef);
      else if (event.type === '@xstate.snapshot') {
        const { status, context } = event.snapshot as { status?: string; context?: { agentId?: unknown } };
        const agentId = typeof context?.agentId === 'string' ? context.agentId : undefined;
        if (status !== 'active') {
          actors.delete(actorRef.sessionId);
          if (agentId !== undefined && agentActors.get(agentId) === actorRef.sessionId) agentActors.delete(agentId);
        } else if (agentId !== undefined && agentActors.get(agentId) !== actorRef.sessionId) {
          agentActors.set(agentId, actorRef.sessionId);
        }
      } else if (event.type === '@xstate.microstep') {
        const frame = transitionsFrame(actorRef.sessionId, event._transitions);
        // After Stately's own frames of the events before it, which it converts in a setTimeout(0) too.
        if (frame) setTimeout(() => (open.inspector.adapter as unknown as RawAdapter).send(frame), 0);
      }
      open.inspect.next?.(event);
    },
  };

  control.on('message', (data, isBinary) => {
    if (isBinary) return;
    const command = parseCommand(data.toString());
    if (!command || command.run !== runId) return;
    void applyCommand(command, actors, router).then((outcome) => {
      commands.push({ command, ...outcome });
      const ack: InspectorAck = { type: 'ack', id: command.id, run: runId, ...outcome };
      if (control.readyState === control.OPEN) control.send(JSON.stringify(ack));
    });
  });
  control.on('error', () => {});

  return {
    runId,
    inspect: tap,
    inspector: open.inspector,
    commands,
    attach: (root) => {
      router = root;
      stopLabels?.();
      stopLabels = forwardToolLabels(root, (frame) => {
        const sessionId = agentActors.get(frame.agentId);
        if (sessionId === undefined) return;
        const { agentId: _agentId, ...rest } = frame;
        // After Stately's frame of the snapshot that holds the call, which it converts in a setTimeout(0).
        setTimeout(() => (open.inspector.adapter as unknown as RawAdapter).send({ ...rest, sessionId }), 0);
      });
    },
    close: async () => {
      stopLabels?.();
      await open.close();
      if (control.readyState === control.OPEN || control.readyState === control.CONNECTING) {
        const closed = new Promise<void>((resolve) => control.once('close', () => resolve()));
        control.close();
        await closed;
      }
    },
  };
}

interface LabelFrame {
  type: '@troupe.label';
  agentId: string;
  toolCallId: string;
  label: string;
}

/**
 * Tools' human-readable labels live in the tools, not in the machine's context, so the page learns them from the
 * event bus: each call that starts or asks for approval with a labelled tool becomes a `@troupe.label` frame.
 */
function forwardToolLabels(root: InspectorRoot, send: (frame: LabelFrame) => void): (() => void) | undefined {
  if (!root.on) return undefined;
  const forward = (event: { agentId: string; toolCallId: string; label?: string }) => {
    if (event.label !== undefined)
      send({ type: '@troupe.label', agentId: event.agentId, toolCallId: event.toolCallId, label: event.label });
  };
  const offs = [
    root.on('approval_requested', forward, { subtree: true }),
    root.on('tool_execution_start', forward, { subtree: true }),
  ];
  return () => {
    for (const off of offs) off();
  };
}

/** Stately's adapter sends any JSON object; its type admits only Stately's own frames. */
interface RawAdapter {
  send(frame: object): void;
}

interface TransitionLike {
  eventType?: string;
  source?: { path?: readonly string[] };
  target?: ReadonlyArray<{ path?: readonly string[] }>;
  guard?: unknown;
}

/** The taken transitions of one microstep as plain paths: state names and event types, no data of the run. */
function transitionsFrame(sessionId: string, transitions: readonly unknown[]): TroupeTransitionsFrame | undefined {
  const taken = (transitions as TransitionLike[])
    .filter((t) => t.source?.path && t.target?.length)
    .map((t) => {
      const guard = typeof t.guard === 'string' ? t.guard : (t.guard as { type?: unknown } | undefined)?.type;
      return {
        event: t.eventType ?? '',
        source: (t.source?.path ?? []).join('.'),
        targets: (t.target ?? []).map((target) => (target.path ?? []).join('.')),
        ...(typeof guard === 'string' ? { guard } : {}),
      };
    });
  if (taken.length === 0) return undefined;
  return { type: '@troupe.transitions', sessionId, transitions: taken };
}

interface TroupeTransitionsFrame {
  type: '@troupe.transitions';
  sessionId: string;
  transitions: Array<{ event: string; source: string; targets: string[]; guard?: string }>;
}
