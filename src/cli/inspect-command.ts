/**
 * `troupe inspect`: serves the offline inspector. Given a session id or a journal file, its page opens that
 * recorded session as a timeline (and lists the others of its store); a fork made there is written by
 * `manager.fork` and resumed live as `troupe fork` would, its run streamed to the same page.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { sessions } from '../index.js';
import { isLoopbackHost } from '../inspect/protocol.js';
import type { RecordedSessions } from '../inspect/server/sessions.js';
import { type InspectorServer, startInspectorServer } from '../inspect/server.js';
import { SqliteStore } from '../session/index.js';
import { runDemo } from './demo.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import { type RunIO, resumeCommand } from './run.js';
import { existingFolder, existingStore, loadSettings, saveSettings, sessionsDir } from './session-files.js';

export const INSPECT_USAGE = `Usage: troupe inspect [options] [<session id> | <journal file>]

Serves the offline inspector on a loopback address and prints two lines: the page to open in a browser, and the
TROUPE_INSPECT value a program gives connectInspector() to stream its agents there and take approvals from it.

Given a session (an id of the sessions folder, a .jsonl journal file, or a SQLite store file), the page opens it
as a timeline: every agent a lane, scrubbed moment by moment from the journal alone (no model is called, no tool
runs). It lists the other sessions of the same store, and forks one at the moment shown, edited if asked; the
fork runs live on the session's model (troupe resume's options apply) and shows in the list with its parent.

Options:
      --port <n>            the port (default: any free one)
      --host <host>         127.0.0.1 or localhost
      --demo                also run a small offline swarm whose file writes wait for your approval on the page
  -C, --cwd <dir>           the folder the sessions were run in (default: the current one)
      --sessions-dir <dir>  where sessions are kept (default: TROUPE_SESSIONS_DIR, else .troupe/sessions)
      --offline             run forks on the scripted offline model
  -h, --help                this text`;

export async function inspectCommand(
  args: string[],
  out: (line: string) => void,
  io: RunIO,
): Promise<InspectorServer | undefined> {
  const { values, positionals } = parseCommandLine({
    args,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      demo: { type: 'boolean' },
      cwd: { type: 'string', short: 'C' },
      'sessions-dir': { type: 'string' },
      offline: { type: 'boolean' },
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
  if (positionals.length > 1) throw new UsageError('one session at a time: troupe inspect <session id | file>');
  let server: InspectorServer | undefined;
  const recorded = recordedSessions(positionals[0], values, io, (forkId, dir) => {
    const live = server ? [`--inspect=${server.connectUrl}`] : [];
    return resumeCommand([...live, ...(values.offline ? ['--offline'] : []), '--sessions-dir', dir, forkId], io);
  });
  server = await startInspectorServer({
    port,
    ...(values.host ? { host: values.host } : {}),
    ...(recorded ? { sessions: recorded } : {}),
  });
  const page = recorded?.open ? `${server.pageUrl}&session=${encodeURIComponent(recorded.open)}` : server.pageUrl;
  out(`Troupe inspector: open ${page}`);
  out(`Connect a program with: TROUPE_INSPECT='${server.connectUrl}'`);
  if (values.demo) {
    out('Demo: a swarm is starting; open the page to watch it and answer its approvals.');
    void runDemo({ url: server.connectUrl, log: out }).catch((error: unknown) => out(`demo failed: ${String(error)}`));
  }
  return server;
}

/**
 * The store a session argument names: a journal file is its folder's JSONL store (the session its file name), a
 * `.db` file a SQLite store, anything else an id in the sessions folder. Without an argument, the sessions folder's
 * store when there is one.
 */
function recordedSessions(
  target: string | undefined,
  values: { cwd?: string; 'sessions-dir'?: string },
  io: RunIO,
  resume: (forkId: string, dir: string) => Promise<number>,
): RecordedSessions | undefined {
  const file = target === undefined ? undefined : statSync(path.resolve(io.cwd, target), { throwIfNoEntry: false });
  let dir: string;
  let manager: RecordedSessions['manager'] | undefined;
  let open = target;
  let runnable = true;
  if (target !== undefined && file?.isFile()) {
    const full = path.resolve(io.cwd, target);
    dir = path.dirname(full);
    if (full.endsWith('.jsonl')) {
      manager = sessions({ dir });
      open = path.basename(full, '.jsonl');
    } else {
      // troupe resume reads JSONL sessions folders: a SQLite store's sessions are scrubbed, not forked, here.
      manager = sessions({ store: new SqliteStore(full) });
      open = undefined;
      runnable = false;
    }
  } else {
    const folder = existingFolder(path.resolve(io.cwd, values.cwd ?? '.'));
    dir = sessionsDir(folder, values['sessions-dir'], io.env, io.cwd);
    manager = existingStore(dir);
    if (!manager && target !== undefined) throw new UsageError(`no sessions in ${dir}`);
  }
  if (!manager) return undefined;
  if (open !== undefined && !manager.list().some((info) => info.id === open)) {
    throw new UsageError(`no session "${open}" in ${dir}`);
  }
  const store = manager;
  if (!runnable) return { manager: store };
  return {
    manager: store,
    ...(open === undefined ? {} : { open }),
    run: async (forkId) => {
      // The fork runs as its parent did: the folder, model and mode its run was started with.
      const parent = store.list().find((info) => info.id === forkId)?.forkOf?.id;
      const settings = parent === undefined ? undefined : loadSettings(dir, parent);
      if (settings) saveSettings(dir, forkId, settings);
      const code = await resume(forkId, dir);
      if (code !== 0) throw new Error(`the fork's run exited with code ${code}`);
    },
  };
}
