/**
 * A Restate worker process for `npm run bench:restate`: serves W3's agents (the swarm model, the echo tool) on the
 * port given and prints its URL. Each line on stdin is answered with the number of tool calls this process ran, so
 * the bench can check that every call ran exactly once across its workers.
 *
 *   node --import tsx bench/restate-worker.ts <port> <toolSteps> <latencyMs> <object name> [counted|free <concurrency>]
 *   node --import tsx bench/restate-worker.ts <port> 0 0 <object name> empty
 *
 * `empty` serves an object whose `prompt` answers at once, journaling nothing: what an invocation alone costs.
 */
import { createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import * as restate from '@restatedev/restate-sdk';
import { emptyUsage } from '../src/host/index.js';
import { type ScriptedAnswer, scriptedModel } from '../src/index.js';
import { agentObject, serveAgents } from '../src/restate/index.js';
import { echoTool, FINAL_TEXT, swarmModel, ToolCounter } from './fixtures.js';

const [port, toolSteps, latencyMs] = process.argv.slice(2, 5).map(Number);
const name = process.argv[5] ?? 'troupe-agent';
// `--tree`: W3 as one hosted tree, a root whose one `swarm` call runs every agent as its subagent, with the tree's
// open tasks counted (`counted`: the default `maxAgents`) or not (`Infinity`).
const tree = process.argv[6];
const counter = new ToolCounter();
const model = swarmModel({ toolSteps: toolSteps ?? 3, latencyMs: latencyMs ?? 5 });
const tools = [echoTool(counter)];
const root = scriptedModel(
  (request): ScriptedAnswer => {
    if (request.messages.some((message) => message.role === 'tool')) return { text: FINAL_TEXT };
    const prompt = request.messages[0]?.content.map((part) => ('text' in part ? part.text : '')).join('') ?? '';
    const tasks = Array.from({ length: Number(prompt.match(/\d+/)?.[0] ?? 1) }, (_, n) => ({ prompt: `task ${n}` }));
    return { toolCalls: [{ name: 'swarm', args: { tasks }, id: 'sw' }] };
  },
  { record: false },
);
const empty = restate.object({
  name,
  handlers: {
    prompt: async (ctx: restate.ObjectContext) => ({
      agentId: ctx.key,
      stopReason: 'completed',
      text: FINAL_TEXT,
      usage: emptyUsage(),
    }),
  },
});
const hosted = tree
  ? agentObject({
      name,
      subagents: true,
      supervision: {
        concurrency: Number(process.argv[7] ?? 100),
        ...(tree === 'counted' ? {} : { maxAgents: Number.POSITIVE_INFINITY }),
      },
      agent: (agentId) => (agentId.includes('/') ? { model, tools } : { model: root, tools: [] }),
    })
  : agentObject({ name, agent: () => ({ model, tools }) });
async function serveEmpty(): Promise<string> {
  const server = createServer(restate.createEndpointHandler({ services: [empty] }));
  await new Promise<void>((resolve) => server.listen(port ?? 0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const url = tree === 'empty' ? await serveEmpty() : (await serveAgents([hosted], { port: port ?? 0 })).url;
process.stdout.write(`${url}\n`);
createInterface({ input: process.stdin }).on('line', () => process.stdout.write(`${counter.calls}\n`));
