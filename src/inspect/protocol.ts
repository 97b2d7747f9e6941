/**
 * Troupe's own inspector channel, beside the `@statelyai/inspect` stream (whose adapter ignores anything a server
 * sends back). Three WebSocket paths on the offline inspector, each with the per-run `token` in its query:
 *
 * - `/inspect?token&run` — the program's `createWebSocketInspector` stream (Stately's frames, unchanged, plus
 *   Troupe's `@troupe.transitions` frames: the transitions each macrostep took);
 * - `/control?token&run` — the program's command channel: the server sends {@link InspectorCommand}s, the
 *   program answers each with an {@link InspectorAck};
 * - `/ui?token[&since]` — the page: it receives {@link UiMessage}s and sends {@link InspectorCommand}s with their
 *   `run`. `GET /frames?token` gives the same messages as one JSON document, so a first paint needs no socket.
 */

/**
 * What a page can ask of a run. Approvals answer a waiting tool call; the rest are the public controls of an
 * agent (`steer`, `interrupt`) and of a supervisor (`cancel` a task, `cancelBatch`, `resume` a finished subagent).
 */
export type CommandType = 'APPROVE' | 'DENY' | 'STEER' | 'INTERRUPT' | 'CANCEL_TASK' | 'CANCEL_BATCH' | 'RESUME';

const COMMAND_TYPES: ReadonlySet<string> = new Set<CommandType>([
  'APPROVE',
  'DENY',
  'STEER',
  'INTERRUPT',
  'CANCEL_TASK',
  'CANCEL_BATCH',
  'RESUME',
]);

export interface InspectorCommand {
  type: 'command';
  /** Chosen by the page; echoed in the ack. */
  id: string;
  run: string;
  /** The inspected actor's session id, as in its `@xstate.actor` frame (an agent, or the supervisor of a task). */
  sessionId: string;
  command: CommandType;
  /** APPROVE / DENY: the waiting call. */
  toolCallId?: string;
  /** DENY: why, told to the model. */
  reason?: string;
  /** STEER: the message; RESUME: the follow-up prompt. */
  text?: string;
  /** RESUME: the finished agent, when its actor is gone (stopped and archived). */
  agentId?: string;
  /** CANCEL_TASK. */
  taskId?: string;
  /** CANCEL_BATCH. */
  batchId?: string;
}

export interface InspectorAck {
  type: 'ack';
  id: string;
  run: string;
  ok: boolean;
  /** Why it was refused: the agent is gone, the task already finished, … */
  error?: string;
  /** What happened when it was applied (a resume names its new task). */
  detail?: string;
  /** The command answered, as the page sent it: every page shows who did what (added by the server). */
  command?: InspectorCommand;
  /** Set on the copy sent to the page that sent the command. */
  mine?: boolean;
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

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;
const isName = (value: unknown): value is string => isText(value, 500) && value.length > 0;

/** The fields each command needs, beyond the envelope. */
function hasFields(c: Record<string, unknown>): boolean {
  switch (c.command as CommandType) {
    case 'APPROVE':
      return isName(c.toolCallId);
    case 'DENY':
      return isName(c.toolCallId) && (c.reason === undefined || isText(c.reason, 2000));
    case 'STEER':
      return isText(c.text, 20_000) && c.text.trim().length > 0;
    case 'RESUME':
      return isText(c.text, 20_000) && c.text.trim().length > 0 && (c.agentId === undefined || isName(c.agentId));
    case 'INTERRUPT':
      return true;
    case 'CANCEL_TASK':
      return isName(c.taskId);
    case 'CANCEL_BATCH':
      return isName(c.batchId);
  }
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
  if (c.type !== 'command' || typeof c.command !== 'string' || !COMMAND_TYPES.has(c.command)) return undefined;
  if (!isRunId(c.run) || !isText(c.id, 100) || !isText(c.sessionId, 200)) return undefined;
  if (!hasFields(c)) return undefined;
  const command: InspectorCommand = {
    type: 'command',
    id: c.id,
    run: c.run,
    sessionId: c.sessionId,
    command: c.command as CommandType,
  };
  for (const field of ['toolCallId', 'reason', 'text', 'agentId', 'taskId', 'batchId'] as const) {
    if (typeof c[field] === 'string') command[field] = c[field];
  }
  return command;
}

/** The hosts a loopback-only inspector accepts. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]' || hostname === '::1';
}
