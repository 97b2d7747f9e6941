import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type Agent,
  type AnyTool,
  createSupervisor,
  defineTool,
  type Message,
  type ModelRequest,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import type { JournalRecord, MessageRecord } from '../../src/session/index.js';
import { expectValidHistory, type Latch, latch, resultText, taskOf, toolResults } from '../agent/helpers.js';
import { cleanTempDirs, countTool, crashCopy, journalRecords, tempDir } from './helpers.js';

cleanTempDirs();

/** Each task calls `work` once (its call id names the task), then answers with its name. */
function script(request: ModelRequest): ScriptedAnswer {
  const who = taskOf(request);
  if (!request.messages.some((m) => m.role === 'tool')) {
    return { toolCalls: [{ id: `${who}_work`, name: 'work', args: { who } }] };
  }
  return { text: `${who} done` };
}

type Script = (request: ModelRequest) => ScriptedAnswer;

/**
 * A supervisor on a new session (with its member `memberId`, when given), and what a `kill -9` of it leaves: the
 * journal as written so far (`crash`), opened again by a new supervisor on a fresh model of the same script, with
 * the same member asked for again (`reopen`).
 */
function onSession(script: Script, tools: AnyTool[], memberId?: string) {
  const dir = tempDir();
  const session = sessions({ dir }).create();
  const supervisor = createSupervisor({ model: scriptedModel(script), tools, session });
  const member = memberId === undefined ? undefined : supervisor.agent({ id: memberId, tools });
  const crash = async (): Promise<string> => {
    const crashed = crashCopy(dir);
    session.close();
    await supervisor.stop();
    return crashed;
  };
  const reopen = (crashed: string) => {
    const model = scriptedModel(script);
    const reopened = sessions({ dir: crashed }).open(session.id);
    const again = createSupervisor({ model, tools, session: reopened });
    const rebuilt = memberId === undefined ? undefined : again.agent({ id: memberId, tools });
    return {
      model,
      reopened,
      again,
      rebuilt,
      /** Waits until the rebuilt tree has nothing left to do. */
      idle: () => reopened.idle(),
      /** Closes the session and stops the supervisor, then reads what the journal holds. */
      async close(): Promise<JournalRecord[]> {
        reopened.close();
        await again.stop();
        return journalRecords(crashed, session.id);
      },
    };
  };
  return { dir, session, supervisor, member, crash, reopen };
}

/** A tool that counts its runs in `runs` and never finishes: the crash comes while it runs. */
function hangingTool(name: string, runs: string[], running: Latch): AnyTool {
  return defineTool({
    name,
    description: name.charAt(0),
    schema: z.object({}),
    execute: () => {
      runs.push(name);
      running.resolve();
      return new Promise<string>(() => {});
    },
  });
}

/** A final answer that says whether the model saw a steer. */
const saw = (request: ModelRequest) =>
  request.messages.some((m) => m.role === 'user' && m.source === 'steer') ? 'saw the steer' : 'no steer';

/** Step 1 calls `work`; step 2 answers whether its history holds a steer. */
const workThenSaw: Script = (request) =>
  request.messages.some((m) => m.role === 'tool')
    ? { text: saw(request) }
    : { toolCalls: [{ id: 'work_1', name: 'work', args: {} }] };

const lastText = (messages: readonly Message[]) => textOf(messages.at(-1) ?? { role: 'user', content: [] });

const steersOf = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'steer').map((m) => textOf(m));

/** The agent's journal holds each message of its history once: the replay wrote nothing again. */
function expectJournaledOnce(records: JournalRecord[], agentId: string, messages: readonly Message[]): void {
  const indices = records.filter((r): r is MessageRecord => r.k === 'msg' && r.a === agentId).map((r) => r.i);
  expect(indices).toEqual(messages.map((_, i) => i));
}

