import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type Policy, scriptedModel, sessions, textOf } from '../../src/index.js';
import { expectValidHistory, latch, nextEvent, resultText, toolResults } from '../agent/helpers.js';
import { byHistory, cleanTempDirs, countTool, crashCopy, tempDir } from './helpers.js';

cleanTempDirs();

const add = defineTool({
  name: 'add',
  description: 'adds',
  schema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => String(a + b),
});

describe('sessions: journal and resume', () => {
  it('journals a run and reopens it with the same history, usage and title; the agent goes on from there', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ title: 'sums' });
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', args: { a: 1, b: 2 }, id: 'c1' }], usage: { input: 10, output: 2 } },
      { text: 'three', usage: { input: 12, output: 1 } },
      { text: 'still three', usage: { input: 14, output: 2 } },
    ]);
    const agent = createAgent({ model, tools: [add], session });
    await agent.prompt('1 + 2?');
    expect(manager.list()).toMatchObject([{ id: session.id, title: 'sums', status: 'open', messages: 4 }]);
    session.close();
    await agent.stop();
    const [info] = manager.list();
    expect(info).toMatchObject({ status: 'idle', usage: { input: 22, output: 3 }, messages: 4 });

    // The file is human-readable JSON Lines, and the tool's result is stored once.
    const text = readFileSync(join(dir, `${session.id}.jsonl`), 'utf8');
    expect(
      text
        .split('\n')
        .filter(Boolean)
        .every((line) => JSON.parse(line)),
    ).toBeTruthy();
    expect(text.match(/"text":"3"/g)).toHaveLength(1);

    const reopened = manager.open(session.id);
    expect(reopened.status).toBe('idle');
    const again = createAgent({ model, tools: [add], session: reopened });
    expect(again.id).toBe(agent.id);
    expect(again.messages).toEqual(agent.messages);
    expect(again.usage).toEqual(agent.usage);
    const result = await again.prompt('and again?');
    expect(result.text).toBe('still three');
    expect(model.requests[2]?.messages).toHaveLength(5);
    reopened.close();
    await again.stop();
    expect(manager.open(session.id).journal.messages).toHaveLength(6);
  });

  it('refuses a second writer and a mismatched agent id', async () => {
    const manager = sessions({ dir: tempDir() });
    const session = manager.create({ agentId: 'root' });
    expect(() => manager.open(session.id)).toThrow(/open for writing/);
    const model = scriptedModel([]);
    expect(() => createAgent({ model, id: 'other', session })).toThrow(/belongs to agent "root"/);
    const agent = createAgent({ model, session });
    expect(() => createAgent({ model, session })).toThrow(/already in use/);
    session.close();
    await agent.stop();
    expect(() => manager.create({ id: session.id })).toThrow(/already exists/);
    manager.delete(session.id);
    expect(manager.list()).toEqual([]);
    expect(manager.latest()).toBeUndefined();
    expect(() => manager.open('missing')).toThrow(/No session "missing"/);
  });

  it('after a crash mid-batch: results journaled are kept, a running call is interrupted, a safe one runs again', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create();
    const runs = { quick: 0, slow: 0, safe: 0 };
    const hang = latch();
    const quick = defineTool({
      name: 'quick',
      description: 'q',
      // Different arguments: identical calls in one answer would run once.
      schema: z.object({ n: z.number() }),
      execute: () => `quick ${++runs.quick}`,
    });
    const slow = defineTool({
      name: 'slow',
      description: 's',
      schema: z.object({}),
      executionMode: 'sequential',
      execute: async () => {
        runs.slow++;
        await hang.promise;
        return 'slow done';
      },
    });
    const safe = defineTool({
      name: 'safe',
      description: 'r',
      schema: z.object({}),
      safeToRepeat: true,
      execute: async () => {
        runs.safe++;
        await hang.promise;
        return `safe ${runs.safe}`;
      },
    });
    const script = byHistory([
      { toolCalls: [{ name: 'quick', args: { n: 1 } }, { name: 'quick', args: { n: 2 } }, { name: 'slow' }] },
      { toolCalls: [{ name: 'safe' }] },
      { text: 'done' },
    ]);
    const tools = [quick, slow, safe];
    const agent = createAgent({ model: scriptedModel(script), tools, session });
    const slowStarted = nextEvent(agent, (e) => e.type === 'tool_execution_start' && e.toolName === 'slow');
    void agent.prompt('go');
    await slowStarted;
    const crashed = crashCopy(dir); // killed after the second call of the 3-call batch, the third running
    expect(runs).toEqual({ quick: 2, slow: 1, safe: 0 });
    // The crashed process is gone: this one must not go on in the background.
    session.close();
    await agent.stop();

    const resumed = sessions({ dir: crashed });
    expect(resumed.list()[0]?.status).toBe('interrupted');
    const reopened = resumed.open(session.id);
    const second = createAgent({ model: scriptedModel(script), tools, session: reopened });
    const safeStarted = nextEvent(second, (e) => e.type === 'tool_execution_start' && e.toolName === 'safe');
    await safeStarted;
    expect(runs).toEqual({ quick: 2, slow: 1, safe: 1 });
    const crashedAgain = crashCopy(crashed); // killed while the safe tool runs
    hang.resolve();
    await reopened.idle();
    expect(runs).toEqual({ quick: 2, slow: 1, safe: 1 });
    const results = toolResults(second.messages).map(resultText);
    expect(results).toEqual(['quick 1', 'quick 2', expect.stringContaining('interrupted by a restart'), 'safe 1']);
    expectValidHistory(second.messages);
    expect(second.messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'done' }] });

    const third = sessions({ dir: crashedAgain }).open(session.id);
    const thirdAgent = createAgent({ model: scriptedModel(script), tools, session: third });
    await third.idle();
    expect(runs.safe).toBe(2); // safe to repeat: it ran again
    expect(toolResults(thirdAgent.messages).map(resultText).at(-1)).toBe('safe 2');
    expectValidHistory(thirdAgent.messages);
    for (const s of [reopened, third]) s.close();
    await Promise.all([second.stop(), thirdAgent.stop()]);
  });

  it('snapshots a turn once, and after a crash replays its steps from the journal without running them again', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const runs: number[] = [];
    const hang = latch();
    const fourth = latch();
    const count = countTool(4, fourth, hang.promise, runs);
    const script = byHistory([
      ...[1, 2, 3, 4].map((n) => ({ toolCalls: [{ name: 'count', args: { n } }] })),
      { text: 'four' },
    ]);
    const agent = createAgent({ model: scriptedModel(script), tools: [count], session });
    void agent.prompt('count to four');
    await fourth.promise;
    const crashed = crashCopy(dir); // killed while step 4's tool runs
    session.close();
    await agent.stop();
    const records = readFileSync(join(crashed, `${session.id}.jsonl`), 'utf8')
      .split('\n')
      .filter(Boolean);
    // One snapshot when the agent was created, one at the turn's start: none per step.
    expect(records.filter((line) => JSON.parse(line).k === 'snapshot')).toHaveLength(2);

    const reopened = sessions({ dir: crashed }).open(session.id);
    const model = scriptedModel(script);
    const resumed = createAgent({ model, tools: [count], session: reopened });
    await reopened.idle();
    expect(runs).toEqual([1, 2, 3, 4]); // steps 1-3 replayed from the journal, step 4's call interrupted
    expect(model.requests.map((r) => r.messages.length)).toEqual([9]); // only the step after the crash is asked
    expect(toolResults(resumed.messages).map(resultText)).toEqual([
      'counted 1',
      'counted 2',
      'counted 3',
      expect.stringContaining('interrupted by a restart'),
    ]);
    expectValidHistory(resumed.messages);
    expect(resumed.messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'four' }] });
    reopened.close();
    await resumed.stop();
    // Each message is journaled once: the replayed steps wrote nothing again.
    const journal = sessions({ dir: crashed }).open(session.id).journal;
    expect(journal.messages).toEqual(resumed.messages);
  });

  it('asks the model again for a call in flight at the crash, and resubmits queued prompts', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create();
    const asked = latch();
    const never = new Promise<never>(() => {});
    const first = scriptedModel(async (_request, index) => {
      if (index === 0) return { text: 'one' };
      asked.resolve();
      return never;
    });
    const agent = createAgent({ model: first, session });
    await agent.prompt('first');
    void agent.prompt('second');
    void agent.prompt('third');
    await asked.promise;
    const crashed = crashCopy(dir);

    const reopened = sessions({ dir: crashed }).open(session.id);
    const model = scriptedModel((request) => ({ text: `answer to ${request.messages.length}` }));
    const resumed = createAgent({ model, session: reopened });
    const ends: string[] = [];
    resumed.on('turn_end', (e) => ends.push(e.stopReason));
    await reopened.idle();
    expect(ends).toEqual(['completed', 'completed']);
    expect(resumed.messages.map((m) => (m.role === 'user' ? 'u' : 'a')).join('')).toBe('uauaua');
    expect(model.requests.map((r) => r.messages.length)).toEqual([3, 5]);
    for (const s of [session, reopened]) s.close();
    await Promise.all([agent.stop(), resumed.stop()]);
  });

  it('runs prompts given before a crash before one given right after the restart', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create();
    const asked = latch();
    const never = new Promise<never>(() => {});
    const agent = createAgent({
      model: scriptedModel(async () => {
        asked.resolve();
        return never;
      }),
      session,
    });
    void agent.prompt('first');
    void agent.prompt('second');
    await asked.promise;
    const crashed = crashCopy(dir);

    const reopened = sessions({ dir: crashed }).open(session.id);
    const model = scriptedModel((request) => ({ text: `answer to ${request.messages.length}` }));
    const resumed = createAgent({ model, session: reopened });
    // Given in the same tick as the restart, before the restored session has submitted 'second' again.
    const third = resumed.prompt('third');
    await reopened.idle();
    expect((await third).stopReason).toBe('completed');
    const prompts = resumed.messages.filter((m) => m.role === 'user').map((m) => textOf(m));
    expect(prompts).toEqual(['first', 'second', 'third']);
    expectValidHistory(resumed.messages);
    for (const s of [session, reopened]) s.close();
    await Promise.all([agent.stop(), resumed.stop()]);
  });

  it('announces a pending approval again after a crash, and gives a recorded answer again', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create();
    const policy: Policy = (call) => (call.name === 'add' ? 'ask' : 'allow');
    const script = byHistory([
      {
        toolCalls: [
          { name: 'add', args: { a: 1, b: 1 } },
          { name: 'add', args: { a: 2, b: 2 } },
        ],
      },
      { text: 'done' },
    ]);
    const agent = createAgent({ model: scriptedModel(script), tools: [add], policy, session });
    const asked: string[] = [];
    agent.on('approval_requested', (e) => asked.push(e.toolCallId));
    void agent.prompt('add');
    await nextEvent(agent, (e) => e.type === 'approval_requested' && e.toolCallId === 'call_0_1');
    agent.approve('call_0_0');
    await new Promise((resolve) => setImmediate(resolve));
    const crashed = crashCopy(dir);

    const reopened = sessions({ dir: crashed }).open(session.id);
    const resumed = createAgent({ model: scriptedModel(script), tools: [add], policy, session: reopened });
    const again: string[] = [];
    resumed.on('approval_requested', (e) => {
      again.push(e.toolCallId);
      if (e.toolCallId === 'call_0_1') resumed.deny(e, 'no');
    });
    await reopened.idle();
    expect(again).toEqual(['call_0_0', 'call_0_1']);
    expect(toolResults(resumed.messages).map(resultText)).toEqual(['2', 'The user denied this tool call: no']);
    expectValidHistory(resumed.messages);
    for (const s of [session, reopened]) s.close();
    await Promise.all([agent.stop(), resumed.stop()]);
  });

  it('journals a denial that closes the step, and an "allow always", and keeps both after a crash', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    // The mode asks before a tool with effects runs; a remembered approval comes before the mode.
    const permissions = { mode: 'default' as const };
    const hang = new Promise<never>(() => {});
    const script = (request: Parameters<ReturnType<typeof byHistory>>[0]) => {
      const n = request.messages.filter((m) => m.role === 'tool').length;
      if (n === 0) return { toolCalls: [{ name: 'add', args: { a: 1, b: 1 }, id: 'first' }] };
      if (n === 1) return { toolCalls: [{ name: 'add', args: { a: 2, b: 2 }, id: 'second' }] };
      if (n === 2) return { toolCalls: [{ name: 'add', args: { a: 3, b: 3 }, id: 'third' }] };
      return { text: 'done' };
    };
    let calls = 0;
    const agent = createAgent({
      model: scriptedModel((request) =>
        request.messages.filter((m) => m.role === 'tool').length === 3 ? hang : script(request),
      ),
      tools: [add],
      permissions,
      session,
    });
    agent.on('approval_requested', (e) => {
      calls++;
      // The only waiting call of its step: the denial closes the step, and the next one starts in the same go.
      if (e.toolCallId === 'first') agent.deny(e, 'not yet');
      else agent.approve(e, { remember: 'add' });
    });
    const stuck = nextEvent(agent, (e) => e.type === 'message_start' && e.step === 4);
    void agent.prompt('add');
    await stuck;
    expect(calls).toBe(2); // the third call was remembered: not asked
    await new Promise((resolve) => setImmediate(resolve)); // the tick's records are written when it ends
    const crashed = crashCopy(dir); // killed while the model answers step 4
    session.close();
    await agent.stop();

    const reopened = sessions({ dir: crashed }).open(session.id);
    const resumed = createAgent({ model: scriptedModel(script), tools: [add], permissions, session: reopened });
    const askedAgain: string[] = [];
    resumed.on('approval_requested', (e) => askedAgain.push(e.toolCallId));
    await reopened.idle();
    // Replayed from the turn's start: the recorded answers are given again, nobody is asked.
    expect(askedAgain).toEqual(['first', 'second']);
    expect(toolResults(resumed.messages).map(resultText)).toEqual([
      'The user denied this tool call: not yet',
      '4',
      '6',
    ]);
    expectValidHistory(resumed.messages);
    // "Allow always" outlives the restart: a new call of that tool runs without asking.
    expect(resumed.permissions.rememberedRules).toEqual(agent.permissions.rememberedRules);
    expect(resumed.permissions.rememberedRules.length).toBeGreaterThan(0);
    reopened.close();
    await resumed.stop();
  });

  it('keeps a steer that was waiting for a step boundary when the process died, and delivers it once', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const hang = latch();
    const running = latch();
    const slow = defineTool({
      name: 'slow',
      description: 's',
      schema: z.object({}),
      execute: async () => {
        running.resolve();
        await hang.promise;
        return 'slow done';
      },
    });
    const script = byHistory([{ toolCalls: [{ name: 'slow' }] }, { text: 'done' }]);
    const agent = createAgent({ model: scriptedModel(script), tools: [slow], session });
    void agent.prompt('go');
    await running.promise;
    agent.steer('also check the tests'); // waits for the step boundary after the tool
    const crashed = crashCopy(dir);
    session.close();
    await agent.stop();

    const reopened = sessions({ dir: crashed }).open(session.id);
    const model = scriptedModel(script);
    const resumed = createAgent({ model, tools: [slow], session: reopened });
    await reopened.idle();
    const steers = (messages: readonly { role: string; source?: string }[]) =>
      messages.filter((m) => m.role === 'user' && m.source === 'steer');
    expect(steers(resumed.messages)).toHaveLength(1);
    expect(model.requests).toHaveLength(1);
    expect(steers(model.requests[0]?.messages ?? [])).toMatchObject([
      { content: [{ type: 'text', text: 'also check the tests' }] },
    ]);
    expectValidHistory(resumed.messages);
    reopened.close();
    await resumed.stop();
    // Journaled once, and joined once: a second restart sends nothing again.
    const again = sessions({ dir: crashed }).open(session.id);
    expect(again.journal.steers).toHaveLength(1);
    expect(again.journal.waitingSteers(0)).toEqual([]);
    again.close();
  });
});
