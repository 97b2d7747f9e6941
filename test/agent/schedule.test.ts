import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAgent, scriptedModel } from '../../src/index.js';
import type { MissedRuns } from '../../src/runtime/index.js';

// Fake timers drive the clock: no test here waits for real time.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(new Date('2026-03-02T08:59:30Z')); // a Monday
});
afterEach(() => {
  vi.useRealTimers();
});

const answers = (n: number, latencyMs = 0) =>
  Array.from({ length: n }, (_, i) => ({ text: `report ${i + 1}`, latencyMs }));

describe('agent.schedule(cron, prompt)', () => {
  it('prompts the agent at each time the expression names, and not before', async () => {
    const model = scriptedModel(answers(3));
    const agent = createAgent({ model });
    const outcomes: unknown[] = [];
    const schedule = agent.schedule('0 9 * * *', 'Daily report', {
      timezone: 'UTC',
      onRun: ({ result }) => outcomes.push(result),
    });
    expect(schedule.next()?.toISOString()).toBe('2026-03-02T09:00:00.000Z');

    await vi.advanceTimersByTimeAsync(29_000);
    expect(model.calls).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(model.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(2 * 24 * 3600_000);
    expect(model.calls).toBe(3);
    expect(schedule.runs).toBe(3);
    expect(outcomes).toMatchObject([{ text: 'report 1' }, { text: 'report 2' }, { text: 'report 3' }]);
    expect(agent.messages.filter((m) => m.role === 'user')).toHaveLength(3);
    expect(schedule.next()?.toISOString()).toBe('2026-03-05T09:00:00.000Z');
    await agent.stop();
  });

  it('skips a run that falls due while the previous one still runs', async () => {
    const slow = scriptedModel(answers(4, 90_000)); // each answer takes 90 s; the schedule fires every minute
    const agent = createAgent({ model: slow });
    const skipping = agent.schedule('* * * * *', 'tick');
    await vi.advanceTimersByTimeAsync(30_000 + 4 * 60_000);
    // Runs at :00 (busy until 1:30), skip 1:00, run 2:00 (busy until 3:30), skip 3:00, run 4:00.
    expect(skipping.runs).toBe(3);
    expect(skipping.skipped).toBe(2);
    skipping.stop();
    await agent.stop();
  });

  it('queues a run that falls due during the previous one when asked to', async () => {
    const queued = scriptedModel(answers(4, 90_000));
    const busy = createAgent({ model: queued });
    const queueing = busy.schedule('* * * * *', 'tick', { overlap: 'queue' });
    await vi.advanceTimersByTimeAsync(30_000 + 2 * 60_000);
    expect(queueing.runs).toBe(3);
    expect(queueing.skipped).toBe(0);
    await busy.stop();
  });

  it('reports runs missed during downtime instead of replaying them', async () => {
    const model = scriptedModel(answers(1));
    const agent = createAgent({ model });
    const reports: MissedRuns[] = [];
    const schedule = agent.schedule('0 * * * *', 'hourly', {
      since: new Date('2026-03-02T04:10:00Z'), // the last run before a restart, e.g. from a session
      onMissed: (missed) => reports.push(missed),
    });

    expect(schedule.missed).toBe(4); // 05:00, 06:00, 07:00, 08:00
    expect(reports).toEqual([
      { count: 4, first: new Date('2026-03-02T05:00:00Z'), last: new Date('2026-03-02T08:00:00Z') },
    ]);
    expect(model.calls).toBe(0);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(model.calls).toBe(1);
    await agent.stop();
  });

  it('ends with the agent: a stopped agent runs no more schedules and takes no new ones', async () => {
    const model = scriptedModel(answers(5));
    const agent = createAgent({ model });
    const schedule = agent.schedule('* * * * *', 'tick');
    await vi.advanceTimersByTimeAsync(30_000);
    expect(model.calls).toBe(1);
    await agent.stop();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(model.calls).toBe(1);
    expect(schedule.next()).toBeUndefined();
    expect(() => agent.schedule('* * * * *', 'again')).toThrow(/stopped/);
  });

  it('refuses an expression that is not cron, at once', () => {
    const agent = createAgent({ model: scriptedModel([]) });
    expect(() => agent.schedule('every day at nine', 'x')).toThrow();
    void agent.stop();
  });

  it('reaches a run beyond the longest timer Node can hold (about 24.8 days)', async () => {
    const model = scriptedModel(answers(1));
    const agent = createAgent({ model });
    const schedule = agent.schedule('0 0 1 6 *', 'yearly review', { timezone: 'UTC' }); // June 1st, 3 months away
    await vi.advanceTimersByTimeAsync(60 * 24 * 3600_000);
    expect(model.calls).toBe(0);
    await vi.advanceTimersByTimeAsync(32 * 24 * 3600_000);
    expect(model.calls).toBe(1);
    expect(schedule.lastRunAt?.toISOString()).toBe('2026-06-01T00:00:00.000Z');
    await agent.stop();
  });
});
