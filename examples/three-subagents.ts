/**
 * Three subagents in parallel, offline: a lead hands one city each to three subagents with the swarm tool, each
 * looks its city's weather up, and the lead answers from their results. One scripted model plays every agent in
 * its function form: it is given each request (the asking agent's conversation so far) and answers from it.
 *
 *   npx tsx examples/three-subagents.ts
 */
import { z } from 'zod';
import {
  createSupervisor,
  defineTool,
  type ModelRequest,
  type ScriptedAnswer,
  scriptedModel,
  textOf,
} from '../src/index.js';

const CITIES = ['Lisbon', 'Oslo', 'Kyoto'];
const TABLE: Record<string, string> = { Lisbon: '24°C, sunny', Oslo: '3°C, sleet', Kyoto: '17°C, clear' };

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  schema: z.object({ city: z.string() }),
  execute: ({ city }) => TABLE[city] ?? 'unknown',
});

/** Every agent's model: who is asking is in the first message (its task), what a tool said in the last one. */
function play(request: ModelRequest): ScriptedAnswer {
  const task = textOf(request.messages[0]);
  const last = request.messages.at(-1);
  const city = CITIES.find((name) => task === `Weather in ${name}?`);
  if (city) {
    // A subagent: one tool call, then an answer from the tool's result (textOf of the tool message).
    if (last?.role !== 'tool') return { toolCalls: [{ name: 'get_weather', args: { city } }], latencyMs: 20 };
    return { text: `${city}: ${textOf(last)}`, latencyMs: 20 };
  }
  // The lead: one swarm call with a task per city; the swarm's result holds the three answers, in task order.
  if (last?.role !== 'tool') {
    return {
      toolCalls: [{ name: 'swarm', args: { tasks: CITIES.map((name) => ({ prompt: `Weather in ${name}?` })) } }],
    };
  }
  const answers = [...textOf(last).matchAll(/<result [^>]*>([^<]*)<\/result>/g)].map((match) => match[1]);
  return { text: `The weather this weekend: ${answers.join('; ')}.` };
}

const supervisor = createSupervisor({ model: scriptedModel(play), concurrency: 3 });
let running = 0;
let peak = 0;
supervisor.on('subagent_start', () => {
  running += 1;
  peak = Math.max(peak, running);
});
supervisor.on('subagent_end', (event) => {
  running -= 1;
  console.log(`${event.childId} ${event.status}`);
});

const lead = supervisor.agent({ id: 'lead', tools: [weather], system: 'Ask one subagent per city, in parallel.' });
const result = await lead.prompt('What is the weather in Lisbon, Oslo and Kyoto?');
console.log(`lead: ${result.text}`);
console.log(`subagents running at once, at most: ${peak}`);
await supervisor.stop();
