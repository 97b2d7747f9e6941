/**
 * The offline inspector, in one process: `startInspectorServer` is what `troupe inspect` runs (a page and its
 * WebSocket endpoints on loopback), `connectInspector` streams an agent's statechart frames to it, and the page
 * reads them back (here with the page's own first-paint request instead of a browser). Needs the optional
 * `@statelyai/inspect` package (the frames' format) and `elkjs` (the page's graph layout).
 *
 *   npx tsx examples/inspect.ts            # then open the printed page while it waits, or run `npx troupe inspect`
 */
import { connectInspector, createAgent, scriptedModel, startInspectorServer } from '../src/index.js';

const server = await startInspectorServer();
console.log(`page: ${server.pageUrl}`);
const connection = await connectInspector({ url: server.connectUrl, runId: 'example' });
const agent = createAgent({
  id: 'planner',
  model: scriptedModel([{ text: 'Go to Lisbon.' }]),
  inspect: connection.inspect,
});
connection.attach(agent);
console.log(`answer: ${(await agent.prompt('Where should I go?')).text}`);
await agent.stop();
await connection.close();

// What a page opened now is sent first: the runs, then every frame kept.
const { messages } = (await (await fetch(new URL(`/frames?token=${server.token}`, server.pageUrl))).json()) as {
  messages: { type: string; run?: string; runs?: { run: string }[]; frame?: { type?: string } }[];
};
const frames = messages.filter((message) => message.type === 'frame' && message.run === 'example');
const kinds = [...new Set(frames.map((message) => message.frame?.type))].sort();
console.log(`runs: ${messages[0]?.runs?.map((run) => run.run).join(', ')}`);
console.log(`frames of run "example": ${kinds.join(', ')}`);
await server.close();