describe('sessions: createSupervisor({ session })', () => {
  it('reopens a crashed supervisor: settled tasks keep their results, unsettled ones replay and finish', async () => {
    const runs = new Map<string, number>();
    const hang = latch();
    const stuck = latch();
    const work = defineTool({
      name: 'work',
      description: 'w',
      schema: z.object({ who: z.string() }),
      execute: async ({ who }) => {
        runs.set(who, (runs.get(who) ?? 0) + 1);
        if (who === 'c' || who === 'bg') {
          if (who === 'c') stuck.resolve();
          await hang.promise;
        }
        return `${who} worked`;
      },
    });
    const { session, supervisor, crash, reopen } = onSession(script, [work]);
    expect(supervisor.id).toBe(session.header.agentId);
    const [bgTask] = await supervisor.swarm(['bg'], { background: true });
    void supervisor.swarm(['a', 'b', 'c']);
    await stuck.promise;
    await new Promise((resolve) => setImmediate(resolve));
    const settledBefore = session.tasks().filter((task) => task.status !== 'open');
    expect(settledBefore.map((task) => task.prompt).sort()).toEqual(['a', 'b']);
    const crashed = await crash(); // killed while c and bg run their tools

    expect(sessions({ dir: crashed }).list()).toMatchObject([{ id: session.id, status: 'interrupted' }]);
    const { reopened, again, idle, close } = reopen(crashed);
    const ends: string[] = [];
    again.on('*', (event) => {
      if (event.type === 'tool_execution_start' || event.type === 'tool_execution_end') {
        ends.push(`${event.type} ${event.toolCallId}${event.replayed ? ' (replayed)' : ''}`);
      }
    });
    await idle();
    // A replaying subagent marks what its journal held: the start of its running call, not its new result.
    expect(ends.filter((e) => e.includes('c_work'))).toEqual([
      'tool_execution_start c_work (replayed)',
      'tool_execution_end c_work',
    ]);
    const tasks = reopened.tasks();
    expect(tasks.map((task) => [task.prompt, task.status])).toEqual([
      ['bg', 'completed'],
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
    ]);
    // a and b settled before the crash: never started again; c and bg replayed, their running tool interrupted.
    expect(Object.fromEntries(runs)).toEqual({ a: 1, b: 1, c: 1, bg: 1 });
    for (const id of ['c', 'bg']) {
      const task = tasks.find((t) => t.prompt === id);
      const history = again.messagesOf(task?.agentId ?? '') ?? [];
      expect(toolResults(history).map(resultText)).toEqual([expect.stringContaining('interrupted by a restart')]);
      expectValidHistory(history);
    }
    const a = tasks.find((task) => task.prompt === 'a');
    await expect(again.result(a?.taskId ?? '')).resolves.toMatchObject({ status: 'completed', text: 'a done' });
    await expect(again.result(bgTask ?? '')).resolves.toMatchObject({ status: 'completed', text: 'bg done' });
    await close();
    expect(sessions({ dir: crashed }).list()).toMatchObject([{ status: 'idle' }]);
  });

  it('refuses an agent session, and a supervisor id that is not the session’s', async () => {
    const manager = sessions({ dir: tempDir() });
    const session = manager.create({ agentId: 'root' });
    expect(() => createSupervisor({ id: 'other', session })).toThrow(/belongs to supervisor "root"/);
    session.close();
  });

  it("sends a subagent's steer again when it was still waiting for a step boundary at the crash", async () => {
    const runs: string[] = [];
    const working = latch();
    const work = hangingTool('work', runs, working); // the crash comes while it runs, the steer waiting for step 2
    const { dir, session, supervisor, crash, reopen } = onSession(workThenSaw, [work]);
    void supervisor.swarm(['steered']);
    await working.promise;
    const [task] = session.tasks();
    const subagent = supervisor.get(task?.agentId ?? '');
    expect(subagent).toBeDefined();
    subagent?.steer('and mind the steer');
    expect(journalRecords(dir, session.id).filter((r) => r.k === 'steer')).toHaveLength(1);
    const { model, reopened, again, idle, close } = reopen(await crash());
    await idle();
    expect(runs).toEqual(['work']); // closed with a restart's result, not run again
    expect(model.requests).toHaveLength(1); // step 2 only, with the steer
    const history = again.messagesOf(task?.agentId ?? '') ?? [];
    expect(steersOf(history)).toEqual(['and mind the steer']);
    expect(lastText(history)).toBe('saw the steer');
    expectValidHistory(history);
    expect(reopened.taskResult(task?.taskId ?? '')).toMatchObject({ status: 'completed', text: 'saw the steer' });
    const records = await close();
    // Journaled once: the steer sent again is the one the journal held.
    expect(records.filter((r) => r.k === 'steer')).toHaveLength(1);
    expectJournaledOnce(records, task?.agentId ?? '', history);
  });
});

