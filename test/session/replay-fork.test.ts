import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  createSupervisor,
  defineTool,
  type ModelRequest,
  type Policy,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import type { JournalRecord } from '../../src/session/index.js';
import { expectValidHistory, latch, resultText, taskOf, toolResults } from '../agent/helpers.js';
import { byHistory, cleanTempDirs, journalRecords, tempDir } from './helpers.js';

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

/** Each agent's items, in order: what a replay reproduces agent by agent. */
function byAgent<T>(items: readonly T[], agentOf: (item: T) => string | undefined): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const agentId = agentOf(item);
    if (agentId === undefined) continue;
    map.set(agentId, [...(map.get(agentId) ?? []), item]);
  }
  return map;
}

/** Records that are the tree's or the timers' (batches, tasks, notices, schedules): a replay does not write them. */
const TREE = new Set(['session', 'batch', 'task', 'notice', 'schedule']);
// Prompt digests are left out: a replay gives a subagent the tools its calls need, not those its tree added
// (replaySessionAsTest compares the root's).
const agentRecords = (records: readonly JournalRecord[]) =>
  byAgent(
    normalized(records.filter((r) => !TREE.has(r.k)).map((r) => (r.k === 'turn_start' ? { ...r, p: undefined } : r))),
    (r) => (r as { a?: string }).a,
  );
const agentEvents = (events: AgentEvent[]) => byAgent(comparable(events), (e) => e.agentId);

/** The root starts a background swarm of three and answers; each result that reaches it opens a turn. */
function backgroundSwarm(request: ModelRequest): ScriptedAnswer {
  const who = taskOf(request);
  const tools = request.messages.filter((m) => m.role === 'tool').length;
  const notes = request.messages.filter((m) => m.role === 'user' && m.source === 'notification').length;
  if (who === 'go') {
    if (notes > 0) return { text: `root saw ${notes}` };
    if (tools > 0) return { text: 'started' };
    const tasks = [{ prompt: 'a' }, { prompt: 'b' }, { prompt: 'c' }];
    return { toolCalls: [{ id: 'sw', name: 'swarm', args: { background: true, tasks } }] };
  }
  if (tools === 0) return { toolCalls: [{ id: `${who}_w`, name: 'work', args: { who } }] };
  return { text: `${who} done` };
}

