/** The `troupe` command. `troupe inspect` serves the offline inspector on a loopback address. */
import { parseArgs } from 'node:util';
import { type InspectorServer, startInspectorServer } from '../inspect/server.js';
import { runDemo } from './demo.js';

const USAGE = `Usage: troupe inspect [--port <n>] [--host 127.0.0.1|localhost] [--demo]

Serves the offline inspector on a loopback address and prints two lines: the page to open in a browser, and the
TROUPE_INSPECT value a program gives connectInspector() to stream its agents there and take approvals from it.
--demo also runs a small offline swarm whose file writes wait for your approval on the page.`;

async function inspect(args: string[], out: (line: string) => void): Promise<InspectorServer | undefined> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      demo: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    out(USAGE);
    return undefined;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port number: ${values.port}`);
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
): Promise<InspectorServer | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'inspect':
      return inspect(rest, out);
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
