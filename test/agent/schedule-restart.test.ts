import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AgentEventOf, createAgent, scriptedModel, sessions } from '../../src/index.js';
import type { ScriptedModel } from '../../src/providers/index.js';
import type { MissedRuns } from '../../src/runtime/index.js';
import { cleanTempDirs, crashCopy, tempDir } from '../session/helpers.js';

// Fake timers drive the clock (the session's own next-macrotask kicks use the real setImmediate): nothing waits.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(new Date('2026-03-02T08:59:30Z'));
});
afterEach(() => {
  vi.useRealTimers();
});
cleanTempDirs();

const reports = (n: number) => Array.from({ length: n }, (_, i) => ({ text: `report ${i + 1}` }));
const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

function scheduleRecords(dir: string, id: string): Array<Record<string, unknown>> {
  return readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((record) => record.k === 'schedule');
}

/** Opens the session's agent again in a "new process" (the same model script), with its schedule events caught. */
function reopen(dir: string, id: string, model: ScriptedModel) {
  const session = sessions({ dir }).open(id);
  const agent = createAgent({ model, session });
  const missed: AgentEventOf<'schedule_missed'>[] = [];
  agent.on('schedule_missed', (event) => missed.push(event));
  return { session, agent, missed };
}

describe('scheduled prompts with a session: they survive a restart', () => {
  it('restores a schedule after a crash, reports the runs missed meanwhile, and does not replay them', async () => {
    const dir = tempDir();
    const first = sessions({ dir }).create({ agentId: 'reporter' });
    const model = scriptedModel(reports(3));
    const agent = createAgent({ model, session: first });
    agent.schedule('0 * * * *', 'Hourly report', { id: 'hourly', timezone: 'UTC' });
    await vi.advanceTimersByTimeAsync(30_000); // 09:00: the first run
    expect(model.calls).toBe(1);
    const crashed = crashCopy(dir); // what a kill -9 at 09:00 leaves
    first.close();
    await agent.stop();

    vi.setSystemTime(new Date('2026-03-02T13:10:00Z')); // the process was down for four hours
    const { session, agent: restarted, missed } = reopen(crashed, first.id, model);
    const [schedule] = restarted.schedules;
    expect(schedule).toMatchObject({ id: 'hourly', cron: '0 * * * *', missed: 4, runs: 0 });
    expect(schedule?.missedRuns).toEqual({
      count: 4,
      first: new Date('2026-03-02T10:00:00Z'),
      last: new Date('2026-03-02T13:00:00Z'),
    });
    await nextMacrotask();
    expect(missed).toEqual([
      expect.objectContaining({
        type: 'schedule_missed',
        agentId: 'reporter',
        scheduleId: 'hourly',
        cron: '0 * * * *',
        count: 4,
        first: Date.parse('2026-03-02T10:00:00Z'),
        last: Date.parse('2026-03-02T13:00:00Z'),
      }),
    ]);
    expect(restarted.getState().schedules).toEqual([
      {
        id: 'hourly',
        cron: '0 * * * *',
        next: Date.parse('2026-03-02T14:00:00Z'),
        runs: 0,
        skipped: 0,
        missed: { count: 4, first: Date.parse('2026-03-02T10:00:00Z'), last: Date.parse('2026-03-02T13:00:00Z') },
      },
    ]);
    expect(model.calls).toBe(1); // reported, not replayed

    await vi.advanceTimersByTimeAsync(50 * 60_000); // 14:00: the schedule runs on its own time again
    expect(model.calls).toBe(2);
    expect(restarted.messages.filter((m) => m.role === 'user')).toHaveLength(2);
    session.close();
    await restarted.stop();

    expect(scheduleRecords(crashed, first.id)).toEqual([
      {
        k: 'schedule',
        a: 'reporter',
        id: 'hourly',
        ev: 'created',
        t: Date.parse('2026-03-02T08:59:30Z'),
        cron: '0 * * * *',
        prompt: 'Hourly report',
        timezone: 'UTC',
      },
      { k: 'schedule', a: 'reporter', id: 'hourly', ev: 'ran', t: Date.parse('2026-03-02T09:00:00Z') },
      {
        k: 'schedule',
        a: 'reporter',
        id: 'hourly',
        ev: 'missed',
        t: Date.parse('2026-03-02T13:00:00Z'),
        count: 4,
        first: Date.parse('2026-03-02T10:00:00Z'),
      },
      { k: 'schedule', a: 'reporter', id: 'hourly', ev: 'ran', t: Date.parse('2026-03-02T14:00:00Z') },
    ]);
  });

  it('counts misses from the last one reported: a second restart does not report the same runs again', async () => {
    const dir = tempDir();
    const created = sessions({ dir }).create();
    const model = scriptedModel(reports(2));
    const agent = createAgent({ model, session: created });
    agent.schedule('0 * * * *', 'Hourly report');
    created.close();
    await agent.stop(); // stopping the agent keeps its schedules in the session

    vi.setSystemTime(new Date('2026-03-02T11:30:00Z'));
    const second = reopen(dir, created.id, model);
    await nextMacrotask();
    expect(second.missed.map((event) => event.count)).toEqual([3]); // 09:00, 10:00, 11:00
    second.session.close();
    await second.agent.stop();

    vi.setSystemTime(new Date('2026-03-02T12:05:00Z'));
    const third = reopen(dir, created.id, model);
    await nextMacrotask();
    expect(third.missed).toMatchObject([{ count: 1, first: Date.parse('2026-03-02T12:00:00Z') }]);
    third.session.close();
    await third.agent.stop();
    expect(model.calls).toBe(0);
  });

  it('finds the restored schedule when start-up code declares it again by id, and hears its missed runs', async () => {
    const dir = tempDir();
    const created = sessions({ dir }).create();
    const model = scriptedModel(reports(2));
    const declare = (agent: ReturnType<typeof createAgent>, heard: MissedRuns[] = []) =>
      agent.schedule('30 9 * * *', 'Morning summary', { id: 'morning', onMissed: (runs) => heard.push(runs) });
    const agent = createAgent({ model, session: created });
    declare(agent);
    created.close();
    await agent.stop();

    vi.setSystemTime(new Date('2026-03-04T08:00:00Z')); // two mornings passed
    const { session, agent: restarted } = reopen(dir, created.id, model);
    const heard: MissedRuns[] = [];
    const declared = declare(restarted, heard);
    expect(restarted.schedules).toEqual([declared]);
    expect(heard).toMatchObject([{ count: 2 }]);

    // A declaration that says something else replaces the journaled one.
    const moved = restarted.schedule('0 10 * * *', 'Morning summary', { id: 'morning' });
    expect(moved).not.toBe(declared);
    expect(restarted.schedules).toEqual([moved]);
    expect(declared.next()).toBeUndefined();
    session.close();
    await restarted.stop();
    expect(scheduleRecords(dir, created.id).map((record) => [record.ev, record.cron])).toEqual([
      ['created', '30 9 * * *'],
      ['missed', undefined],
      ['cancelled', undefined],
      ['created', '0 10 * * *'],
    ]);
  });

  it('journals a cancel: a schedule stopped through its handle is not restored', async () => {
    const dir = tempDir();
    const created = sessions({ dir }).create();
    const model = scriptedModel(reports(2));
    const agent = createAgent({ model, session: created });
    const kept = agent.schedule('0 * * * *', 'kept');
    const cancelled = agent.schedule('*/5 * * * *', 'cancelled');
    cancelled.stop();
    expect(agent.schedules).toEqual([kept]);
    created.close();
    await agent.stop();

    vi.setSystemTime(new Date('2026-03-02T10:00:30Z'));
    const { session, agent: restarted, missed } = reopen(dir, created.id, model);
    expect(restarted.schedules.map((schedule) => schedule.id)).toEqual([kept.id]);
    await nextMacrotask();
    expect(missed.map((event) => event.scheduleId)).toEqual([kept.id]);
    session.close();
    await restarted.stop();
  });

  it('restores nothing in a replay, and an agent without schedules shows none', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const created = manager.create();
    const model = scriptedModel(reports(1));
    const agent = createAgent({ model, session: created });
    agent.schedule('0 * * * *', 'Hourly report');
    await vi.advanceTimersByTimeAsync(30_000);
    created.close();
    await agent.stop();
    const replay = await manager.replay(created.id, {});
    expect(replay.events.filter((event) => event.type === 'schedule_missed')).toEqual([]);
    expect(replay.events.filter((event) => event.type === 'turn_end')).toHaveLength(1);
    expect(createAgent({ model }).getState().schedules).toBeUndefined();
  });
});
