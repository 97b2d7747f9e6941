/** `troupe test <id>`: a recorded session run against the current build; the first divergence printed, exit 1. */
import path from 'node:path';
import { readJournal } from '../session/index.js';
import { replaySessionAsTest, SessionDivergence } from '../testing/index.js';
import { createWorkspaceTools } from '../tools/builtin/index.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import type { RunIO } from './run.js';
import { chooseSession, existingFolder, existingStore, loadSettings, sessionsDir } from './session-files.js';

export const TEST_USAGE = `Usage: troupe test [options] <id>

Runs a recorded session against this build of Troupe and its workspace tools, on the recorded model answers and
tool results (no model is called, no tool runs), and stops at the first fact that differs: which agent, turn and
step, and what differed (a tool called, its arguments, a result, a state, a stop reason). Exit codes: 0 it did what
it recorded, 1 it went another way, 2 usage error.

Options:
  -C, --cwd <dir>       the folder the sessions were run in (default: the current one)
      --sessions-dir <dir>  where sessions are kept (default: TROUPE_SESSIONS_DIR, else .troupe/sessions in the folder)
  -h, --help            this text`;

export async function testCommand(args: string[], io: RunIO): Promise<number> {
  const { values, positionals } = parseCommandLine({
    args,
    allowPositionals: true,
    options: {
      cwd: { type: 'string', short: 'C' },
      'sessions-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.stdout.write(`${TEST_USAGE}\n`);
    return 0;
  }
  const [wanted, ...extra] = positionals;
  if (!wanted || extra.length > 0) throw new UsageError('troupe test <id> (troupe sessions lists them)');
  const here = existingFolder(path.resolve(io.cwd, values.cwd ?? '.'));
  const dir = sessionsDir(here, values['sessions-dir'], io.env, io.cwd);
  const manager = existingStore(dir);
  const id = chooseSession(manager, dir, wanted);
  if (!manager) throw new UsageError(`no sessions in ${dir}`);
  const journal = readJournal(manager.store, id, () => {});
  if (!journal) throw new UsageError(`no session "${id}" in ${dir}`);
  const settings = loadSettings(dir, id);
  const folder = settings?.folder ?? here;
  const workspace = await createWorkspaceTools({ roots: folder });
  const asked = new Set(journal.records.flatMap((r) => (r.k === 'asked' ? [r.id] : [])));
  const answered = new Set(journal.records.flatMap((r) => (r.k === 'approval' ? [r.id] : [])));
  try {
    await replaySessionAsTest(journal.records, {
      id: journal.header.agentId,
      tools: workspace.tools,
      maxSteps: settings?.maxSteps ?? 40,
      permissions: { mode: settings?.mode ?? 'default', cwd: folder },
      // As troupe replay: the recorded answers are given again to the questions the run asked, a question the
      // journal holds no answer to is refused rather than left waiting, and the other calls go through.
      policy: (call) =>
        answered.has(call.id)
          ? 'ask'
          : asked.has(call.id)
            ? { decision: 'deny', reason: 'The journal holds no answer to this question.' }
            : 'allow',
    });
    io.stdout.write(`session ${id} did what it recorded\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof SessionDivergence)) throw error;
    io.stdout.write(`${error.message}\n`);
    return 1;
  } finally {
    await workspace.close();
  }
}
