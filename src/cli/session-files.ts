/**
 * Where `troupe` keeps sessions, and what it remembers of each run besides the journal: the folder, the model and
 * the mode it ran with, so that `troupe resume` and `troupe replay` need nothing but the session's id; and how
 * `replay`, `test` and `fork` find a recorded session and configure its agent again.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { projectInstructions, type SessionManager, sessions } from '../index.js';
import type { PermissionMode } from '../permissions/types.js';
import type { ReplayConfig } from '../runtime/replay-agents.js';
import { readJournal } from '../session/index.js';
import { createWorkspaceTools } from '../tools/builtin/index.js';
import { UsageError } from './model-choice.js';

/** What a session run was started with (`<id>.run.json` beside the journal). */
export interface RunSettings {
  folder: string;
  offline: boolean;
  provider?: string;
  model?: string;
  mode: PermissionMode;
  maxSteps: number;
  /** false when the run left out the AGENTS.md files (absent: they were read). */
  agentsMd?: boolean;
  mcpConfig?: string;
}

/**
 * The folder a command works in (`-C`, or the one a session ran in), checked the same way by every command: a
 * missing folder is a usage error, never an empty folder with no sessions in it.
 */
export function existingFolder(folder: string): string {
  const stats = statSync(folder, { throwIfNoEntry: false });
  if (!stats) throw new UsageError(`folder not found: ${folder}`);
  if (!stats.isDirectory()) throw new UsageError(`not a folder: ${folder}`);
  return folder;
}

/** `--sessions-dir`, else `TROUPE_SESSIONS_DIR`, else `.troupe/sessions` in the folder the agent works in. */
export function sessionsDir(folder: string, flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  const chosen = flag ?? env.TROUPE_SESSIONS_DIR;
  return chosen ? path.resolve(cwd, chosen) : path.join(folder, '.troupe', 'sessions');
}

/**
 * The sessions kept in `dir`, created on first use. A `.troupe` folder of our own gets a `.gitignore` of `*`: git
 * leaves the journals alone, and so do the agent's tree, glob and grep, which honour ignore files.
 */
export function sessionStore(dir: string): SessionManager {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true });
    const parent = path.dirname(dir);
    if (path.basename(parent) === '.troupe' && !existsSync(path.join(parent, '.gitignore'))) {
      writeFileSync(path.join(parent, '.gitignore'), '*\n');
    }
  }
  return sessions({ dir });
}

/** The sessions in `dir` for reading; a missing folder is "no sessions", not created. */
export function existingStore(dir: string): SessionManager | undefined {
  return existsSync(dir) ? sessions({ dir }) : undefined;
}

function settingsFile(dir: string, id: string): string {
  return path.join(dir, `${id}.run.json`);
}

export function saveSettings(dir: string, id: string, settings: RunSettings): void {
  writeFileSync(settingsFile(dir, id), `${JSON.stringify(settings, null, 2)}\n`);
}

export function loadSettings(dir: string, id: string): RunSettings | undefined {
  try {
    return JSON.parse(readFileSync(settingsFile(dir, id), 'utf8')) as RunSettings;
  } catch {
    return undefined;
  }
}

/**
 * The session to continue: the one named, or the latest readable one when none is; one clear line when there is none.
 */
export function chooseSession(manager: SessionManager | undefined, dir: string, id: string | undefined): string {
  const known = manager?.list() ?? [];
  if (id !== undefined) {
    if (!known.some((info) => info.id === id)) throw new UsageError(`no session "${id}" in ${dir}`);
    return id;
  }
  const [latest] = known.filter((info) => info.status !== 'damaged').sort((a, b) => b.lastActivity - a.lastActivity);
  if (!latest) throw new UsageError(`no sessions in ${dir} (start one with troupe run --session "<task>")`);
  return latest.id;
}

/** A recorded session, as `troupe replay`, `test` and `fork` find it. */
export interface Recorded {
  /** The folder `-C` names (checked). */
  here: string;
  /** Where its sessions are kept. */
  dir: string;
  manager: SessionManager;
  id: string;
}

/** The session `wanted` among those recorded in the folder `-C` names (`cwd`), or in `--sessions-dir`. */
export function findRecorded(
  io: { cwd: string; env: NodeJS.ProcessEnv },
  flags: { cwd?: string; sessionsDir?: string },
  wanted: string,
): Recorded {
  const here = existingFolder(path.resolve(io.cwd, flags.cwd ?? '.'));
  const dir = sessionsDir(here, flags.sessionsDir, io.env, io.cwd);
  const manager = existingStore(dir);
  const id = chooseSession(manager, dir, wanted);
  if (!manager) throw new UsageError(`no sessions in ${dir}`);
  return { here, dir, manager, id };
}

/** What a recorded session is run again with, offline (`troupe replay`, `troupe test`). */
export interface Rerun {
  journal: NonNullable<ReturnType<typeof readJournal>>;
  settings: RunSettings | undefined;
  config: ReplayConfig;
  close(): Promise<void>;
}

/**
 * The session's root agent as its run configured it: the run's settings, and its workspace tools for their schemas
 * (a replay validates calls as the run did; without the folder, it runs with none). The run asked a person about
 * exactly the calls the journal holds a question for: their recorded answers are given again, and a question the
 * journal holds no answer to is refused rather than left waiting. Every other call the run let
 * through, some by an "always" a replay does not know of.
 */
/** `troupe run`'s subagents: a rerun's agents have the same tools. */
export const RUN_SUBAGENTS = { concurrency: 4, maxDepth: 2 } as const;

/**
 * The system prompt of `troupe run`'s agent working in `folder`, with the project's AGENTS.md files (home → folder)
 * as its standing instructions when asked, as other coding agents do. A rerun gives its replay the same one.
 */
export function runSystem(folder: string, agentsMd: boolean | undefined, home: string): ReplayConfig['system'] {
  const text = [
    `You work in the folder ${folder}; every path is relative to it.`,
    'Look before you change: list, tree, glob, grep and read_file are cheap. Change files with edit (exact text) or',
    'write_file (whole files); read a file before you change it. Run commands with bash; long-running ones go in the',
    'background.',
    'Hand independent pieces of work to subagents with swarm.',
    'Answer briefly when you are done.',
  ].join(' ');
  return agentsMd ? [text, projectInstructions({ cwd: folder, home })] : text;
}

export async function rerun(recorded: Recorded, home = homedir()): Promise<Rerun> {
  const { manager, dir, id } = recorded;
  const journal = readJournal(manager.store, id, () => {});
  if (!journal) throw new UsageError(`no session "${id}" in ${dir}`);
  const settings = loadSettings(dir, id);
  const folder = settings?.folder ?? recorded.here;
  const workspace = await createWorkspaceTools({ roots: folder }).catch(() => undefined);
  const asked = new Set(journal.records.flatMap((r) => (r.k === 'asked' ? [r.id] : [])));
  const answered = new Set(journal.records.flatMap((r) => (r.k === 'approval' ? [r.id] : [])));
  const config: ReplayConfig = {
    id: journal.header.agentId,
    tools: workspace?.tools ?? [],
    system: runSystem(folder, settings?.agentsMd !== false, home),
    subagents: RUN_SUBAGENTS,
    maxSteps: settings?.maxSteps ?? 40,
    permissions: { mode: settings?.mode ?? 'default', cwd: folder },
    policy: (call) =>
      answered.has(call.id)
        ? 'ask'
        : asked.has(call.id)
          ? { decision: 'deny', reason: 'The journal holds no answer to this question.' }
          : 'allow',
  };
  return { journal, settings, config, close: async () => workspace?.close() };
}
