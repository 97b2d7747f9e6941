/**
 * A whole tree's replay against its live run, event by event: every agent of the tree (the root or the supervisor
 * itself, and each subagent) publishes in the replay the events it published live, in the same order, on both
 * stores. The tree holds a foreground swarm, a background subagent whose result reaches the root while its turn
 * runs, a task that fails and is restarted, and one that fails for good.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  createSupervisor,
  defineTool,
  type ModelRequest,
  type ScriptedAnswer,
  scriptedModel,
  sessions,
} from '../../src/index.js';
import { SqliteStore } from '../../src/session/index.js';
import { latch, taskOf } from '../agent/helpers.js';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const stores = [
  ['JSONL', (dir: string) => sessions({ dir })],
  ['SQLite', (dir: string) => sessions({ store: new SqliteStore(join(dir, 'sessions.db')) })],
] as const;

/** An event without what differs between two runs by nature: time, seq, streamed deltas, durations. */
function comparable(events: readonly AgentEvent[]) {
  return events
    .filter((e) => e.type !== 'message_update')
    .map(({ seq: _seq, time: _time, ...rest }) =>
      rest.type === 'tool_execution_end' ? { ...rest, durationMs: 0 } : rest,
    );
}

/** Each agent's events, in order: the live run's interleaving of agents is the scheduler's, a replay's its own. */
function byAgent(events: readonly AgentEvent[]): Map<string, ReturnType<typeof comparable>> {
  const map = new Map<string, ReturnType<typeof comparable>>();
  for (const event of comparable(events)) {
    const list = map.get(event.agentId) ?? [];
    list.push(event);
    map.set(event.agentId, list);
  }
  return map;
}

/** The replay publishes every agent's events as the live run did: same agents, same events, same order. */
function expectSameTree(live: readonly AgentEvent[], replayed: readonly AgentEvent[]): void {
  const want = byAgent(live);
  const got = byAgent(replayed);
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [agentId, list] of want) expect(got.get(agentId), agentId).toEqual(list);
  expect(replayed.filter((e) => e.type !== 'message_update')).toHaveLength(comparable(live).length);
}

/** Each subagent calls `work` once, then answers; `flaky` fails its first attempt, `broken` every attempt. */
function subagentAnswer(request: ModelRequest, attempts: Map<string, number>): ScriptedAnswer {
  const who = taskOf(request);
  const tools = request.messages.filter((m) => m.role === 'tool').length;
  if (tools === 0) {
    attempts.set(who, (attempts.get(who) ?? 0) + 1);
    return { toolCalls: [{ id: `${who}_${attempts.get(who)}`, name: 'work', args: { who } }] };
  }
  const failing = who === 'broken' || (who === 'flaky' && attempts.get(who) === 1);
  // Nothing streamed before the failure: what a failed call streamed is discarded, and no journal keeps it.
  if (failing) return { error: { code: 'invalid_request', message: `${who} went wrong` } };
  return { text: `${who} done` };
}

/** `work`: the foreground task `fg` waits until the background subagent has settled, so its result arrives mid-turn. */
function workTool(bgSettled: Promise<void>, runs: string[]) {
  return defineTool({
    name: 'work',
    description: 'w',
    schema: z.object({ who: z.string() }),
    execute: async ({ who }) => {
      runs.push(who);
      if (who === 'fg') await bgSettled;
      return `${who} worked`;
    },
  });
}

describe.each(stores)('sessions: a whole tree replays as it ran (%s)', (_name, manager) => {
  it('a root agent: foreground swarm, a background result into a running turn, a restarted and a failed task', async () => {
    const dir = tempDir();
    const attempts = new Map<string, number>();
    const script = (request: ModelRequest): ScriptedAnswer => {
      if (taskOf(request) !== 'go') return subagentAnswer(request, attempts);
      const last = request.messages.at(-1);
      if (last?.role === 'user' && last.source !== 'notification') {
        const tasks = ['fg', 'flaky', 'broken'].map((prompt) => ({ prompt }));
        return {
          toolCalls: [
            { id: 'root_bg', name: 'agent', args: { prompt: 'bg', background: true } },
            { id: 'root_swarm', name: 'swarm', args: { tasks } },
          ],
        };
      }
      const noticed = request.messages.some((m) => m.role === 'user' && m.source === 'notification');
      return { text: noticed ? 'root saw bg' : 'root done' };
    };
    const bgSettled = latch();
    const runs: string[] = [];
    const config = { tools: [workTool(bgSettled.promise, runs)], subagents: { maxRestarts: 1, restartDelayMs: 0 } };
    const sessionsOf = manager(dir);
    const session = sessionsOf.create({ id: 'tree', agentId: 'root' });
    const agent = createAgent({ ...config, model: scriptedModel(script), session });
    const events: AgentEvent[] = [];
    agent.on('*', (event) => events.push(event), { subtree: true });
    const background = new Set<string>();
    agent.on('subagent_start', (event) => {
      if (event.background) background.add(event.childId);
    });
    agent.on('subagent_end', (event) => {
      if (background.has(event.childId)) bgSettled.resolve();
    });
    const result = await agent.prompt('go');
    await session.idle();
    session.close();
    await agent.stop();
    // The background result reached the root inside its first turn: no turn of its own.
    expect(result.text).toBe('root saw bg');
    expect(events.filter((e) => e.type === 'turn_start' && e.agentId === 'root')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'subagent_end').map((e) => e.type === 'subagent_end' && e.status)).toEqual(
      expect.arrayContaining(['completed', 'completed', 'completed', 'failed']),
    );
    expect(events.filter((e) => e.type === 'subagent_start' && e.attempt === 1)).toHaveLength(2);

    const before = runs.length;
    const replay = await manager(dir).replay('tree', config);
    expect(runs).toHaveLength(before); // no tool ran again
    expectSameTree(events, replay.events);
  });

  it('a supervisor: its own task events and each attempt of its agents, a restarted and a failed task', async () => {
    const dir = tempDir();
    const attempts = new Map<string, number>();
    const runs: string[] = [];
    const tools = [workTool(Promise.resolve(), runs)];
    const sessionsOf = manager(dir);
    const session = sessionsOf.create({ id: 'sup' });
    const model = scriptedModel((request: ModelRequest) => subagentAnswer(request, attempts));
    const supervisor = createSupervisor({ model, tools, session, maxRestarts: 1, restartDelayMs: 0 });
    const events: AgentEvent[] = [];
    supervisor.on('*', (event) => events.push(event));
    const results = await supervisor.swarm(['fg', 'flaky', 'broken']);
    await session.idle();
    session.close();
    await supervisor.stop();
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed', 'failed']);
    expect(events.some((e) => e.agentId === supervisor.id && e.type === 'subagent_start')).toBe(true);

    const before = runs.length;
    const replay = await manager(dir).replay('sup', { tools });
    expect(runs).toHaveLength(before);
    expectSameTree(events, replay.events);
  });
});