/** Notifications in a history. */
const noticed = (messages: readonly { role: string; source?: string }[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'notification').length;

/**
 * Records `backgroundSwarm` on session `id` of `dir`: a answers at once, b and c once the root has taken a's
 * result, so the root's turns 2 and on are opened by notifications. Returns once all three reached the root.
 */
async function recordBackgroundSwarm(dir: string, id: string) {
  const gate = latch();
  const runs: string[] = [];
  const work = defineTool({
    name: 'work',
    description: 'w',
    schema: z.object({ who: z.string() }),
    execute: async ({ who }) => {
      runs.push(who);
      if (who !== 'a') await gate.promise;
      return `${who} worked`;
    },
  });
  const config = { tools: [work], subagents: {} };
  const manager = sessions({ dir });
  const session = manager.create({ id });
  const agent = createAgent({ ...config, model: scriptedModel(backgroundSwarm), session });
  const events: AgentEvent[] = [];
  agent.on('*', (e) => events.push(e), { subtree: true });
  const allNoticed = new Promise<void>((resolve) => {
    agent.on('turn_end', () => {
      if (noticed(agent.messages) === 1) gate.resolve();
      if (noticed(agent.messages) === 3) resolve();
    });
  });
  await agent.prompt('go');
  await allNoticed;
  await session.idle();
  session.close();
  await agent.stop();
  return { manager, config, rootId: agent.id, events, runs };
}

describe('sessions: replay of a whole tree', () => {
  it('replays every agent: the root’s turns its notifications opened, and each subagent’s own', async () => {
    const dir = tempDir();
    const { manager, config, rootId, events, runs } = await recordBackgroundSwarm(dir, 'bg');
    const original = journalRecords(dir, 'bg');
    expect(original.filter((r) => r.k === 'turn_start' && r.a === rootId).length).toBeGreaterThanOrEqual(3);

    const replay = await manager.replay('bg', config);
    expect(runs.sort()).toEqual(['a', 'b', 'c']); // no tool ran again
    const want = agentEvents(events);
    const got = agentEvents(replay.events);
    expect([...got.keys()]).toEqual([...want.keys()]);
    for (const [agentId, list] of want) expect(got.get(agentId), agentId).toEqual(list);
    const wantRecords = agentRecords(original);
    const gotRecords = agentRecords(replay.records);
    expect([...gotRecords.keys()]).toEqual([...wantRecords.keys()]);
    for (const [agentId, list] of wantRecords) expect(gotRecords.get(agentId), agentId).toEqual(list);
  });

  it('forks a tree in the middle: the fork continues it, every task settling and reaching its owner', async () => {
    const dir = tempDir();
    const { manager, config, rootId, events } = await recordBackgroundSwarm(dir, 'src');
    // Cut where the root's first turn ended: b and c were still at work there.
    const firstEnd = events.find((e) => e.type === 'turn_end' && e.agentId === rootId);
    const fork = manager.fork('src', { atSeq: firstEnd?.seq ?? 0, id: 'cut' });
    expect(fork.tasks().filter((t) => t.status === 'open').length).toBeGreaterThan(0);
    const again = createAgent({ ...config, model: scriptedModel(backgroundSwarm), session: fork });
    const noticedAgain = new Promise<void>((resolve) => {
      again.on('turn_end', () => {
        if (noticed(again.messages) === 3) resolve();
      });
    });
    await noticedAgain;
    await fork.idle();
    expect(fork.tasks().map((t) => [t.prompt, t.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
    ]);
    expectValidHistory(again.messages);
    fork.close();
    await again.stop();
  });

  it('replays a member that started from a given history, with the same events and records', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'member' });
    const supervisor = createSupervisor({ model: scriptedModel([{ text: 'hello again' }]), session });
    const messages = [
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'earlier' }] },
      {
        role: 'assistant' as const,
        content: [{ type: 'text' as const, text: 'noted' }],
        provider: 'scripted',
        model: 'scripted',
        stopReason: 'stop' as const,
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      },
    ];
    const member = supervisor.agent({ id: 'm', messages });
    const events: AgentEvent[] = [];
    member.on('*', (e) => events.push(e));
    await member.prompt('hi');
    await session.idle();
    session.close();
    await supervisor.stop();

    const replay = await manager.replay('member', {});
    expect(agentRecords(replay.records).get('m')).toEqual(agentRecords(journalRecords(dir, 'member')).get('m'));
    const got = agentEvents(replay.events).get('m') ?? [];
    expect(got.map((e) => e.type)).toEqual(comparable(events).map((e) => e.type));
  });

  it('replays a supervisor’s session: each of its agents, with the same events and records', async () => {
    const dir = tempDir();
    const work = defineTool({
      name: 'work',
      description: 'w',
      schema: z.object({ who: z.string() }),
      execute: ({ who }) => `${who} worked`,
    });
    const manager = sessions({ dir });
    const session = manager.create({ id: 'sup' });
    const supervisor = createSupervisor({ model: scriptedModel(backgroundSwarm), tools: [work], session });
    const events: AgentEvent[] = [];
    supervisor.on('*', (e) => events.push(e));
    const results = await supervisor.swarm(['a', 'b']);
    await session.idle();
    session.close();
    await supervisor.stop();

    const replay = await manager.replay('sup', { tools: [work] });
    const children = results.map((r) => r.agentId);
    const want = agentEvents(events);
    const got = agentEvents(replay.events);
    for (const child of children) {
      expect(got.get(child)?.length ?? 0, child).toBeGreaterThan(0);
      expect(got.get(child), child).toEqual(want.get(child));
    }
    const gotRecords = agentRecords(replay.records);
    for (const [agentId, list] of agentRecords(journalRecords(dir, 'sup'))) {
      expect(gotRecords.get(agentId), agentId).toEqual(list);
    }
    const last = replay.events.filter((e) => e.type === 'message_end' && e.message.role === 'assistant').at(-1);
    expect(last?.type === 'message_end' && textOf(last.message)).toMatch(/^[ab] done$/);
  });
});
