/**
 * Prompts dropped from the queue (their caller's signal aborted, or the agent stopped) told their callers
 * `interrupted`: the journal says so, and no resume, replay or fork runs them again.
 */
import { describe, expect, it } from 'vitest';
import { createAgent, ForkEditError, type ScriptedAnswer, scriptedModel, sessions, textOf } from '../../src/index.js';
import type { JournalRecord } from '../../src/session/index.js';
import { expectValidHistory, gatedTool, latch, nextEvent } from '../agent/helpers.js';
import { cleanTempDirs, crashCopy, journalRecords, tempDir, untilJournaled } from './helpers.js';

cleanTempDirs();

/** A model that answers `first` (if given) to its first call, then never answers, telling `asked` it was called. */
function stallingModel(first?: ScriptedAnswer) {
  const asked = latch();
  const model = scriptedModel(async (_request, index) => {
    if (first && index === 0) return first;
    asked.resolve();
    return new Promise<never>(() => {});
  });
  return { model, asked };
}

const prompts = (messages: readonly { role: string }[]) =>
  messages.filter((m) => m.role === 'user').map((m) => textOf(m as Parameters<typeof textOf>[0]));

describe('sessions: dropped inputs', () => {
  it('a prompt aborted while queued is not run again when the session resumes after a crash', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const { model: stalled, asked } = stallingModel();
    const agent = createAgent({ model: stalled, session });
    void agent.prompt('first');
    const controller = new AbortController();
    const second = agent.prompt('second', { signal: controller.signal });
    const third = agent.prompt('third');
    await asked.promise;
    controller.abort();
    expect(await second).toMatchObject({ stopReason: 'interrupted', messages: [] });
    // Its caller has heard: the drop is stored, and no turn of it is.
    const records = journalRecords(dir, session.id);
    const input = records.find((r) => r.k === 'input' && textOf(r.messages[0]) === 'second');
    const id = input?.k === 'input' ? input.inputId : '';
    expect(records.filter((r) => 'inputId' in r && r.inputId === id).map((r) => r.k)).toEqual(['input', 'dropped']);
    const crashed = crashCopy(dir);

    const reopened = sessions({ dir: crashed }).open(session.id);
    const model = scriptedModel((request) => ({ text: `answer to ${request.messages.length}` }));
    const resumed = createAgent({ model, session: reopened });
    await reopened.idle();
    expect(prompts(resumed.messages)).toEqual(['first', 'third']);
    expect(model.calls).toBe(2);
    expectValidHistory(resumed.messages);
    for (const s of [session, reopened]) s.close();
    await Promise.all([agent.stop(), resumed.stop()]);
    void third;
  });

  it('a prompt aborted while a resumed session still holds it back never starts', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create({ id: 'held' });
    const { model: stalled, asked } = stallingModel();
    const agent = createAgent({ model: stalled, session });
    void agent.prompt('first');
    await asked.promise;
    const crashed = crashCopy(dir);

    const reopened = sessions({ dir: crashed }).open('held');
    const model = scriptedModel((request) => ({ text: `answer to ${request.messages.length}` }));
    const resumed = createAgent({ model, session: reopened });
    const starts: string[] = [];
    resumed.on('turn_start', (e) => starts.push(e.inputId));
    // Given in the same tick as the restart: the session holds it behind the prompts it submits again.
    const controller = new AbortController();
    const late = resumed.prompt('late', { signal: controller.signal });
    controller.abort();
    expect(await late).toMatchObject({ stopReason: 'interrupted', messages: [] });
    await reopened.idle();
    expect(prompts(resumed.messages)).toEqual(['first']);
    const records = journalRecords(crashed, 'held');
    const input = records.find((r) => r.k === 'input' && textOf(r.messages[0]) === 'late');
    const lateId = input?.k === 'input' ? input.inputId : '';
    expect(records.filter((r) => r.k === 'dropped')).toEqual([{ k: 'dropped', a: resumed.id, inputId: lateId }]);
    expect(starts).not.toContain(lateId);
    expect(model.calls).toBe(1);
    for (const s of [session, reopened]) s.close();
    await Promise.all([agent.stop(), resumed.stop()]);
  });

  it('a snapshot taken while the prompt waited does not bring it back', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create({ id: 'snap' });
    const { model, asked } = stallingModel({ toolCalls: [{ name: 'hang' }] });
    const { tool: hang, gate } = gatedTool('hang');
    const agent = createAgent({ model, tools: [hang], session });
    void agent.prompt('first');
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    const controller = new AbortController();
    const dropped = agent.prompt('dropped', { signal: controller.signal });
    // A steer joins the next step: that step's start is snapshotted, with the prompt in its queue.
    agent.steer('also');
    gate.resolve();
    await asked.promise;
    await untilJournaled(dir, 'snap', (r) => r.k === 'snapshot' && JSON.stringify(r).includes('"queue":[{'));
    controller.abort();
    await dropped;
    const crashed = crashCopy(dir);

    const reopened = sessions({ dir: crashed }).open('snap');
    const resumed = createAgent({ model: scriptedModel([{ text: 'done' }]), tools: [hang], session: reopened });
    const starts: string[] = [];
    resumed.on('turn_start', (e) => starts.push(e.inputId));
    await reopened.idle();
    expect(starts).toEqual([]);
    expect(prompts(resumed.messages)).toEqual(['first', 'also']);
    expect(resumed.messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'done' }] });
    for (const s of [session, reopened]) s.close();
    await Promise.all([agent.stop(), resumed.stop()]);
  });

  it('a session reopened after stop() runs none of the prompts the stop dropped', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create();
    const { tool: hang } = gatedTool('hang');
    const agent = createAgent({ model: scriptedModel([{ toolCalls: [{ name: 'hang' }] }]), tools: [hang], session });
    const running = agent.prompt('go');
    const queued = [agent.prompt('later'), agent.prompt('much later')];
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    await agent.stop();
    session.close();
    expect((await running).stopReason).toBe('interrupted');
    for (const result of await Promise.all(queued)) expect(result).toMatchObject({ stopReason: 'interrupted' });
    expect(journalRecords(dir, session.id).filter((r) => r.k === 'turn_start')).toHaveLength(1);

    const reopened = manager.open(session.id);
    expect(reopened.status).toBe('idle');
    const model = scriptedModel([{ text: 'next' }]);
    const again = createAgent({ model, tools: [hang], session: reopened });
    await reopened.idle();
    expect(model.calls).toBe(0);
    expect(prompts(again.messages)).toEqual(['go']);
    expect((await again.prompt('next one')).text).toBe('next');
    reopened.close();
    await again.stop();
  });

  it('a replay drops the prompt where the original did, and runs nothing of it', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'dropping' });
    const { tool: wait, gate } = gatedTool('wait');
    const model = scriptedModel([{ toolCalls: [{ name: 'wait' }] }, { text: 'one' }, { text: 'two' }]);
    const agent = createAgent({ model, tools: [wait], session });
    const first = agent.prompt('first');
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    const controller = new AbortController();
    const dropped = agent.prompt('dropped', { signal: controller.signal });
    const kept = agent.prompt('kept');
    controller.abort();
    await dropped;
    gate.resolve();
    await Promise.all([first, kept]);
    session.close();
    await agent.stop();

    const replay = await manager.replay('dropping', { tools: [wait] });
    const ends = replay.events.filter((e) => e.type === 'turn_end');
    expect(ends.map((e) => e.type === 'turn_end' && e.stopReason)).toEqual(['completed', 'completed']);
    const joined = replay.events.flatMap((e) => (e.type === 'message_end' ? [e.message] : []));
    expect(prompts(joined)).toEqual(['first', 'kept']);
    // The replay journals what the original did, the input and its drop included, in the same order.
    const facts = (records: readonly JournalRecord[]) =>
      records
        .filter((r) => r.k !== 'session')
        .map((r) => {
          const { s: _s, t: _t, ...rest } = r as JournalRecord & { s?: number; t?: number };
          return rest;
        });
    const original = facts(journalRecords(dir, 'dropping'));
    expect(original.map((r) => r.k)).toContain('dropped');
    expect(facts(replay.records)).toEqual(original);
  });

  it('a fork has no prompt waiting where the only one left was dropped: its edit is refused', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'src' });
    const { tool: wait, gate } = gatedTool('wait');
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'wait' }] }, { text: 'one' }]),
      tools: [wait],
      session,
    });
    const first = agent.prompt('first');
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    const controller = new AbortController();
    const dropped = agent.prompt('dropped', { signal: controller.signal });
    controller.abort();
    await dropped;
    gate.resolve();
    await first;
    session.close();
    await agent.stop();
    const last = Math.max(...journalRecords(dir, 'src').map((r) => ('s' in r ? r.s : 0)));
    expect(() => manager.fork('src', { atSeq: last, id: 'edited', edit: { input: 'instead' } })).toThrow(ForkEditError);
    expect(manager.list().map((info) => info.id)).toEqual(['src']);
  });
});
