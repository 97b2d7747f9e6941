/**
 * A research fan-out: a lead agent sends five explorers out at once (at most three running), then hands their notes
 * to a reviewer in the background and answers when the review comes back as a notification. While it runs, the live
 * tree of agents is printed with each one's state; at the end, the usage of every agent, subtree and the system.
 *
 *   npm run swarm                          # offline, on the scripted model
 *   OPENAI_API_KEY=… npm run swarm         # on a real model (or ANTHROPIC_API_KEY=…; TROUPE_MODEL picks the model)
 */
import { z } from 'zod';
import {
  type AgentEvent,
  createSupervisor,
  defineTool,
  type ModelRequest,
  type ScriptedAnswer,
  type Supervisor,
  textOf,
  type Usage,
} from '../src/index.js';
import { modelFromEnv } from './model-from-env.js';
import { dim, green, yellow } from './style.js';

type TreeView = ReturnType<Supervisor['tree']>;

const TOPICS = ['actor model', 'supervision trees', 'statecharts', 'backpressure', 'tool calling'];

const search = defineTool({
  name: 'search',
  description: 'Searches the (offline) library for a topic and returns a short excerpt',
  schema: z.object({ query: z.string() }),
  execute: async ({ query }, { signal }) => {
    await new Promise((resolve) => setTimeout(resolve, 120));
    signal.throwIfAborted();
    return `Excerpt on "${query}": a classic idea, with ${query.length} known variants and one good book.`;
  },
});

/** The offline script: every agent of the tree shares it, and each request is answered from its conversation. */
function scripted(request: ModelRequest): ScriptedAnswer {
  const messages = request.messages;
  const prompt = textOf(messages.find((m) => m.role === 'user'));
  const answers = messages.filter((m) => m.role === 'assistant').length;
  const lastTool = messages.filter((m) => m.role === 'tool').at(-1);
  const toolText = textOf(lastTool);
  const usage = { input: 200 + messages.length * 40, output: 30 + answers * 10 };
  const pace = { deltaDelayMs: 8, chunkSize: 6, latencyMs: 150 };
  if (prompt.startsWith('Research:')) {
    const topic = prompt.slice('Research: '.length);
    if (answers === 0) return { ...pace, usage, toolCalls: [{ name: 'search', args: { query: topic } }] };
    return { ...pace, usage, text: `${topic}: ${toolText.split(': ')[1] ?? 'nothing found'}` };
  }
  if (prompt.startsWith('Review'))
    return { ...pace, usage, latencyMs: 400, text: 'Solid notes; add one example each.' };
  // The lead.
  if (answers === 0) {
    return {
      ...pace,
      usage,
      text: 'Fanning out.',
      toolCalls: [
        {
          name: 'swarm',
          args: { tasks: TOPICS.map((topic) => ({ profile: 'explore', prompt: `Research: ${topic}` })) },
        },
      ],
    };
  }
  if (answers === 1) {
    const notes = toolText.replace(/<[^>]+>/g, '').trim();
    return {
      ...pace,
      usage,
      toolCalls: [
        { name: 'agent', args: { profile: 'reviewer', prompt: `Review these notes:\n${notes}`, background: true } },
      ],
    };
  }
  if (answers === 2) return { ...pace, usage, text: 'Draft ready; waiting for the review.' };
  return { ...pace, usage, text: `Final: five topics covered. Reviewer says: ${lastNotification(request)}` };
}

function lastNotification(request: ModelRequest): string {
  const note = request.messages.filter((m) => m.role === 'user' && m.source === 'notification').at(-1);
  return textOf(note).replace(/<[^>]+>/g, '');
}

const { model, note } = modelFromEnv(scripted);
const supervisor = createSupervisor({
  model,
  concurrency: 3,
  maxDepth: 2,
  profiles: {
    explore: {
      description: 'researches one topic with the search tool',
      system: 'Research the topic with the search tool, then answer in one sentence.',
      tools: ['search'],
      maxSteps: 4,
    },
    reviewer: { description: 'reviews notes', system: 'Review the notes in one sentence.', tools: [] },
  },
});
const lead = supervisor.agent({
  id: 'lead',
  tools: [search],
  system:
    'You lead a research team. Use the swarm tool with the "explore" profile, one task per topic, then ask a ' +
    '"reviewer" agent in the background to review the notes, and give a final answer once the review arrives.',
});

// ---- the live tree ----
const profiles = new Map<string, string>([['lead', 'lead']]);
const usageOf = new Map<string, Usage>();
supervisor.on('*', (event: AgentEvent) => {
  if (event.type === 'subagent_start') profiles.set(event.childId, event.profile);
  if (event.type === 'subagent_end') usageOf.set(event.childId, event.usage);
});

const tty = process.stdout.isTTY;
let lastFrame = '';
let lastLines = 0;
function render(view: TreeView, depth = 0, lines: string[] = []): string[] {
  const pad = '  '.repeat(depth);
  if (view.kind === 'supervisor') {
    if (view.children.length > 0)
      lines.push(`${pad}${dim(`${depth === 0 ? 'supervisor' : '└ supervisor'}: ${view.state}`)}`);
  } else {
    const profile = profiles.get(view.id) ?? '';
    const state = view.state.replace(/^running\.turn\.step\./, 'running › ').replace(/\./g, ' › ');
    const color = view.state === 'idle' ? green : yellow;
    lines.push(`${pad}• ${view.id} ${profile ? `(${profile}) ` : ''}${color(state)}`);
  }
  // A root supervisor's agents are the top level; an agent's supervisor and its subagents are indented under it.
  const childDepth = view.kind === 'supervisor' ? (depth === 0 ? 0 : depth + 1) : depth + 1;
  for (const child of view.children) render(child, childDepth, lines);
  return lines;
}
function draw(): void {
  const lines = render(supervisor.tree());
  const frame = lines.join('\n');
  if (frame === lastFrame) return;
  lastFrame = frame;
  if (tty && lastLines > 0) process.stdout.write(`\x1b[${lastLines}A\x1b[0J`);
  process.stdout.write(`${frame}\n${tty ? '' : '\n'}`);
  lastLines = lines.length;
}

console.log(`Model: ${note}\n`);
const ticker = setInterval(draw, tty ? 80 : 250);
const finished = new Promise<void>((resolve) => {
  const off = supervisor.on('turn_end', (event) => {
    if (event.agentId !== lead.id || lead.messages.every((m) => m.role !== 'user' || m.source !== 'notification'))
      return;
    off();
    resolve();
  });
});
const first = await lead.prompt(`Research these topics and review the findings: ${TOPICS.join(', ')}.`);
console.log(`\nlead: ${first.text}\n`);
await finished;
clearInterval(ticker);
draw();
const final = lead.messages.filter((m) => m.role === 'assistant').at(-1);
console.log(`\nlead: ${textOf(final)}\n`);

// ---- usage ----
usageOf.set(lead.id, lead.usage);
const row = (name: string, u: Usage) =>
  `${name.padEnd(28)} ${String(u.input).padStart(7)} ${String(u.output).padStart(7)}`;
console.log(`${'agent'.padEnd(28)} ${'input'.padStart(7)} ${'output'.padStart(7)}`);
for (const [id, usage] of usageOf) console.log(row(`${id} (${profiles.get(id) ?? ''})`, usage));
console.log(row('lead + its subtree', lead.subtreeUsage));
console.log(row('system', supervisor.usage));
await supervisor.stop();
