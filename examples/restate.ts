// Troupe on Restate: the same agents, hosted as Restate virtual objects (one per agent id), with every model and tool
// call journaled. This program starts a restate-server of its own (the dev dependency's binary, loopback, a temporary
// data folder), serves the agents from this process, registers them, and drives them over HTTP like any client:
//   npx tsx examples/restate.ts
// Against a server you started yourself (`npx restate-server`; ingress :8080, admin :9070), keep it running after:
//   RESTATE_INGRESS=http://127.0.0.1:8080 RESTATE_ADMIN=http://127.0.0.1:9070 npx tsx examples/restate.ts
import { z } from 'zod';
import { defineTool, scriptedModel } from '../src/index.js';
import { registerDeployment, startRestateDevServer } from '../src/restate/dev-server.js';
import { agentClient, agentObject, serveAgents } from '../src/restate/index.js';
import { dim, green, yellow } from './style.js';

// A tool with an effect: on Restate its result is journaled, so a crash and a replay never run it twice.
const lookUp = defineTool({
  name: 'look_up',
  description: 'Looks a city up',
  schema: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: ${city.length * 100_000} inhabitants`,
});

const usage = { input: 40, output: 12 };
// Offline, the model is scripted (a real one is `openai(...)` / `anthropic(...)`, nothing else changes). It decides
// from the request alone, so it answers the same in any worker that replays a turn.
const model = (agentId: string) =>
  scriptedModel((request) => {
    const last = request.messages.at(-1);
    const text = last?.role === 'user' ? last.content.map((p) => (p.type === 'text' ? p.text : '')).join('') : '';
    if (agentId.includes('/')) {
      const found = last?.role === 'tool' ? last.content[0]?.content[0] : undefined;
      return found?.type === 'text'
        ? { text: `Found it: ${found.text}`, usage }
        : { toolCalls: [{ name: 'look_up', args: { city: text.replace('Look up ', '') }, id: 'lookup' }], usage };
    }
    if (text.startsWith('<notification')) return { text: 'Noted a result.', usage };
    if (last?.role === 'tool')
      return { text: 'Two researchers are on it; their results will come as notifications.', usage };
    return {
      toolCalls: ['Lisbon', 'Oslo'].map((city, i) => ({
        name: 'agent',
        args: { prompt: `Look up ${city}`, background: true },
        id: `research_${i}`,
      })),
      usage,
    };
  });

const agents = agentObject({
  subagents: true,
  agent: (agentId) => ({ model: model(agentId), tools: [lookUp] }),
  // Listeners in the hosting process hear every agent it runs, as embedded.
  on: (event) => {
    if (event.type === 'turn_start') console.log(dim(`  [${event.agentId}] turn starts`));
    if (event.type === 'tool_execution_end') console.log(dim(`  [${event.agentId}] ${event.toolName} done`));
  },
});

const given = process.env.RESTATE_INGRESS && process.env.RESTATE_ADMIN;
const server = given ? undefined : await startRestateDevServer();
const ingress = process.env.RESTATE_INGRESS ?? (server?.ingressUrl as string);
const admin = process.env.RESTATE_ADMIN ?? (server?.adminUrl as string);
const worker = await serveAgents([agents]);
try {
  await registerDeployment(admin, worker.url);
  console.log(`${green('registered')} ${worker.url} with the admin API at ${admin}`);
  const client = agentClient(ingress);
  const agentId = `coordinator-${Date.now().toString(36)}`;
  const turn = await client.prompt(agentId, 'How many people live in Lisbon and Oslo?');
  console.log(`${yellow(agentId)}: ${turn.text}`);

  // The subagents run as their own objects; each result reaches the coordinator as a message and wakes it.
  for (let i = 0; i < 1200; i++) {
    const history = await client.history(agentId);
    const notes = history.filter((m) => m.role === 'user' && JSON.stringify(m.content).includes('<notification'));
    if (notes.length === 2) {
      for (const note of notes)
        console.log(`${yellow('notification')} ${note.content[0]?.type === 'text' ? note.content[0].text : ''}`);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  console.log(`usage of ${agentId}: ${JSON.stringify(await client.usage(agentId))}`);
  console.log(dim(`watch it: curl -s -X POST ${ingress}/troupe-agent/${agentId}/history --json null`));
} finally {
  await worker.close();
  await server?.stop();
}
