// A process the nested-background kill tests kill with SIGKILL at one chosen moment, then run again to finish. The
// root asks a foreground subagent, "mid", which starts a background subagent of its own, "leaf", and answers only
// once leaf's notification has reached it (then it calls `hang` and answers). Every tool counts its executions in a
// side file. Shapes: `idle` (mid ends its turn and waits; leaf's result wakes it), `busy` (mid runs `wait` until
// leaf's result has reached it, so the result joins mid's next step). It prints `moment` when the chosen moment
// has come and is durable, and `done` when the tree has nothing left to do.
// Run (bundled by the test): node nested-child.mjs <dir> <side> <idle|busy> <leaf|owed|hang>
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { createAgent, defineTool, type ModelRequest, scriptedModel, sessions, textOf } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

const [dir, side, shape, moment] = process.argv.slice(2) as [string, string, 'idle' | 'busy', string];
const ID = 'nested';
const manager = sessions({ dir, onWarning: () => {} });
const fresh = !manager.list().some((info) => info.id === ID);
// Holds the event loop open until the kill.
const forever = () => new Promise<string>(() => setInterval(() => {}, 1000));
const count = (callId: string) => appendFileSync(side, `${callId}\n`);
/** Waits until the journal file holds a record matching `test` (records are written when the tick ends). */
async function journaled(test: (line: string) => boolean): Promise<void> {
  while (
    !readFileSync(join(dir, `${ID}.jsonl`), 'utf8')
      .split('\n')
      .some(test)
  ) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
const atMoment = async (name: string): Promise<string> => {
  process.stdout.write('moment\n');
  return name === moment ? forever() : 'unreachable';
};

const work = defineTool({
  name: 'work',
  description: 'leaf work',
  schema: z.object({}),
  execute: async (_args, ctx) => {
    count(ctx.toolCallId);
    if (fresh && moment === 'leaf') return atMoment('leaf');
    return 'worked';
  },
});
let leafNotified: () => void = () => {};
const notified = new Promise<void>((resolve) => {
  leafNotified = resolve;
});
const wait = defineTool({
  name: 'wait',
  description: 'mid waits for its background result',
  schema: z.object({}),
  execute: async (_args, ctx) => {
    count(ctx.toolCallId);
    await notified;
    if (fresh && moment === 'owed') {
      // The result was sent to mid (waiting for its next step) and its settle is journaled: no notice yet.
      await journaled((line) => line.includes('"ev":"settled"'));
      return atMoment('owed');
    }
    return 'waited';
  },
});
const hang = defineTool({
  name: 'hang',
  description: 'mid acts on the result',
  schema: z.object({}),
  execute: async (_args, ctx) => {
    count(ctx.toolCallId);
    if (fresh && moment === 'hang') return atMoment('hang');
    return 'acted';
  },
});

const notification = (request: ModelRequest) =>
  request.messages.some((m) => m.role === 'user' && m.source === 'notification');
const called = (request: ModelRequest, id: string) =>
  request.messages.some((m) => m.role === 'tool' && m.content.some((part) => part.toolCallId === id));

/** Decides from the history, so that a resumed agent is answered the same way. */
function script(request: ModelRequest): ScriptedAnswer {
  const first = request.messages.find((m) => m.role === 'user');
  const who = first ? textOf(first) : '';
  const answers = request.messages.filter((m) => m.role === 'assistant').length;
  if (who === 'go') {
    if (answers === 0) return { toolCalls: [{ id: 'root_mid', name: 'agent', args: { prompt: 'mid' } }] };
    return { text: 'root done' };
  }
  if (who === 'leaf') {
    if (answers === 0) return { toolCalls: [{ id: 'leaf_work', name: 'work', args: {} }] };
    return { text: 'leaf done' };
  }
  if (called(request, 'mid_hang')) return { text: 'mid saw leaf' };
  if (notification(request)) return { toolCalls: [{ id: 'mid_hang', name: 'hang', args: {} }] };
  if (answers === 0) {
    const bg = { id: 'mid_bg', name: 'agent', args: { prompt: 'leaf', background: true } };
    return { toolCalls: shape === 'busy' ? [bg, { id: 'mid_wait', name: 'wait', args: {} }] : [bg] };
  }
  return { text: 'mid waiting' };
}

const session = fresh ? manager.create({ id: ID, agentId: 'root' }) : manager.open(ID);
const agent = createAgent({
  model: scriptedModel(script),
  tools: [work, wait, hang],
  subagents: { concurrency: 2 },
  session,
});
agent.on('notification', () => setImmediate(leafNotified), { subtree: true });
if (fresh) void agent.prompt('go');
await session.idle();
session.close();
await agent.stop();
process.stdout.write('done\n');
