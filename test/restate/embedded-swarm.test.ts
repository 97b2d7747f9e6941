import { expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type Message, type ModelRequest, scriptedModel } from '../../src/index.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';

// The crash test's swarm (crash.test.ts: 100 subagents, each with a background helper, tools counting their
// executions), run embedded: one process, the plain runtime, no Restate. What the two hosts have in common is
// compared: every task settles once, every notification arrives once, every agent's tool ran once, histories valid.
const SWARM = 100;

const firstUserText = (request: ModelRequest) => {
  const first = request.messages.find((message) => message.role === 'user');
  return first?.content.map((part) => ('text' in part ? part.text : '')).join('') ?? '';
};

it('the same swarm embedded: every task settles once, every notification once, every tool once', async () => {
  const ran = new Map<string, number>();
  const count = defineTool({
    name: 'count',
    description: 'Counts',
    schema: z.object({ n: z.number() }),
    execute: ({ n }, ctx) => {
      ran.set(ctx.agentId, (ran.get(ctx.agentId) ?? 0) + 1);
      return `counted ${n}`;
    },
  });
  // The crash test's script, told apart by each agent's task (the embedded runtime names children itself).
  const model = scriptedModel((request) => {
    const role = firstUserText(request);
    const results = request.messages.filter((message) => message.role === 'tool').length;
    const last = request.messages.at(-1);
    const lastIsNotification = last?.role === 'user' && notificationsOf([last]).length > 0;
    const usage = { input: 1, output: 1 };
    if (role.startsWith('start')) {
      if (lastIsNotification) return { text: 'noted', usage };
      if (results > 0) return { text: 'swarm started', usage };
      const calls = Array.from({ length: SWARM }, (_, i) => ({
        name: 'agent',
        args: { prompt: `part ${i}`, background: true },
        id: `s${i}`,
      }));
      return { toolCalls: calls, usage };
    }
    if (role.startsWith('part')) {
      const countCall = { name: 'count', args: { n: 1 }, id: 'k' };
      const helperCall = { name: 'agent', args: { prompt: `help ${role}`, background: true }, id: 'g' };
      if (results === 0) return { toolCalls: [countCall, helperCall], usage };
      return { text: lastIsNotification ? `${role} done` : 'waiting for my helper', usage };
    }
    if (results === 0) return { toolCalls: [{ name: 'count', args: { n: 2 }, id: 'k' }], usage };
    return { text: `${role} done`, usage };
  });
  const root = createAgent({ id: 'swarm-e', model, tools: [count], subagents: { concurrency: SWARM } });
  const histories = new Map<string, Message[]>();
  const tasksEnded: string[] = [];
  root.on(
    '*',
    (event) => {
      if (event.type === 'message_end' && !event.discarded) {
        const history = histories.get(event.agentId) ?? [];
        history.push(event.message);
        histories.set(event.agentId, history);
      }
      if (event.type === 'subagent_end') tasksEnded.push(event.taskId);
    },
    { subtree: true },
  );

  expect((await root.prompt(`start ${SWARM}`)).text).toBe('swarm started');
  for (let i = 0; i < 2400 && notificationsOf(histories.get('swarm-e') ?? []).length < SWARM; i++)
    await new Promise((resolve) => setTimeout(resolve, 25));
  await new Promise((resolve) => setTimeout(resolve, 200)); // room for a duplicate, which must not come
  try {
    const notes = notificationsOf(histories.get('swarm-e') ?? []);
    expect(notes).toHaveLength(SWARM);
    // Once each, and with the result of the turn its helper's notification woke, as on Restate.
    for (let i = 0; i < SWARM; i++) expect(notes.filter((note) => note.includes(`>part ${i} done<`))).toHaveLength(1);
    // Each child and each helper settled once (200 tasks), each reported once.
    expect(tasksEnded).toHaveLength(2 * SWARM);
    expect(new Set(tasksEnded).size).toBe(2 * SWARM);
    // 200 agents below the root, each ran its tool exactly once.
    expect(ran.size).toBe(2 * SWARM);
    for (const times of ran.values()) expect(times).toBe(1);
    const children = [...histories.keys()].filter((id) => id !== 'swarm-e');
    expect(children).toHaveLength(2 * SWARM);
    for (const id of children) expectValidHistory(histories.get(id) ?? []);
    // Each child's helper reported to it exactly once.
    const helperNotes = children.flatMap((id) => notificationsOf(histories.get(id) ?? []));
    expect(helperNotes).toHaveLength(SWARM);
    for (let i = 0; i < SWARM; i++)
      expect(helperNotes.filter((note) => note.includes(`help part ${i} done`))).toHaveLength(1);
    expectValidHistory(histories.get('swarm-e') ?? []);
  } finally {
    await root.stop();
  }
}, 60_000);
