/** The `troupe` command: `run` drives an agent on a folder; `inspect` serves the offline inspector. */
import { isLoopbackHost } from '../inspect/protocol.js';
import { type InspectorServer, startInspectorServer } from '../inspect/server.js';
import { redactSecrets } from '../protocol/index.js';
import { runDemo } from './demo.js';
import { forkCommand } from './fork-command.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import { RUN_USAGE, type RunIO, resumeCommand, runCommand } from './run.js';
import { replayCommand, sessionsCommand } from './session-commands.js';
import { testCommand } from './test-command.js';

const USAGE = `Usage: troupe <command> [options]

Commands:
  run "<task>"         run an agent with the built-in workspace tools on a folder (troupe run --help)
  resume [<id>]        continue a session recorded with run --session, the latest by default, after a crash too
  sessions             list the recorded sessions
  replay <id>          run a recorded session again offline, from its journal, and print its events
  fork <id> --at <seq> a new session from one moment of a recorded one, edited if asked, run live
  test <id>            run a recorded session against this build; exit 1 with its first divergence
  inspect              serve the offline inspector (troupe inspect --help)
  hosted <command>     drive agents hosted on Restate: prompt, send, attach, steer, interrupt, approvals, approve,
                       deny, history, usage (troupe hosted --help)
  help                 this text

Each command takes --help.

Try it without a key, in any folder: troupe run --offline "Tell me about this project"`;

const INSPECT_USAGE = `Usage: troupe inspect [--port <n>] [--host 127.0.0.1|localhost] [--demo]

Serves the offline inspector on a loopback address and prints two lines: the page to open in a browser, and the
TROUPE_INSPECT value a program gives connectInspector() to stream its agents there and take approvals from it.
--demo also runs a small offline swarm whose file writes wait for your approval on the page.`;

async function inspect(args: string[], out: (line: string) => void): Promise<InspectorServer | undefined> {
  const { values } = parseCommandLine({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      demo: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    out(INSPECT_USAGE);
    return undefined;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port: not a port number: ${values.port}`);
  }
  if (values.host !== undefined && !isLoopbackHost(values.host)) {
    throw new UsageError(
      `--host: the inspector listens on loopback only (127.0.0.1, localhost), not on ${values.host}`,
    );
  }
  const server = await startInspectorServer({ port, ...(values.host ? { host: values.host } : {}) });
  out(`Troupe inspector: open ${server.pageUrl}`);
  out(`Connect a program with: TROUPE_INSPECT='${server.connectUrl}'`);
  if (values.demo) {
    out('Demo: a swarm is starting; open the page to watch it and answer its approvals.');
    void runDemo({ url: server.connectUrl, log: out }).catch((error: unknown) => out(`demo failed: ${String(error)}`));
  }
  return server;
}

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
          server = await inspect(rest, out);
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
    case 'hosted':
      // Loaded on demand: the Restate SDK is for this command only.
      process.exitCode = await guarded('hosted', async () => (await import('./hosted.js')).hostedCommand(rest, io), io);
      return undefined;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(USAGE);
      return undefined;
    default:
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
