/** `troupe fork <id> --at <seq>`: a new session from one moment of a recorded tree, edited if asked, then run live. */
import { ForkEditError } from '../runtime/index.js';
import type { ForkEdit } from '../session/index.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import { type RunIO, resumeCommand } from './run.js';
import { findRecorded, loadSettings, saveSettings } from './session-files.js';

export const FORK_USAGE = `Usage: troupe fork [options] <id> --at <seq> [--edit-input <text> | --edit-tool-result <call>=<text> |
       --edit-system <text>]

Starts a new session from the moment <seq> of a recorded one (the seq of any of its events; troupe replay --json
prints them): the whole tree as it stood then, its tasks still open and its questions still waiting. An edit is
made there first and kept as the fork's first fact: --edit-input replaces the prompt that waited at that moment,
--edit-tool-result replaces what tool call <call> returned, --edit-system replaces the root agent's system
prompt for the fork's life. The fork then goes on live, on the session's model (or
the one given), as troupe resume would. The recorded session is never written. troupe sessions lists the fork with
its parent and point.

Options:
      --at <seq>        the moment to fork at (required)
      --title <text>    the fork's title (default: the parent's)
      --fork-id <id>    the fork's id (default: a fresh one)
  -C, --cwd <dir>       the folder the sessions were run in (default: the current one)
      --sessions-dir <dir>  where sessions are kept (default: TROUPE_SESSIONS_DIR, else .troupe/sessions in the folder)
  -h, --help            this text
Any other option is the resumed run's (troupe resume --help).`;

/** `troupe fork`: writes the fork, then resumes it. */
export async function forkCommand(args: string[], io: RunIO): Promise<number> {
  const { values, positionals, tokens } = parseCommandLine({
    args,
    allowPositionals: true,
    strict: false,
    tokens: true,
    options: {
      at: { type: 'string' },
      title: { type: 'string' },
      'fork-id': { type: 'string' },
      'edit-input': { type: 'string' },
      'edit-tool-result': { type: 'string' },
      'edit-system': { type: 'string' },
      cwd: { type: 'string', short: 'C' },
      'sessions-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.stdout.write(`${FORK_USAGE}\n`);
    return 0;
  }
  const [wanted] = positionals;
  if (typeof wanted !== 'string') throw new UsageError('no session: troupe fork <id> --at <seq>');
  const atSeq = Number(values.at);
  if (typeof values.at !== 'string' || !Number.isSafeInteger(atSeq) || atSeq < 0) {
    throw new UsageError('--at takes the seq of an event, a whole number from 0');
  }
  const { dir, manager, id } = findRecorded(
    io,
    {
      ...(typeof values.cwd === 'string' ? { cwd: values.cwd } : {}),
      ...(typeof values['sessions-dir'] === 'string' ? { sessionsDir: values['sessions-dir'] } : {}),
    },
    wanted,
  );
  const edit = editOf(values['edit-input'], values['edit-tool-result'], values['edit-system']);
  let forkId: string;
  try {
    const fork = manager.fork(id, {
      atSeq,
      ...(typeof values['fork-id'] === 'string' ? { id: values['fork-id'] } : {}),
      ...(typeof values.title === 'string' ? { title: values.title } : {}),
      ...(edit ? { edit } : {}),
    });
    forkId = fork.id;
    fork.close();
  } catch (error) {
    if (error instanceof ForkEditError) throw new UsageError(error.message);
    throw error;
  }
  const settings = loadSettings(dir, id);
  if (settings) saveSettings(dir, forkId, settings);
  io.stdout.write(`forked ${id} at ${atSeq}: session ${forkId}\n`);
  // The resumed run takes every option this command does not, and the fork's id last.
  const own = new Set(['at', 'title', 'fork-id', 'edit-input', 'edit-tool-result', 'edit-system']);
  const passed = tokens.flatMap((token) => {
    if (token.kind !== 'option' || own.has(token.name)) return [];
    return token.value === undefined ? [token.rawName] : [token.rawName, token.value];
  });
  return resumeCommand([...passed, forkId], io);
}

function editOf(input: unknown, toolResult: unknown, system: unknown): ForkEdit | undefined {
  if ([input, toolResult, system].filter((value) => typeof value === 'string').length > 1) {
    throw new UsageError('one edit at a time: --edit-input, --edit-tool-result or --edit-system');
  }
  if (typeof input === 'string') return { input };
  if (typeof system === 'string') return { system };
  if (typeof toolResult !== 'string') return undefined;
  const at = toolResult.indexOf('=');
  if (at <= 0) throw new UsageError('--edit-tool-result takes <call id>=<text>');
  return { toolResult: { id: toolResult.slice(0, at), text: toolResult.slice(at + 1) } };
}
