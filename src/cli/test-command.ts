/** `troupe test <id>`: a recorded session run against the current build; the first divergence printed, exit 1. */
import { homedir } from 'node:os';
import { replaySessionAsTest, SessionDivergence } from '../testing/index.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import type { RunIO } from './run.js';
import { findRecorded, rerun } from './session-files.js';

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
  const recorded = findRecorded(io, { cwd: values.cwd, sessionsDir: values['sessions-dir'] }, wanted);
  const { journal, config, close } = await rerun(recorded, io.env.HOME || homedir());
  try {
    await replaySessionAsTest(journal.records, config);
    io.stdout.write(`session ${recorded.id} did what it recorded\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof SessionDivergence)) throw error;
    io.stdout.write(`${error.message}\n`);
    return 1;
  } finally {
    await close();
  }
}
