/**
 * `session.idle()` of a root whose background swarm reports back: it settles only once every result has reached
 * the root (its notification taken into a turn, that turn ended) and is journaled.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createAgent,
  defineTool,
  type Message,
  type ModelRequest,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { taskOf } from '../agent/helpers.js';
import { cleanTempDirs, crashCopy, journalRecords, tempDir } from './helpers.js';

cleanTempDirs();

const notifications = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'notification').map((m) => textOf(m));

/** The root starts three subagents in the background and answers; each result wakes it. Subagents work once. */
function script(request: ModelRequest): ScriptedAnswer {
  const who = taskOf(request);
  const tools = request.messages.filter((m) => m.role === 'tool').length;
  if (who === 'go') {
    const seen = notifications(request.messages).length;
    if (seen > 0) return { text: `root saw ${seen}` };
    if (tools === 0) {
      const tasks = ['a', 'b', 'c'].map((prompt) => ({ prompt }));
      return { toolCalls: [{ id: 'root_swarm', name: 'swarm', args: { tasks, background: true } }] };
    }
    return { text: 'started' };
  }
  if (tools === 0) return { toolCalls: [{ id: `${who}_work`, name: 'work', args: { who } }] };
  return { text: `${who} done` };
}

/** Work that takes a few macrotasks: the results come back after the root's first turn has ended. */
const work = defineTool({
  name: 'work',
  description: 'slow work',
  schema: z.object({ who: z.string() }),
  execute: async ({ who }) => {
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    return `${who} worked`;
  },
});

describe('session.idle() with background results', () => {
  it('settles once every notification has reached the root and is journaled', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create({ id: 'bg', agentId: 'root' });
    const agent = createAgent({ model: scriptedModel(script), tools: [work], subagents: { concurrency: 4 }, session });
    expect((await agent.prompt('go')).text).toBe('started');
    await session.idle();

    const results = (messages: readonly Message[]) =>
      notifications(messages).map((text) => /(\w) done/.exec(text)?.[1]);
    expect(results(agent.messages).sort()).toEqual(['a', 'b', 'c']);
    expect(agent.messages.at(-1)?.role).toBe('assistant');
    // What a kill right now leaves: every notification journaled, and every turn it opened ended.
    const copy = crashCopy(dir);
    const records = journalRecords(copy, 'bg');
    expect(records.filter((r) => r.k === 'notice')).toHaveLength(3);
    expect(records.filter((r) => r.k === 'turn_end')).toHaveLength(records.filter((r) => r.k === 'turn_start').length);
    session.close();
    await agent.stop();

    // Reopened, nothing is delivered again and nothing is lost: no model call, no tool run, the same history.
    const reopened = sessions({ dir: copy }).open('bg');
    const model = scriptedModel(script);
    const again = createAgent({ model, tools: [work], subagents: { concurrency: 4 }, session: reopened });
    await reopened.idle();
    expect(model.requests).toHaveLength(0);
    expect(results(again.messages).sort()).toEqual(['a', 'b', 'c']);
    expect(again.messages).toEqual(agent.messages);
    reopened.close();
    await again.stop();
    expect(journalRecords(copy, 'bg').filter((r) => r.k === 'notice')).toHaveLength(3);
  });
});
