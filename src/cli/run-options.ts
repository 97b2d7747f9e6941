/** The options of `troupe run` and `troupe resume`, read from the command line (and, for resume, the session). */
import path from 'node:path';
import type { Model } from '../index.js';
import { PERMISSION_MODES, type PermissionMode } from '../permissions/types.js';
import { chooseModel, parseCommandLine, providerNameOf, UsageError } from './model-choice.js';
import { offlineModel } from './offline.js';
import {
  chooseSession,
  existingFolder,
  existingStore,
  loadSettings,
  type RunSettings,
  sessionsDir,
} from './session-files.js';

const MODEL_OPTIONS = `  -C, --cwd <dir>       the folder to work in (default: the current one)
      --offline         use the scripted offline model: no key, no network
      --provider <name> openai | anthropic (default: from the model's name, TROUPE_PROVIDER, or the key that is set)
      --model <id>      e.g. gpt-5-mini, claude-sonnet-4-5 (default: TROUPE_MODEL, else the provider's default)
      --mode <mode>     default: ask before anything that is not read-only
                        plan: read-only tools only; auto: ask only before destructive tools; bypass: ask nothing
      --mcp-config <file>  MCP servers to add tools from ({ "mcpServers": { … } }, as .mcp.json); never read
                        from the folder on its own, since a config names commands to run
      --max-steps <n>   model calls per turn (default 40)
      --no-agents-md    leave out the AGENTS.md files (read by default from your home down to the folder, outer
                        first, and sent as project instructions with every request)
      --json            print every event as a JSON line (and the result last)
      --inspect         stream the run to the offline inspector, whose page can answer its questions, steer and
                        interrupt it: the one TROUPE_INSPECT names (a troupe inspect left running), else one served
                        for this run (its page address is printed first; it closes when the run ends)
      --inspect=<url>   the same, to the inspector at that ws:// address (what troupe inspect prints)
      --sessions-dir <dir>  where sessions are kept (default: TROUPE_SESSIONS_DIR, else .troupe/sessions in the
                        folder; troupe adds a .gitignore there so git and the agent's search tools skip it)`;

const ENDINGS = `Keys: OPENAI_API_KEY, ANTHROPIC_API_KEY; OPENAI_BASE_URL for an OpenAI-compatible server.
Ctrl-C interrupts the running turn (the history stays valid); a second Ctrl-C exits at once.
Exit codes: 0 completed, 1 the run failed (model or provider error), 2 usage error, 3 step limit reached,
130 interrupted.`;

export const RUN_USAGE = `Usage: troupe run [options] "<task>"

Runs one agent on a folder with the built-in tools (list, tree, glob, grep, read_file, write_file, edit, bash,
job_output, job_kill) and subagents (agent, swarm). On a terminal it draws the tree of agents live and asks before
tool calls the mode does not allow; piped, it prints one line per event (answer approvals with y / n / a lines on
stdin; a closed stdin answers no).

Options:
      --session         record the run in a new session (continue it with troupe resume; list with troupe sessions)
      --session=<id>    record it in session <id>: continues that session with this task if it exists, else starts it
                        (the journal covers the agent and its subagents)
${MODEL_OPTIONS}
  -h, --help            this text

${ENDINGS}`;

export const RESUME_USAGE = `Usage: troupe resume [options] [<id>] ["<task>"]

Continues a session recorded with troupe run --session: the latest one when no id is given. A run that was cut
short (Ctrl-C twice, a crash, a kill) resumes where its journal stops: answers and tool results already recorded
are not asked or run again, a tool that was running is closed with an "interrupted by a restart" result, and a
question still waiting is asked again. With a task, the session then goes on with it.
The folder, model and mode are the session's own unless given again.

Options:
${MODEL_OPTIONS}
  -h, --help            this text

${ENDINGS}`;

/** What a run (or a resume) goes ahead with. */
export interface RunOptions {
  task?: string;
  folder: string;
  model: Model;
  mode: PermissionMode;
  json: boolean;
  maxSteps: number;
  /** Whether the AGENTS.md files from the home down to the folder go into the system prompt. */
  agentsMd: boolean;
  mcpConfig?: string;
  /** `--inspect` (true) or `--inspect=<url>`. */
  inspect?: true | string;
  /** The session to record in; `id` undefined: a new one. */
  session?: { dir: string; id?: string };
  /** What the session remembers of this run, for a later resume or replay. */
  settings: RunSettings;
}

