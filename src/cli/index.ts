#!/usr/bin/env node
/** The `troupe` command. `troupe inspect` serves the offline inspector on a loopback address. */
import { parseArgs } from 'node:util';
import { startInspectorServer } from '../inspect/server.js';

const USAGE = `Usage: troupe inspect [--port <n>] [--host 127.0.0.1|localhost]

Serves the offline inspector on a loopback address and prints two lines: the page to open in a browser, and the
TROUPE_INSPECT value a program gives connectInspector() to stream its agents there and take approvals from it.`;

async function inspect(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, host: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port number: ${values.port}`);
  const server = await startInspectorServer({ port, ...(values.host ? { host: values.host } : {}) });
  console.log(`Troupe inspector: open ${server.pageUrl}`);
  console.log(`Connect a program with: TROUPE_INSPECT='${server.connectUrl}'`);
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'inspect':
      return inspect(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return;
    default:
      console.error(`troupe: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`troupe: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