describe('sessions: members of a supervisor on a session', () => {
  it('rebuilds a member after a crash: its finished turns replay, the turn in flight goes on, nothing runs twice', async () => {
    const runs: number[] = [];
    const hang = latch();
    const third = latch();
    const count = countTool(3, third, hang.promise, runs);
    // Turn 1 counts 1 and answers; turn 2 counts 2, 3, 4 and answers.
    const memberScript = (request: ModelRequest): ScriptedAnswer => {
      const results = request.messages.filter((m) => m.role === 'tool').length;
      const last = request.messages.at(-1);
      if (last?.role === 'user')
        return { toolCalls: [{ id: `count_${results + 1}`, name: 'count', args: { n: results + 1 } }] };
      if (results === 1) return { text: 'one' };
      if (results < 4) return { toolCalls: [{ id: `count_${results + 1}`, name: 'count', args: { n: results + 1 } }] };
      return { text: 'four' };
    };
    const { member, crash, reopen } = onSession(memberScript, [count], 'counter');
    await member?.prompt('count to one');
    void member?.prompt('count on to four');
    await third.promise;
    const { model, rebuilt, idle, close } = reopen(await crash()); // killed while 3 is being counted
    const messages = () => (rebuilt as Agent).messages;
    await idle();
    expect(runs).toEqual([1, 2, 3, 4]); // 1 and 2 replayed from the journal, 3 interrupted, 4 live
    expect(model.requests).toHaveLength(2); // the steps after the crash only: count 4, then the answer
    expect(toolResults(messages()).map(resultText)).toEqual([
      'counted 1',
      'counted 2',
      expect.stringContaining('interrupted by a restart'),
      'counted 4',
    ]);
    expect(lastText(messages())).toBe('four');
    expectValidHistory(messages());
    expectJournaledOnce(await close(), 'counter', messages());
  });

  it("replays a member's steer at the step boundary where it joined before the crash", async () => {
    const runs: string[] = [];
    const steered = latch();
    const hanging = latch();
    const work = defineTool({
      name: 'work',
      description: 'w',
      schema: z.object({}),
      execute: async () => {
        runs.push('work');
        await steered.promise; // the steer arrives while step 1's tool runs: it joins at step 2's boundary
        return 'worked';
      },
    });
    const hang = hangingTool('hang', runs, hanging);
    // Step 1 works, step 2 hangs (the crash), step 3 answers with whether its history holds the steer.
    const stepScript = (request: ModelRequest): ScriptedAnswer => {
      const results = request.messages.filter((m) => m.role === 'tool').length;
      if (results === 0) return { toolCalls: [{ id: 'work_1', name: 'work', args: {} }] };
      if (results === 1) return { toolCalls: [{ id: 'hang_1', name: 'hang', args: {} }] };
      return { text: saw(request) };
    };
    const { member, crash, reopen } = onSession(stepScript, [work, hang], 'stepper');
    void member?.prompt('go');
    await new Promise((resolve) => setImmediate(resolve));
    member?.steer('and mind the steer');
    steered.resolve();
    await hanging.promise;
    const before = member?.messages.map((m) => m.role);
    expect(before).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
    const { model, rebuilt, idle, close } = reopen(await crash()); // killed while step 2's tool runs
    const messages = () => (rebuilt as Agent).messages;
    await idle();
    expect(runs).toEqual(['work', 'hang']); // both answered from the journal after the restart
    expect(model.requests).toHaveLength(1); // step 3 only
    expect(steersOf(messages())).toEqual(['and mind the steer']);
    expect(
      messages()
        .slice(0, 5)
        .map((m) => m.role),
    ).toEqual(before);
    expect(lastText(messages())).toBe('saw the steer');
    expectValidHistory(messages());
    expectJournaledOnce(await close(), 'stepper', messages());
  });

  it("sends a member's steer again when it was still waiting for a step boundary at the crash", async () => {
    const runs: string[] = [];
    const working = latch();
    const work = hangingTool('work', runs, working); // the crash comes while it runs, the steer waiting for step 2
    const { dir, session, member, crash, reopen } = onSession(workThenSaw, [work], 'steered');
    void member?.prompt('go');
    await working.promise;
    member?.steer('and mind the steer');
    expect(journalRecords(dir, session.id).filter((r) => r.k === 'steer')).toHaveLength(1);
    const { model, rebuilt, idle, close } = reopen(await crash());
    const messages = () => (rebuilt as Agent).messages;
    await idle();
    expect(runs).toEqual(['work']); // closed with a restart's result, not run again
    expect(model.requests).toHaveLength(1); // step 2 only, with the steer
    expect(steersOf(messages())).toEqual(['and mind the steer']);
    expect(lastText(messages())).toBe('saw the steer');
    expectValidHistory(messages());
    const records = await close();
    // Journaled once: the steer sent again is the one the journal held.
    expect(records.filter((r) => r.k === 'steer')).toHaveLength(1);
  });

  it('replays a turn that went round after its final answer because a steer arrived while it streamed', async () => {
    const runs: string[] = [];
    const hanging = latch();
    const hang = hangingTool('hang', runs, hanging);
    const streamScript = (request: ModelRequest): ScriptedAnswer => {
      const last = request.messages.at(-1);
      if (last?.role === 'user' && last.source === 'steer') return { text: 'saw the steer' };
      if (last?.role === 'tool') return { text: 'after hang' };
      if (last?.role === 'user' && textOf(last) === 'hang') {
        return { toolCalls: [{ id: 'hang_1', name: 'hang', args: {} }] };
      }
      return { text: 'a first answer, streamed slowly', chunkSize: 2, deltaDelayMs: 2 };
    };
    const { supervisor, member, crash, reopen } = onSession(streamScript, [hang], 'streamer');
    let steered = false;
    supervisor.on('message_update', (event) => {
      if (event.agentId !== 'streamer' || steered) return;
      steered = true;
      member?.steer('and mind the steer'); // while the final answer streams: the turn goes round after it
    });
    await member?.prompt('go');
    void member?.prompt('hang');
    await hanging.promise;
    const before = member?.messages.map((m) => textOf(m));
    expect(before?.slice(0, 5)).toEqual([
      'go',
      'a first answer, streamed slowly',
      'and mind the steer',
      'saw the steer',
      'hang',
    ]);
    const { model, rebuilt, idle, close } = reopen(await crash());
    const messages = () => (rebuilt as Agent).messages;
    await idle();
    expect(runs).toEqual(['hang']);
    expect(model.requests).toHaveLength(1); // the step after the interrupted call only
    expect(
      messages()
        .slice(0, 6)
        .map((m) => textOf(m)),
    ).toEqual(before);
    expect(lastText(messages())).toBe('after hang');
    expectValidHistory(messages());
    const records = await close();
    expect(records.filter((r) => r.k === 'steer')).toHaveLength(1);
    expectJournaledOnce(records, 'streamer', messages());
  });

  it("rebuilds a member's own background subagent, and the turn its result opened between two prompts", async () => {
    const runs: string[] = [];
    const hanging = latch();
    const tools = [
      defineTool({
        name: 'work',
        description: 'w',
        schema: z.object({}),
        execute: () => {
          runs.push('work');
          return 'worked';
        },
      }),
      hangingTool('hang', runs, hanging),
    ];
    const ownerScript = (request: ModelRequest): ScriptedAnswer => {
      const last = request.messages.at(-1);
      if (taskOf(request) === 'leaf') {
        return last?.role === 'tool'
          ? { text: 'leaf done' }
          : { toolCalls: [{ id: 'leaf_work', name: 'work', args: {} }] };
      }
      if (last?.role === 'user' && last.source === 'notification') return { text: 'saw leaf' };
      if (last?.role === 'user' && textOf(last) === 'more')
        return { toolCalls: [{ id: 'm_hang', name: 'hang', args: {} }] };
      if (last?.role === 'user') {
        return { toolCalls: [{ id: 'm_bg', name: 'agent', args: { prompt: 'leaf', background: true } }] };
      }
      return { text: last?.role === 'tool' && resultText(last.content[0]).includes('hang') ? 'after hang' : 'waiting' };
    };
    const { supervisor, member, crash, reopen } = onSession(ownerScript, tools, 'owner');
    const woken = new Promise<void>((resolve) => {
      supervisor.on('turn_end', (event) => {
        if (event.agentId === 'owner' && event.inputId.startsWith('notify.')) resolve();
      });
    });
    await member?.prompt('go');
    await woken; // leaf's result woke the idle member: a turn of its own, between the two prompts
    void member?.prompt('more');
    await hanging.promise;
    const before = member?.messages.map((m) => m.role) ?? [];
    const { model, rebuilt, idle, close } = reopen(await crash());
    const messages = () => (rebuilt as Agent).messages;
    await idle();
    expect(runs).toEqual(['work', 'hang']); // nothing ran again
    expect(model.requests).toHaveLength(1); // the step after the interrupted call only
    expect(
      messages()
        .slice(0, before.length)
        .map((m) => m.role),
    ).toEqual(before);
    expect(
      messages()
        .filter((m) => m.role === 'user')
        .map((m) => m.source),
    ).toEqual(['prompt', 'notification', 'prompt']);
    expectValidHistory(messages());
    const records = await close();
    expect(records.filter((r) => r.k === 'notice')).toHaveLength(1);
    expect(records.filter((r) => r.k === 'task' && r.ev === 'settled')).toHaveLength(1);
    expectJournaledOnce(records, 'owner', messages());
  });
});

