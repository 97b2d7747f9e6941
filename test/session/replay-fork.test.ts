import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  defineTool,
  type JournalRecord,
  type Policy,
  scriptedModel,
  sessions,
} from '../../src/index.js';
import { expectValidHistory, resultText, toolResults } from '../agent/helpers.js';
import { byHistory, cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

let counter = 0;
const count = defineTool({
  name: 'count',
  description: 'counts',
  schema: z.object({ by: z.number() }),
  execute: ({ by }) => {
    counter += by;
    return String(counter);
  },
});
const policy: Policy = (call) => (call.arguments.by === 2 ? 'ask' : 'allow');

/** An event without what differs between two runs by nature: time, seq, streamed deltas. */
const comparable = (events: AgentEvent[]) =>
  events
    .filter((e) => e.type !== 'message_update')
    .map(({ seq: _seq, time: _time, ...rest }) =>
      rest.type === 'tool_execution_end' ? { ...rest, durationMs: 0 } : rest,
    );
const normalized = (records: readonly JournalRecord[]) =>
  records
    .filter((r) => r.k !== 'session')
    .map((r) => {
      const { s: _s, t: _t, ...rest } = r as JournalRecord & { s?: number; t?: number };
      return rest;
    });

async function recordSession(dir: string) {
  const manager = sessions({ dir });
  const session = manager.create({ title: 'counting' });
  const script = byHistory([
    {
      toolCalls: [
        { name: 'count', args: { by: 1 } },
        { name: 'count', args: { by: 2 } },
      ],
    },
    { toolCalls: [{ name: 'count', args: { by: 3 } }] },
    { text: 'counted' },
  ]);
  const agent = createAgent({ model: scriptedModel(script), tools: [count], policy, session });
  const events: AgentEvent[] = [];
  agent.on('*', (e) => events.push(e));
  agent.on('approval_requested', (e) => agent.approve(e));
  await agent.prompt('count');
  await agent.prompt('count again');
  session.close();
  await agent.stop();
  return { manager, session, agent, events };
}

describe('sessions: replay and fork', () => {
  it('replays a session offline: the same events and the same journal, without calling the model or the tools', async () => {
    const dir = tempDir();
    const { manager, session, events } = await recordSession(dir);
    const before = counter;
    const original = manager.open(session.id);
    const originalRecords = readFileSync(join(dir, `${session.id}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as JournalRecord);
    original.close();
    const replay = await manager.replay(session.id, { tools: [count], policy });
    expect(counter).toBe(before); // no tool ran
    expect(comparable(replay.events)).toEqual(comparable(events));
    expect(normalized(replay.records)).toEqual(normalized(originalRecords));
  });

  it('a replay that goes off its recording fails its turn with a clear error instead of calling anything', async () => {
    const dir = tempDir();
    const { manager, session, events } = await recordSession(dir);
    // A fork cut after the first turn's last tool result holds no answer for the step that follows.
    const lastResult = events.filter((e) => e.type === 'tool_execution_end' && e.turn === 1).at(-1);
    manager.fork(session.id, { atSeq: lastResult?.seq ?? 0, id: 'cut' }).close();
    const before = counter;
    const replay = await manager.replay('cut', { tools: [count], policy });
    expect(counter).toBe(before);
    const ends = replay.events.filter((e) => e.type === 'turn_end');
    expect(ends).toMatchObject([{ stopReason: 'error', error: { code: 'invalid_request' } }]);
    expect(ends[0]?.type === 'turn_end' && ends[0].error?.message).toMatch(/went off its recording/);
  });

  it('forks from the middle, leaving the source byte-identical, and the fork goes on from that point', async () => {
    const dir = tempDir();
    const { manager, session, events } = await recordSession(dir);
    const file = join(dir, `${session.id}.jsonl`);
    const source = readFileSync(file);
    const firstEnd = events.find((e) => e.type === 'turn_end');
    const fork = manager.fork(session.id, { atSeq: firstEnd?.seq ?? 0, id: 'forked' });
    expect(readFileSync(file)).toEqual(source);
    const model = scriptedModel([{ text: 'a different second turn' }]);
    const agent = createAgent({ model, tools: [count], policy, session: fork });
    await fork.idle();
    expect(agent.messages).toHaveLength(6);
    expect(toolResults(agent.messages).map(resultText)).toHaveLength(3);
    const result = await agent.prompt('something else');
    expect(result.text).toBe('a different second turn');
    expectValidHistory(agent.messages);
    fork.close();
    await agent.stop();
    expect(readFileSync(file)).toEqual(source);
    expect(manager.list().find((info) => info.id === 'forked')).toMatchObject({
      forkOf: { id: session.id },
      title: 'counting',
      messages: 8,
    });
  });
});
