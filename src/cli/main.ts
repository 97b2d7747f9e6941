/**
 * The `troupe` command: `run` drives an agent on a folder; the verbs (`prompt`, `history`, …) drive a session of
 * the folder or, with `--restate`, an agent hosted on Restate; `inspect` serves the offline inspector.
 */
import type { InspectorServer } from '../inspect/server.js';
import { redactSecrets } from '../protocol/index.js';
import { forkCommand } from './fork-command.js';
import { inspectCommand } from './inspect-command.js';
import { UsageError } from './model-choice.js';
import { RUN_USAGE, type RunIO, resumeCommand, runCommand } from './run.js';
import { replayCommand, sessionsCommand } from './session-commands.js';
import { testCommand } from './test-command.js';
import { isVerb, verbCommand } from './verbs.js';

const USAGE = `Usage: troupe <command> [options]

Commands:
  run "<task>"         run an agent with the built-in workspace tools on a folder (troupe run --help)
  resume [<id>]        continue a session recorded with run --session, the latest by default, after a crash too
  sessions             list the recorded sessions
  replay <id>          run a recorded session again offline, from its journal, and print its events
  fork <id> --at <seq> a new session from one moment of a recorded one, edited if asked, run live
  test <id>            run a recorded session against this build; exit 1 with its first divergence
  inspect [<id|file>]  serve the offline inspector; given a session, its timeline (troupe inspect --help)
  help                 this text

Verbs: a session of the folder, or with --restate <ingress> an agent hosted on Restate (troupe prompt --help)
  prompt <id> "<text>" run a turn and wait for it     history <id>    the conversation, as stored
  usage <id>           tokens over its turns           approvals <id>  the calls waiting for approval
  send, attach, steer, interrupt, approve, deny: hosted agents only (a session's turn is reached where it runs)

Each command takes --help.

Try it without a key, in any folder: troupe run --offline "Tell me about this project"`;

/**
 * Runs one `troupe` command. Returns the inspector server for `inspect` (the caller keeps it running), nothing
 * for the others; sets `process.exitCode` on a usage error.
 */
export async function main(
  argv: string[],
  out: (line: string) => void = console.log,
  io: RunIO = processIO(),
): Promise<InspectorServer | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'inspect': {
      let server: InspectorServer | undefined;
      process.exitCode = await guarded(
        'inspect',
        async () => {
          server = await inspectCommand(rest, out, io);
          return 0;
        },
        io,
      );
      return server;
    }
    case 'run':
      process.exitCode = await guarded('run', () => runCommand(rest, io), io);
      return undefined;
    case 'resume':
      process.exitCode = await guarded('resume', () => resumeCommand(rest, io), io);
      return undefined;
    case 'sessions':
      process.exitCode = await guarded('sessions', async () => sessionsCommand(rest, io), io);
      return undefined;
    case 'replay':
      process.exitCode = await guarded('replay', () => replayCommand(rest, io), io);
      return undefined;
    case 'test':
      process.exitCode = await guarded('test', () => testCommand(rest, io), io);
      return undefined;
    case 'fork':
      process.exitCode = await guarded('fork', () => forkCommand(rest, io), io);
      return undefined;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(USAGE);
      return undefined;
    default:
      if (isVerb(command)) {
        process.exitCode = await guarded(command, () => verbCommand(command, rest, io), io);
        return undefined;
      }
      out(`troupe: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      process.exitCode = 2;
      return undefined;
  }
}

/** A command, with a usage error as one line on stderr and exit code 2. */
async function guarded(name: string, command: () => Promise<number>, io: RunIO): Promise<number> {
  try {
    return await command();
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(redactSecrets(`troupe ${name}: ${error.message}`));
    return 2;
  }
}

export function processIO(): RunIO {
  return {
    stdout: {
      write: (text) => process.stdout.write(text),
      get columns() {
        return process.stdout.columns;
      },
      isTTY: process.stdout.isTTY === true,
    },
    stderr: (line) => process.stderr.write(`${redactSecrets(line)}\n`),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    onSigint(handler) {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
    exit: (code) => process.exit(code),
  };
}

export { RUN_USAGE };
