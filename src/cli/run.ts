/** `troupe run "<task>"`: one agent, the built-in tools on a folder, subagents on, drawn live or printed as events. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type Agent, type AgentEventOf, createAgent, type JsonObject, type Model, type RunResult } from '../index.js';
import { connectMcpServers, loadMcpConfig, type McpConnection } from '../mcp/index.js';
import { Permissions } from '../permissions/index.js';
import { PERMISSION_MODES, type PermissionMode, type ToolTraits } from '../permissions/types.js';
import { createWorkspaceTools, type WorkspaceTools } from '../tools/builtin/index.js';
import type { AnyTool } from '../tools/index.js';
import { describeCall } from './agent-rows.js';
import { type Answer, Approvals, type Input } from './approvals.js';
import { chooseModel, UsageError } from './model-choice.js';
import { offlineModel } from './offline.js';
import { JsonView, LiveView, type Output, PlainView, type View } from './views.js';

export const RUN_USAGE = `Usage: troupe run [options] "<task>"

Runs one agent on a folder with the built-in tools (list, tree, glob, grep, read_file, write_file, edit, bash,
job_output, job_kill) and subagents (agent, swarm). On a terminal it draws the tree of agents live and asks before
tool calls the mode does not allow; piped, it prints one line per event (answer approvals with y / n / a lines on
stdin; a closed stdin answers no).

Options:
  -C, --cwd <dir>       the folder to work in (default: the current one)
      --offline         use the scripted offline model: no key, no network
      --provider <name> openai | anthropic (default: from the model's name, TROUPE_PROVIDER, or the key that is set)
      --model <id>      e.g. gpt-5-mini, claude-sonnet-4-5 (default: TROUPE_MODEL, else the provider's default)
      --mode <mode>     default: ask before anything that is not read-only
                        plan: read-only tools only; auto: ask only before destructive tools; bypass: ask nothing
      --mcp-config <file>  MCP servers to add tools from ({ "mcpServers": { … } }, as .mcp.json); never read
                        from the folder on its own, since a config names commands to run
      --max-steps <n>   model calls per turn (default 40)
      --json            print every event as a JSON line (and the result last)
  -h, --help            this text

Keys: OPENAI_API_KEY, ANTHROPIC_API_KEY; OPENAI_BASE_URL for an OpenAI-compatible server.
Ctrl-C interrupts the running turn (the history stays valid); a second Ctrl-C exits at once.
Exit codes: 0 completed, 1 the run failed (model or provider error), 2 usage error, 3 step limit reached,
130 interrupted.`;

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

const EXIT: Record<RunResult['stopReason'], number> = { completed: 0, error: 1, max_steps: 3, interrupted: 130 };

// The subagent tools start agents whose own calls are checked: starting one needs no approval.
const SUPERVISION_TRAITS: ToolTraits = { readOnly: true };

function system(folder: string): string {
  return [
    `You work in the folder ${folder}; every path is relative to it.`,
    'Look before you change: list, tree, glob, grep and read_file are cheap. Change files with edit (exact text) or',
    'write_file (whole files); read a file before you change it. Run commands with bash; long-running ones go in the',
    'background. Hand independent pieces of work to subagents with swarm. Answer briefly when you are done.',
  ].join(' ');
}

interface Parsed {
  task: string;
  mcpConfig?: string;
  folder: string;
  model: Model;
  mode: PermissionMode;
  json: boolean;
  maxSteps: number;
}

function parse(args: string[], io: RunIO): Parsed | 'help' {
  let parsed: ReturnType<typeof parseRunArgs>;
  try {
    parsed = parseRunArgs(args);
  } catch (error) {
    // Node's message goes on about positionals after '--': its first sentence is the one that matters.
    throw new UsageError((error as Error).message.split(/\.\s/)[0] ?? 'bad arguments');
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const task = positionals.join(' ').trim();
  if (!task) throw new UsageError('no task: troupe run "<what to do>" (see troupe run --help)');
  const mode = (values.mode ?? 'default') as PermissionMode;
  if (!PERMISSION_MODES.includes(mode)) {
    throw new UsageError(`unknown mode "${values.mode}": use ${PERMISSION_MODES.join(', ')}`);
  }
  const maxSteps = values['max-steps'] === undefined ? 40 : Number(values['max-steps']);
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new UsageError(`--max-steps: not a positive whole number`);
  const model = values.offline
    ? offlineModel()
    : chooseModel({
        env: io.env,
        ...(values.provider ? { provider: values.provider } : {}),
        ...(values.model ? { model: values.model } : {}),
      });
  return {
    task,
    folder: path.resolve(io.cwd, values.cwd ?? '.'),
    model,
    mode,
    json: values.json === true,
    maxSteps,
    ...(values['mcp-config'] ? { mcpConfig: path.resolve(io.cwd, values['mcp-config']) } : {}),
  };
}

function parseRunArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      cwd: { type: 'string', short: 'C' },
      offline: { type: 'boolean' },
      provider: { type: 'string' },
      model: { type: 'string' },
      mode: { type: 'string' },
      'max-steps': { type: 'string' },
      'mcp-config': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

async function checkFolder(folder: string): Promise<void> {
  const stats = await fs.stat(folder).catch(() => undefined);
  if (!stats) throw new UsageError(`folder not found: ${folder}`);
  if (!stats.isDirectory()) throw new UsageError(`not a folder: ${folder}`);
}

/** Runs the command; resolves with the exit code. Usage errors throw `UsageError` (one line, exit 2). */
export async function runCommand(args: string[], io: RunIO): Promise<number> {
  const options = parse(args, io);
  if (options === 'help') {
    io.stdout.write(`${RUN_USAGE}\n`);
    return 0;
  }
  await checkFolder(options.folder);
  const mcp = options.mcpConfig ? await connectMcp(options.mcpConfig, io.env) : undefined;
  const workspace = await createWorkspaceTools({ roots: options.folder });
  try {
    return await runAgent(options, [...workspace.tools, ...(mcp?.tools ?? [])], workspace, io);
  } finally {
    await workspace.close();
    await mcp?.close();
  }
}

