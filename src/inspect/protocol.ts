/**
 * Troupe's own inspector channel, beside the `@statelyai/inspect` stream (whose adapter ignores anything a server
 * sends back). Three WebSocket paths on the offline inspector, each with the per-run `token` in its query:
 *
 * - `/inspect?token&run` — the program's `createWebSocketInspector` stream (Stately's frames, unchanged);
 * - `/control?token&run` — the program's command channel: the server sends {@link InspectorCommand}s, the
 *   program answers each with an {@link InspectorAck};
 * - `/ui?token` — the page: it receives {@link UiMessage}s and sends {@link InspectorCommand}s with their `run`.
 */

export type CommandType = 'APPROVE' | 'DENY';

export interface InspectorCommand {
  type: 'command';
  /** Chosen by the page; echoed in the ack. */
  id: string;
  run: string;
  /** The inspected actor's session id, as in its `@xstate.actor` frame. */
  sessionId: string;
  command: CommandType;
  toolCallId: string;
  reason?: string;
}

export interface InspectorAck {
  type: 'ack';
  id: string;
  run: string;
  ok: boolean;
  error?: string;
}

export type UiMessage =
  | { type: 'hello'; runs: Array<{ run: string; connected: boolean }> }
  | { type: 'run'; run: string; connected: boolean }
  | { type: 'frame'; run: string; frame: unknown }
  | InspectorAck;

const RUN_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function isRunId(value: unknown): value is string {
  return typeof value === 'string' && RUN_ID.test(value);
}

/** Parses what a page sent; anything else is refused. */
export function parseCommand(data: string): InspectorCommand | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const c = value as Record<string, unknown>;
  if (c.type !== 'command') return undefined;
  if (c.command !== 'APPROVE' && c.command !== 'DENY') return undefined;
  if (!isRunId(c.run) || typeof c.id !== 'string' || c.id.length > 100) return undefined;
  if (typeof c.sessionId !== 'string' || c.sessionId.length > 200) return undefined;
  if (typeof c.toolCallId !== 'string' || c.toolCallId.length > 500) return undefined;
  if (c.reason !== undefined && (typeof c.reason !== 'string' || c.reason.length > 2000)) return undefined;
  const command: InspectorCommand = {
    type: 'command',
    id: c.id,
    run: c.run,
    sessionId: c.sessionId,
    command: c.command,
    toolCallId: c.toolCallId,
  };
  if (typeof c.reason === 'string') command.reason = c.reason;
  return command;
}

/** The hosts a loopback-only inspector accepts. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]' || hostname === '::1';
}
