/**
 * A Restate worker process for `npm run bench:restate`: serves W3's agents (the swarm model, the echo tool) on the
 * port given and prints its URL. Each line on stdin is answered with the number of tool calls this process ran, so
 * the bench can check that every call ran exactly once across its workers.
 *
 *   node --import tsx bench/restate-worker.ts <port> <toolSteps> <latencyMs> <object name>
 */
import { createInterface } from 'node:readline';
import { agentObject, serveAgents } from '../src/restate/index.js';
import { echoTool, swarmModel, ToolCounter } from './fixtures.js';

const [port, toolSteps, latencyMs] = process.argv.slice(2, 5).map(Number);
const name = process.argv[5] ?? 'troupe-agent';
const counter = new ToolCounter();
const model = swarmModel({ toolSteps: toolSteps ?? 3, latencyMs: latencyMs ?? 5 });
const tools = [echoTool(counter)];
const worker = await serveAgents([agentObject({ name, agent: () => ({ model, tools }) })], { port: port ?? 0 });
process.stdout.write(`${worker.url}\n`);
createInterface({ input: process.stdin }).on('line', () => process.stdout.write(`${counter.calls}\n`));
