#!/usr/bin/env node
/** The `troupe` bin: runs the command, and keeps an inspector server up until Ctrl-C. */
import { redactSecrets } from '../protocol/index.js';
import { main } from './main.js';

const argv = process.argv.slice(2);
let settled = false;
// Nothing left to wait for, yet the command has not finished: say so rather than exit 0 in silence.
process.once('beforeExit', () => {
  if (settled) return;
  console.error('troupe: the command stopped before it finished (it was waiting for something that cannot come)');
  process.exitCode = 1;
});
main(argv).then(
  (server) => {
    settled = true;
    // A run may leave a stdin reader or a timer behind; its exit code is final.
    if (argv[0] !== 'inspect' && argv[0] !== undefined) process.exit(process.exitCode ?? 0);
    if (!server) return;
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (error: unknown) => {
    settled = true;
    console.error(redactSecrets(`troupe: ${error instanceof Error ? error.message : String(error)}`));
    process.exitCode = 1;
  },
);