describe('sessions: a reopened supervisor tree is the same tree', () => {
  /** Each task calls `work` once and answers; a follow-up answers "again". */
  const followUp: Script = (request) => {
    const last = request.messages.at(-1);
    if (last?.role === 'user' && textOf(last) === 'x') return { text: 'again' };
    return script(request);
  };
  const work = defineTool({
    name: 'work',
    description: 'w',
    schema: z.object({ who: z.string() }),
    execute: ({ who }) => `${who} worked`,
  });

  it('keeps its finished subagents readable and resumable by id, within keepFinished and keepHistory', async () => {
    const dir = tempDir();
    const limits = { keepFinished: 1, keepHistory: 1 };
    const session = sessions({ dir }).create();
    const supervisor = createSupervisor({ model: scriptedModel(followUp), tools: [work], session, ...limits });
    const results = await supervisor.swarm(['a', 'b', 'c']);
    const ids = results.map((result) => result.agentId);
    // One kept alive, one archived, the oldest forgotten: what the limits say before the restart.
    const known = (where: string) => where !== 'unknown';
    const places = ids.map((id) => supervisor.whereIs(id));
    expect(places).toEqual(['unknown', 'archived', 'alive']);
    const before = places.map(known);
    const histories = ids.map((id) => supervisor.messagesOf(id));
    await session.idle();
    session.close();
    await supervisor.stop();

    const reopened = sessions({ dir }).open(session.id);
    const again = createSupervisor({ model: scriptedModel(followUp), tools: [work], session: reopened, ...limits });
    expect(ids.map((id) => again.whereIs(id))).toEqual(places);
    expect(ids.map((id) => again.messagesOf(id))).toEqual(histories);
    const resumable = ids.filter((_, i) => before[i]);
    for (const id of resumable) {
      const result = await again.resume(id, 'x');
      expect(result).toMatchObject({ agentId: id, status: 'completed', text: 'again' });
      const history = again.messagesOf(id) ?? [];
      expect(history.slice(0, histories[ids.indexOf(id)]?.length)).toEqual(histories[ids.indexOf(id)]);
      expect(lastText(history)).toBe('again');
      expectValidHistory(history);
    }
    const forgotten = ids.find((_, i) => !before[i]) ?? '';
    await expect(again.resume(forgotten, 'x')).rejects.toThrow(/No finished subagent/);
    await reopened.idle();
    reopened.close();
    await again.stop();
  });
});

describe('sessions: supervisor.result() on a session', () => {
  it('resolves once the settle is stored, with one write for the settles of a tick', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const supervisor = createSupervisor({ model: scriptedModel(() => ({ text: 'done' })), session });
    const ids = await supervisor.swarm(['one', 'two', 'three', 'four'], { background: true });
    const before = session.stats?.writes ?? 0;
    const results = await Promise.all(ids.map((id) => supervisor.result(id)));
    expect(results.map((result) => result.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const settled = journalRecords(dir, session.id).filter((record) => record.k === 'task' && record.ev === 'settled');
    expect(settled.map((record) => (record.k === 'task' ? record.taskId : ''))).toEqual(ids);
    // The four tasks settle in one tick: waiting for their results adds no write of its own.
    expect((session.stats?.writes ?? 0) - before).toBe(1);
    await expect(supervisor.result(ids[0] as string)).resolves.toEqual(results[0]);
    session.close();
    await supervisor.stop();
  });
});