interface Env {
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** The options of an agent run in this process (`run`, `resume`, and `prompt` on a session). */
export const RUN_OPTIONS = {
  cwd: { type: 'string', short: 'C' },
  offline: { type: 'boolean' },
  provider: { type: 'string' },
  model: { type: 'string' },
  mode: { type: 'string' },
  'max-steps': { type: 'string' },
  'mcp-config': { type: 'string' },
  'sessions-dir': { type: 'string' },
  'no-agents-md': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  inspect: { type: 'boolean' },
} as const;

/** `--<name>=<value>` taken out of the arguments, for a flag that is also used alone (its value is never the next word). */
export function takeValue(args: string[], name: string): { rest: string[]; value?: string } {
  let value: string | undefined;
  const rest = args.filter((arg) => {
    if (!arg.startsWith(`--${name}=`)) return true;
    value = arg.slice(name.length + 3);
    const what = name === 'session' ? 'id' : 'url';
    if (!value) throw new UsageError(`--${name}=<${what}>: the ${what} is empty`);
    return false;
  });
  return value === undefined ? { rest } : { rest, value };
}

function parseRunLine(args: string[], extra: { session?: { type: 'boolean' } } = {}) {
  return parseCommandLine({
    args,
    allowPositionals: true,
    options: { ...RUN_OPTIONS, ...extra },
  });
}

/** The run options as parsed (any command line that includes {@link RUN_OPTIONS}). */
export type RunValues = ReturnType<typeof parseRunLine>['values'];
type Values = RunValues;

function modeOf(value: string | undefined): PermissionMode {
  const mode = (value ?? 'default') as PermissionMode;
  if (!PERMISSION_MODES.includes(mode)) {
    throw new UsageError(`unknown mode "${value}": use ${PERMISSION_MODES.join(', ')}`);
  }
  return mode;
}

function maxStepsOf(value: string | undefined, fallback: number): number {
  const maxSteps = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new UsageError(`--max-steps: not a positive whole number`);
  return maxSteps;
}

/** The model from the flags, falling back on what a session ran with. */
function modelOf(values: Values, io: Env, saved?: RunSettings): { model: Model; settings: Partial<RunSettings> } {
  const named = values.provider !== undefined || values.model !== undefined;
  const offline = values.offline === true || (!named && saved?.offline === true);
  if (offline) return { model: offlineModel(), settings: { offline: true } };
  const provider = values.provider ?? (named ? undefined : saved?.provider);
  const name = values.model ?? (named ? undefined : saved?.model);
  const model = chooseModel({
    env: io.env,
    ...(provider ? { provider } : {}),
    ...(name ? { model: name } : {}),
  });
  return { model, settings: { offline: false, provider: providerNameOf(model), model: model.id } };
}

function inspectOf(flag: boolean | undefined, url: string | undefined): { inspect?: true | string } {
  if (url !== undefined) return { inspect: url };
  return flag ? { inspect: true } : {};
}

/** `troupe run`: `--session` alone or `--session=<id>` (an id is never taken from the next word: that is the task). */
export function parseRun(args: string[], io: Env): RunOptions | 'help' {
  const { rest: withoutSession, value: sessionId } = takeValue(args, 'session');
  const { rest, value: inspectUrl } = takeValue(withoutSession, 'inspect');
  const { values, positionals } = parseRunLine(rest, { session: { type: 'boolean' } });
  if (values.help) return 'help';
  const task = positionals.join(' ').trim();
  if (!task) throw new UsageError('no task: troupe run "<what to do>" (see troupe run --help)');
  const recorded = (values as { session?: boolean }).session === true || sessionId !== undefined;
  return newRun(task, recorded ? { ...(sessionId ? { id: sessionId } : {}) } : undefined, values, inspectUrl, io);
}

/** A run from its flags alone: a new session (or none), or the session `id` started. */
function newRun(
  task: string,
  session: { id?: string } | undefined,
  values: Values,
  inspectUrl: string | undefined,
  io: Env,
): RunOptions {
  const mode = modeOf(values.mode);
  const maxSteps = maxStepsOf(values['max-steps'], 40);
  const { model, settings } = modelOf(values, io);
  const folder = existingFolder(path.resolve(io.cwd, values.cwd ?? '.'));
  const mcpConfig = values['mcp-config'] ? path.resolve(io.cwd, values['mcp-config']) : undefined;
  const where = session && { dir: sessionsDir(folder, values['sessions-dir'], io.env, io.cwd), ...session };
  const agentsMd = values['no-agents-md'] !== true;
  return runOptions(
    { task, folder, model, settings, mode, maxSteps, agentsMd, mcpConfig, session: where },
    values,
    inspectUrl,
  );
}

/**
 * `troupe prompt <id> "<text>"` on a session: continues session `id` as `resume <id> "<text>"` does when it exists,
 * else starts it as `run --session=<id> "<text>"` does.
 */
export function promptOptions(id: string, text: string, values: Values, inspectUrl: string | undefined, io: Env) {
  const folderFlag = values.cwd === undefined ? undefined : existingFolder(path.resolve(io.cwd, values.cwd));
  const dir = sessionsDir(folderFlag ?? io.cwd, values['sessions-dir'], io.env, io.cwd);
  const exists =
    existingStore(dir)
      ?.list()
      .some((info) => info.id === id) === true;
  return exists ? resumed(id, text, values, inspectUrl, io) : newRun(text, { id }, values, inspectUrl, io);
}

/** What `run` and `resume` both build once their own flags (and, for resume, the saved settings) are read. */
function runOptions(
  chosen: Pick<RunOptions, 'folder' | 'model' | 'mode' | 'maxSteps' | 'agentsMd'> & {
    task?: string;
    settings: Partial<RunSettings>;
    mcpConfig: string | undefined;
    session: RunOptions['session'];
  },
  values: Values,
  inspectUrl: string | undefined,
): RunOptions {
  const { task, folder, model, settings, mode, maxSteps, agentsMd, mcpConfig, session } = chosen;
  return {
    ...(task ? { task } : {}),
    folder,
    model,
    mode,
    json: values.json === true,
    maxSteps,
    agentsMd,
    ...inspectOf(values.inspect, inspectUrl),
    ...(mcpConfig ? { mcpConfig } : {}),
    ...(session ? { session } : {}),
    settings: {
      folder,
      offline: false,
      ...settings,
      mode,
      maxSteps,
      ...(agentsMd ? {} : { agentsMd: false }),
      ...(mcpConfig ? { mcpConfig } : {}),
    },
  };
}

/** `troupe resume [<id>] ["<task>"]`: the session's own settings, overridden by any flag given again. */
export function parseResume(args: string[], io: Env): RunOptions | 'help' {
  const { rest, value: inspectUrl } = takeValue(args, 'inspect');
  const { values, positionals } = parseRunLine(rest);
  if (values.help) return 'help';
  if (positionals.length > 2) throw new UsageError('too many arguments: troupe resume [<id>] ["<task>"]');
  const [id, task] = positionals;
  return resumed(id, task, values, inspectUrl, io);
}

function resumed(
  id: string | undefined,
  task: string | undefined,
  values: Values,
  inspectUrl: string | undefined,
  io: Env,
): RunOptions {
  const folderFlag = values.cwd === undefined ? undefined : existingFolder(path.resolve(io.cwd, values.cwd));
  const dir = sessionsDir(folderFlag ?? io.cwd, values['sessions-dir'], io.env, io.cwd);
  const chosen = chooseSession(existingStore(dir), dir, id);
  const saved = loadSettings(dir, chosen);
  const folder = folderFlag ?? existingFolder(saved?.folder ?? io.cwd);
  const mode = values.mode === undefined && saved ? saved.mode : modeOf(values.mode);
  const maxSteps = maxStepsOf(values['max-steps'], saved?.maxSteps ?? 40);
  const { model, settings } = modelOf(values, io, saved);
  const mcpFlag = values['mcp-config'] ? path.resolve(io.cwd, values['mcp-config']) : undefined;
  const mcpConfig = mcpFlag ?? saved?.mcpConfig;
  // Left out once, left out on every resume of that session (a flag given again says so too).
  const agentsMd = values['no-agents-md'] !== true && saved?.agentsMd !== false;
  const session = { dir, id: chosen };
  const trimmed = task?.trim();
  return runOptions(
    { ...(trimmed ? { task: trimmed } : {}), folder, model, settings, mode, maxSteps, agentsMd, mcpConfig, session },
    values,
    inspectUrl,
  );
}
