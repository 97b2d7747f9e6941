import { serveAgents } from '../../src/restate/index.js';
import { conformanceObjects } from './objects.js';

// A worker process serving the conformance agents (crash-host.ts kills it with SIGKILL): listens on the port given,
// says its URL on stdout, and runs until killed. Its tools log to TROUPE_CONFORMANCE_LOG (script.ts).
const worker = await serveAgents(conformanceObjects(), { port: Number(process.argv[2]) });
process.stdout.write(`${worker.url}\n`);