async function connectMcp(file: string, env: NodeJS.ProcessEnv): Promise<McpConnection> {
  try {
    return await connectMcpServers({ servers: await loadMcpConfig(file, env) });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

async function runAgent(options: Parsed, tools: AnyTool[], workspace: WorkspaceTools, io: RunIO): Promise<number> {
  const traits = new Map<string, ToolTraits>(tools.map((tool) => [tool.name, tool]));
  const permissions = new Permissions({ mode: options.mode, cwd: options.folder });
  const agent: Agent = createAgent({
    id: 'main',
    model: options.model,
    tools,
    system: system(options.folder),
    maxSteps: options.maxSteps,
    subagents: { concurrency: 4, maxDepth: 2 },
    policy: (call, who) =>
      permissions.decide(
        call,
        who,
        traits.get(call.name) ??
          (call.name.startsWith('task_') || call.name === 'agent' || call.name === 'swarm'
            ? SUPERVISION_TRAITS
            : undefined),
      ),
  });
  const view: View = options.json
    ? new JsonView(io.stdout)
    : io.stdout.isTTY
      ? new LiveView(io.stdout, agent.id, options.model.id)
      : new PlainView(io.stdout, agent.id, options.model.id);
  let interrupts = 0;
  const interrupt = () => {
    interrupts++;
    if (interrupts === 1) {
      view.note('Interrupting… (Ctrl-C again to exit at once)');
      agent.interrupt();
    } else {
      view.finish(undefined);
      void workspace.close().finally(() => io.exit(130));
    }
  };
  const approvals = new Approvals(io.stdin, interrupt);
  const removeSigint = io.onSigint(interrupt);
  // The views show the whole tree, and a subagent's approval is answered here too.
  agent.on('*', (event) => view.onEvent(event), { subtree: true });
  agent.on('approval_requested', (event) => void answer(event), { subtree: true });

  async function answer(event: AgentEventOf<'approval_requested'>): Promise<void> {
    const what = `${event.agentId} wants to run ${describeCall(event)}`;
    const reply: Answer = await approvals.ask(() => {
      view.pause();
      io.stdout.write(
        options.json
          ? `${JSON.stringify({ type: 'question', toolCallId: event.toolCallId, agentId: event.agentId, text: `${what}? y / n / a` })}\n`
          : `? ${what} — [y]es / [n]o / [a]lways: `,
      );
    });
    if (!options.json) io.stdout.write(`${reply}\n`);
    view.resume();
    if (reply === 'no') {
      agent.deny(event, 'The user declined this call.');
      return;
    }
    if (reply === 'always') {
      const rule = permissions.rememberCall(
        { type: 'tool_call', id: event.toolCallId, name: event.toolName, arguments: event.args as JsonObject },
        traits.get(event.toolName),
      );
      view.note(`allowed from now on: ${rule}`);
    }
    agent.approve(event);
  }

  let result: RunResult | undefined;
  try {
    result = await agent.prompt(options.task);
    return EXIT[result.stopReason];
  } finally {
    removeSigint();
    approvals.close();
    view.finish(result, agent.subtreeUsage);
    await agent.stop();
  }
}
