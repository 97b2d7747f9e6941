#!/usr/bin/env node
/** The `troupe` bin: runs the command, and keeps an inspector server up until Ctrl-C. */
import { main } from './main.js';

const argv = process.argv.slice(2);
main(argv).then(
  (server) => {
    // A run may leave a stdin reader or a timer behind; its exit code is final.
    if (argv[0] === 'run') process.exit(process.exitCode ?? 0);
    if (!server) return;
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (error: unknown) => {
    console.error(`troupe: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
