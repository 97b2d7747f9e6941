// A process the crash test kills with SIGKILL at random moments: it opens (or creates) a session and runs a small
// supervision tree on it. The root starts a background subagent and a foreground swarm of two (the first of which
// starts a background subagent of its own and answers once its result has come), then runs a batch of its own; every agent calls tools that count their executions in a side file, one of which waits for an
// approval, and a model that streams slowly. It exits when the tree has nothing left to do.
// Run (bundled by the test): node crash-child.mjs <dir> <id> <side>
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import {
  createAgent,
  defineTool,
  type ModelRequest,
  type Policy,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

const [dir, id, side] = process.argv.slice(2) as [string, string, string];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const work = defineTool({
  name: 'work',
  description: 'does work that must not be done twice',
  schema: z.object({ n: z.number() }),
  execute: async ({ n }, ctx) => {
    appendFileSync(side, `${ctx.toolCallId}\n`);
    await pause(3 + Math.random() * 10);
    return `worked ${n}`;
  },
});
const risky = defineTool({
  name: 'risky',
  description: 'needs approval',
  schema: z.object({}),
  execute: (_args, ctx) => {
    appendFileSync(side, `${ctx.toolCallId}\n`);
    return 'risky done';
  },
});
const policy: Policy = (call) => (call.name === 'risky' ? 'ask' : 'allow');

const slowly = { latencyMs: 3, chunkSize: 4, deltaDelayMs: 1 };
const batch = (prefix: string, n: number): ScriptedAnswer => ({
  toolCalls: [
    { id: `${prefix}_0`, name: 'work', args: { n } },
    { id: `${prefix}_1`, name: 'work', args: { n: n + 1 } },
    { id: `${prefix}_2`, name: 'risky' },
  ],
  ...slowly,
});

const done = (who: string): ScriptedAnswer => ({ text: `${who} done`, ...slowly });

/** Decides from the history, so that a resumed or replayed agent is answered the same way. Call ids are unique. */
function script(request: ModelRequest): ScriptedAnswer {
  const users = request.messages.filter((m) => m.role === 'user');
  const who = users[0] ? textOf(users[0]) : '';
  const tools = request.messages.filter((m) => m.role === 'tool').length;
  const answers = request.messages.filter((m) => m.role === 'assistant').length;
  const last = request.messages.at(-1);
  const notified = last?.role === 'user' && last.source === 'notification';
  if (who === 'leaf') return tools === 0 ? { toolCalls: [{ id: 'leaf_0', name: 'work', args: { n: 0 } }] } : done(who);
  if (who === 'fg1') {
    // A subagent with a background subagent of its own: leaf's result reaches it busy or idle (it wakes it).
    if (tools > 0) return notified ? { text: 'fg1 saw leaf', ...slowly } : done(who);
    const leaf = { id: 'fg1_leaf', name: 'agent', args: { prompt: 'leaf', background: true } };
    const own = batch(who, 1);
    return { ...own, toolCalls: [leaf, ...(own.toolCalls ?? [])] };
  }
  if (who !== 'first') return tools === 0 ? batch(who, 1) : done(who);
  if (notified) return { text: 'noted' };
  const second = users.some((m) => textOf(m) === 'second');
  if (tools === 0) {
    return {
      toolCalls: [
        { id: 'root_bg', name: 'agent', args: { prompt: 'bg', background: true } },
        { id: 'root_swarm', name: 'swarm', args: { tasks: [{ prompt: 'fg1' }, { prompt: 'fg2' }] } },
      ],
      ...slowly,
    };
  }
  if (tools === 1 || (second && tools < 3)) return batch(`root_${answers}`, 10 * answers);
  return { text: second ? 'second done' : 'first done', ...slowly };
}

const manager = sessions({ dir, onWarning: () => {} });
const exists = manager.list().some((info) => info.id === id);
const session = exists ? manager.open(id) : manager.create({ id, agentId: 'crash' });
const agent = createAgent({
  model: scriptedModel(script),
  tools: [work, risky],
  policy,
  subagents: { concurrency: 2 },
  session,
});
agent.on(
  'approval_requested',
  (event) => {
    setTimeout(() => agent.approve(event), 5 + Math.random() * 10);
  },
  { subtree: true },
);
// Tells the test when each kind of wait begins (live events only: a resumed tree replays its past), so that some
// kills are aimed at it: `moment streaming|tool|approval|notification`. A background task's end is the moment its
// result is owed to its owner, until the owner takes it in.
const mark = (kind: string) => process.stdout.write(`moment ${kind}\n`);
const backgroundTasks = new Set<string>();
const live =
  <E extends { replayed?: true }>(kind: string, when: (event: E) => boolean = () => true) =>
  (event: E) => {
    if (!event.replayed && when(event)) mark(kind);
  };
const subtree = { subtree: true };
agent.on(
  'subagent_start',
  (event) => {
    if (event.background) backgroundTasks.add(event.taskId);
  },
  subtree,
);
agent.on('message_start', live('streaming'), subtree);
agent.on('tool_execution_start', live('tool'), subtree);
agent.on('approval_requested', live('approval'), subtree);
agent.on(
  'subagent_end',
  live('notification', (event) => backgroundTasks.has(event.taskId)),
  subtree,
);
// A kill can land before the prompts reached the journal, or between their two records (each is its own write,
// and SIGKILL may fall between two of them): the prompts the journal does not hold are given (again), in order.
const given = new Set(
  [...session.journal.inputs.values()].flatMap((input) => input.messages.map((message) => textOf(message))),
);
for (const prompt of ['first', 'second']) if (!given.has(prompt)) void agent.prompt(prompt);
process.stdout.write('ready\n');
await session.idle();
session.close();
await agent.stop();
process.stdout.write('done\n');
