/**
 * `troupe run "<task>"` and `troupe resume`: one agent, the built-in tools on a folder, subagents on, drawn live or
 * printed as events, recorded in a session when asked (the session journals the whole tree). `troupe prompt` on a
 * session starts the same agent (`startRun`) and shows only its outcome.
 */
import { homedir } from 'node:os';
import { type Agent, type AgentEventOf, createAgent, type JsonObject, type RunResult, type Session } from '../index.js';
import { connectMcpServers, loadMcpConfig, type McpConnection } from '../mcp/index.js';
import { Permissions } from '../permissions/index.js';
import type { ToolTraits } from '../permissions/types.js';
import { createWorkspaceTools, type WorkspaceTools } from '../tools/builtin/index.js';
import type { AnyTool } from '../tools/index.js';
import type { Input } from './approvals.js';
import { type Inspection, openInspection } from './inspection.js';
import { UsageError } from './model-choice.js';
import { parseResume, parseRun, RESUME_USAGE, RUN_USAGE, type RunOptions } from './run-options.js';
import { RUN_SUBAGENTS, type RunSettings, runSystem, saveSettings, sessionStore } from './session-files.js';
import { awaitTurn, type StartedTurn, type Target } from './target.js';
import { JsonView, LiveView, type Output, PlainView, type TurnEnd, type View } from './views.js';

export interface RunIO {
  stdout: Output & { isTTY?: boolean };
  stdin: Input;
  /** One line of error output. */
  stderr(line: string): void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Registers the Ctrl-C handler; returns its removal. */
  onSigint(handler: () => void): () => void;
  /** Leaves at once (the second Ctrl-C). */
  exit(code: number): void;
}

const ROOT_ID = 'main';

/** `troupe run`; resolves with the exit code. Usage errors throw `UsageError` (one line, exit 2). */
export async function runCommand(args: string[], io: RunIO): Promise<number> {
  const options = parseRun(args, io);
  if (options === 'help') {
    io.stdout.write(`${RUN_USAGE}\n`);
    return 0;
  }
  return drawn(options, io);
}

/** `troupe resume`: continues a session (the latest by default), then its new task if one is given. */
export async function resumeCommand(args: string[], io: RunIO): Promise<number> {
  const options = parseResume(args, io);
  if (options === 'help') {
    io.stdout.write(`${RESUME_USAGE}\n`);
    return 0;
  }
  return drawn(options, io);
}

/** A run drawn as `run` and `resume` draw it: the tree live on a terminal, a line per event piped, or JSON. */
async function drawn(options: RunOptions, io: RunIO): Promise<number> {
  const view: View = options.json
    ? new JsonView(io.stdout)
    : io.stdout.isTTY
      ? new LiveView(io.stdout, ROOT_ID, options.model.id)
      : new PlainView(io.stdout, ROOT_ID, options.model.id);
  return awaitTurn(await startRun(options, io, view), { io, view, json: options.json });
}

/**
 * Starts `troupe run`'s agent on its folder with `options`, shown through `view`: its session opened (and said
 * when `announce`), its inspector joined. Everything it opened is let go by the turn's `close`, or here if it
 * cannot start.
 */
