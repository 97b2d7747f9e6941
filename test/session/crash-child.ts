// A process the crash test kills with SIGKILL at random moments: it opens (or creates) a session, runs an agent
// with tools that count their executions in a side file, a tool that waits for approval and a model that streams
// slowly, and exits when the agent has nothing left to do. Run: node --import tsx crash-child.ts <dir> <id> <side>
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { createAgent, defineTool, type Policy, scriptedModel, sessions } from '../../src/index.js';
import { byHistory } from './helpers.js';

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
const batch = (n: number) => ({
  toolCalls: [{ name: 'work', args: { n } }, { name: 'work', args: { n: n + 1 } }, { name: 'risky' }],
  latencyMs: 3,
  chunkSize: 4,
  deltaDelayMs: 1,
});
const first = byHistory([batch(1), batch(10), { text: 'first done', latencyMs: 3 }]);
const second = byHistory([batch(1), batch(10), batch(20), { text: 'second done' }]);
// The second prompt's turn continues after the first's two tool messages: one more batch, then its answer.
const model = scriptedModel((request) =>
  request.messages.filter((m) => m.role === 'user').length > 1 ? second(request) : first(request),
);

const manager = sessions({ dir, onWarning: () => {} });
const exists = manager.list().some((info) => info.id === id);
const session = exists ? manager.open(id) : manager.create({ id, agentId: 'crash' });
const agent = createAgent({ model, tools: [work, risky], policy, session });
agent.on('approval_requested', (event) => {
  setTimeout(() => agent.approve(event), 5 + Math.random() * 10);
});
// A kill can land before the prompts reached the journal: a session without inputs gets them (again).
if (session.journal.inputs.size === 0) {
  void agent.prompt('first');
  void agent.prompt('second');
}
process.stdout.write('ready\n');
await session.idle();
session.close();
await agent.stop();
process.stdout.write('done\n');