export async function startRun(options: RunOptions, io: RunIO, view: View, announce = true): Promise<StartedTurn> {
  const opened: Array<() => unknown> = [];
  const close = async () => {
    for (const release of opened.reverse()) await release();
  };
  try {
    const mcp = options.mcpConfig ? await connectMcp(options.mcpConfig, io.env) : undefined;
    if (mcp) opened.push(() => mcp.close());
    for (const warning of mcp?.warnings ?? []) io.stderr(`troupe: ${warning}`);
    const workspace = await createWorkspaceTools({ roots: options.folder });
    opened.push(() => workspace.close());
    const inspection = options.inspect ? await openInspection(options.inspect, io.env) : undefined;
    if (inspection) opened.push(() => inspection.close());
    const session = options.session ? openSession(options.session, options.settings) : undefined;
    if (session) opened.push(() => session.close());
    const tools = [...workspace.tools, ...(mcp?.tools ?? [])];
    const run = startAgent(options, tools, io, view, { workspace, session, inspection, announce });
    opened.push(() => run.agent.stop());
    return { ...run, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The session to record in: a new one, or the one named (continued when it exists). */
function openSession(where: { dir: string; id?: string }, settings: RunSettings): Session {
  const manager = sessionStore(where.dir);
  let session: Session;
  try {
    const exists = where.id !== undefined && manager.list().some((info) => info.id === where.id);
    session =
      exists && where.id
        ? manager.open(where.id)
        : manager.create({ agentId: ROOT_ID, ...(where.id ? { id: where.id } : {}) });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  saveSettings(where.dir, session.id, settings);
  return session;
}

async function connectMcp(file: string, env: NodeJS.ProcessEnv): Promise<McpConnection> {
  try {
    return await connectMcpServers({ servers: await loadMcpConfig(file, env) });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

interface Opened {
  workspace: WorkspaceTools;
  session: Session | undefined;
  inspection: Inspection | undefined;
  announce: boolean;
}

function startAgent(
  options: RunOptions,
  tools: AnyTool[],
  io: RunIO,
  view: View,
  { workspace, session, inspection, announce }: Opened,
): Omit<StartedTurn, 'close'> & { agent: Agent } {
  const traits = new Map<string, ToolTraits>(tools.map((tool) => [tool.name, tool]));
  const permissions = new Permissions({ mode: options.mode, cwd: options.folder });
  const resuming = session?.status === 'interrupted';
  const agent: Agent = createAgent({
    id: ROOT_ID,
    model: options.model,
    tools,
    // As other coding agents do, the project's AGENTS.md files are its standing instructions (home → folder).
    system: runSystem(options.folder, options.agentsMd, io.env.HOME || homedir()),
    maxSteps: options.maxSteps,
    permissions,
    ...(inspection ? { inspect: inspection.connection.inspect } : {}),
    subagents: RUN_SUBAGENTS,
    ...(session ? { session } : {}),
  });
  if (inspection) {
    // The page's commands (approve, deny, steer, interrupt) go through the agent's public methods.
    inspection.connection.attach(agent);
    view.note(
      inspection.pageUrl
        ? `inspector: open ${inspection.pageUrl}`
        : `inspector: streaming to ${inspection.joined ?? 'the inspector'}`,
    );
  }
  if (session && (announce || resuming)) view.note(`${resuming ? 'resuming' : 'session'} ${session.id}`);
  // The views show the whole tree, and a subagent's approval is answered here too.
  agent.on('*', (event) => view.onEvent(event), { subtree: true });
  let lastEnd: AgentEventOf<'turn_end'> | undefined;
  agent.on('turn_end', (event) => {
    lastEnd = event;
  });
  const target = embeddedTarget(agent, traits, () => {
    view.finish(undefined);
    // What the journal holds is written before leaving: a later resume starts from it.
    session?.close();
    void workspace.close().finally(() => io.exit(130));
  });

  const turn = async (): Promise<TurnEnd | undefined> => {
    let result: RunResult | undefined;
    if (resuming && session) {
      // The run in flight when the session stopped goes on first (its journal answers what it already did).
      await session.idle();
      result = lastEnd && resultOf(lastEnd, agent);
    }
    if (options.task) result = await agent.prompt(options.task);
    else if (!resuming) view.note('nothing was in flight; give a task to go on: troupe resume <id> "<task>"');
    return result && { ...result, agentId: agent.id };
  };
  return { agent, target, turn: turn(), total: () => agent.subtreeUsage };
}

/**
 * The agents of this process: a call waits from its `approval_requested` event until it starts running or its
 * result joins the history (answered here, on the inspector's page, or closed by an interrupt). "Always" remembers
 * a rule in the agent's permissions (`traits` say which argument a tool's rule is about); the second Ctrl-C leaves
 * the process (`leave`).
 */
export function embeddedTarget(agent: Agent, traits: Map<string, ToolTraits>, leave: () => void): Target {
  return {
    remembers: true,
    interrupting: 'Interrupting… (Ctrl-C again to exit at once)',
    interrupt: async () => {
      agent.interrupt();
    },
    leave: () => {
      leave();
      return undefined;
    },
    answer: async (call, answer) => {
      if (answer === 'no') {
        agent.deny(call, 'The user declined this call.');
        return undefined;
      }
      let said: string | undefined;
      if (answer === 'always') {
        const rule = agent.permissions.rememberCall(
          { type: 'tool_call', id: call.toolCallId, name: call.toolName, arguments: call.args as JsonObject },
          traits.get(call.toolName),
        );
        said = `allowed from now on: ${rule}`;
      }
      agent.approve(call);
      return said;
    },
    watch: (watcher) => {
      const subtree = { subtree: true };
      const offs = [
        agent.on('approval_requested', (e) => watcher.waiting(e), subtree),
        agent.on('tool_execution_start', (e) => watcher.settled(e), subtree),
        agent.on(
          'message_end',
          (e) => {
            if (e.message.role !== 'tool') return;
            for (const result of e.message.content)
              watcher.settled({ agentId: e.agentId, toolCallId: result.toolCallId });
          },
          subtree,
        ),
      ];
      return async () => {
        for (const off of offs) off();
      };
    },
  };
}

/** A resumed turn's outcome, as `prompt()` would have given it. */
function resultOf(end: AgentEventOf<'turn_end'>, agent: Agent): RunResult {
  const last = agent.messages.findLast((message) => message.role === 'assistant');
  const text = last?.content.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';
  return {
    stopReason: end.stopReason,
    messages: [],
    text,
    usage: end.usage,
    ...(end.error ? { error: end.error as RunResult['error'] } : {}),
  };
}

export { RESUME_USAGE, RUN_USAGE };
