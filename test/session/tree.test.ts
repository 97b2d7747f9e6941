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
import { expectValidHistory, latch, resultText, taskOf, toolResults } from '../agent/helpers.js';
import { cleanTempDirs, crashCopy, journalRecords, tempDir, untilJournaled } from './helpers.js';

cleanTempDirs();

/** Who asks: the root (prompt "go") or a subagent (its prompt names it). */
const asker = taskOf;

const toolMessages = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool').length;
const notified = (request: ModelRequest) =>
  request.messages.some((m) => m.role === 'user' && m.source === 'notification');

/**
 * The root starts one background subagent and a foreground swarm of two, then answers; a notification wakes it
 * again. Each subagent calls `work` once (ids name the subagent) and answers.
 */
function script(request: ModelRequest): ScriptedAnswer {
  const who = asker(request);
  const n = toolMessages(request);
  if (who === 'go') {
    if (notified(request)) return { text: 'root saw the notification' };
    if (n === 0) {
      return {
        toolCalls: [
          { id: 'root_bg', name: 'agent', args: { prompt: 'bg', background: true } },
          { id: 'root_swarm', name: 'swarm', args: { tasks: [{ prompt: 'fg1' }, { prompt: 'fg2' }] } },
        ],
      };
    }
    return { text: 'root done' };
  }
  if (n === 0) return { toolCalls: [{ id: `${who}_work`, name: 'work', args: { who } }] };
  return { text: `${who} done` };
}

function notifications(messages: readonly Message[]): string[] {
  return messages.filter((m) => m.role === 'user' && m.source === 'notification').map((m) => textOf(m));
}

describe('sessions: supervision trees', () => {
  it('journals tasks and notifications, and a crash mid-swarm resumes the whole tree: every task settles once', async () => {
    const dir = tempDir();
    const runs = new Map<string, number>();
    const hang = latch();
    // fg1 finishes; fg2 and bg are still working when the process "dies".
    const work = defineTool({
      name: 'work',
      description: 'work that must not be done twice',
      schema: z.object({ who: z.string() }),
      execute: async ({ who }, ctx) => {
        runs.set(ctx.toolCallId, (runs.get(ctx.toolCallId) ?? 0) + 1);
        if (who !== 'fg1' && (runs.get('bg_work') ?? 0) + (runs.get('fg2_work') ?? 0) <= 2) await hang.promise;
        return `${who} worked`;
      },
    });
    const config = { tools: [work], subagents: { concurrency: 4 } };
    const manager = sessions({ dir });
    const session = manager.create({ id: 'tree', agentId: 'root' });
    const agent = createAgent({ ...config, model: scriptedModel(script), session });
    const bothWorking = new Promise<void>((resolve) => {
      const seen = new Set<string>();
      agent.on(
        'tool_execution_start',
        (event) => {
          if (event.toolName === 'work') seen.add(event.toolCallId);
          if (seen.has('bg_work') && seen.has('fg2_work')) resolve();
        },
        { subtree: true },
      );
    });
    const fg1Settled = new Promise<void>((resolve) => {
      agent.on('subagent_end', (event) => {
        if (event.status === 'completed') resolve();
      });
    });
    void agent.prompt('go');
    await Promise.all([bothWorking, fg1Settled]);
    // The crash comes once fg1's settle is written (records are written when the tick ends; a timer was too short
    // on a loaded machine).
    await untilJournaled(dir, 'tree', (r) => r.k === 'task' && r.ev === 'settled');
    const copy = crashCopy(dir);
    session.close();
    await agent.stop();
    hang.resolve();

    const before = journalRecords(copy, 'tree');
    expect(before.filter((r) => r.k === 'batch')).toHaveLength(2);
    expect(before.filter((r) => r.k === 'task' && r.ev === 'settled')).toHaveLength(1);

    // A fresh "process": the same config on the copied journal.
    const reopened = sessions({ dir: copy }).open('tree');
    expect(reopened.status).toBe('interrupted');
    const model = scriptedModel(script);
    const resumed = createAgent({ ...config, model, session: reopened });
    await reopened.idle();
    const journal = reopened.journal;
    reopened.close();
    await resumed.stop();

    const after = journalRecords(copy, 'tree');
    const settles = after.filter((r) => r.k === 'task' && r.ev === 'settled');
    const tasks = after.flatMap((r) => (r.k === 'batch' ? r.tasks.map((t) => t.taskId) : []));
    expect(tasks).toHaveLength(3);
    // Every task settled exactly once, across the crash.
    expect(settles.map((r) => (r.k === 'task' ? r.taskId : '')).sort()).toEqual([...tasks].sort());
    // The background result was delivered once: one notice, one notification in the root's history.
    expect(after.filter((r) => r.k === 'notice')).toHaveLength(1);
    const history = journal.messages.length > 0 ? sessions({ dir: copy }).open('tree') : undefined;
    const messages = history?.journal.messages ?? [];
    history?.close();
    expectValidHistory(messages);
    expect(notifications(messages)).toHaveLength(1);
    expect(notifications(messages)[0]).toContain('bg done');
    expect(messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: 'root saw the notification' }],
    });
    // The swarm's answer holds fg1's result from before the crash and fg2's from after it.
    const swarm = toolResults(messages).find((r) => r.toolCallId === 'root_swarm');
    expect(resultText(swarm)).toContain('fg1 done');
    expect(resultText(swarm)).toContain('fg2 done');
    // No journaled tool ran twice; the two that were running at the crash were closed, not run again.
    expect(runs.get('fg1_work')).toBe(1);
    expect(runs.get('fg2_work')).toBe(1);
    expect(runs.get('bg_work')).toBe(1);
    // fg1 never ran again: its answers were not asked for after the restore.
    expect(model.requests.map(asker).filter((who) => who === 'fg1')).toHaveLength(0);
  });

  it('a notification owed at the crash joins the resumed root after its replay, not inside a replayed step', async () => {
    // The root's step 2 runs `work` while its background subagent settles: the journal holds the step's answer
    // and the task's settle, but no notice (the root had not reached a step boundary), and its last snapshot is
    // step 1's. The resumed root replays steps 1-2 from the journal; given its notification before the replay
    // has caught up, it joined step 2's boundary, and the journaled answer of step 2 followed it a second time.
    const dir = tempDir();
    const runs = new Map<string, number>();
    const rootWorking = latch();
    const hang = latch();
    const work = defineTool({
      name: 'work',
      description: 'work that must not be done twice',
      schema: z.object({ who: z.string() }),
      execute: async ({ who }, ctx) => {
        runs.set(ctx.toolCallId, (runs.get(ctx.toolCallId) ?? 0) + 1);
        if (who === 'root') {
          rootWorking.resolve();
          await hang.promise;
        } else await rootWorking.promise;
        return `${who} worked`;
      },
    });
    const owed = (request: ModelRequest): ScriptedAnswer => {
      const who = asker(request);
      const n = toolMessages(request);
      if (who !== 'go')
        return n === 0 ? { toolCalls: [{ id: `${who}_work`, name: 'work', args: { who } }] } : { text: `${who} done` };
      if (n === 0) return { toolCalls: [{ id: 'root_bg', name: 'agent', args: { prompt: 'bg', background: true } }] };
      if (n === 1) return { toolCalls: [{ id: 'root_work', name: 'work', args: { who: 'root' } }] };
      return { text: notified(request) ? 'root saw the notification' : 'root done' };
    };
    const config = { tools: [work], subagents: { concurrency: 2 } };
    const session = sessions({ dir }).create({ id: 'owed', agentId: 'root' });
    const agent = createAgent({ ...config, model: scriptedModel(owed), session });
    const settled = new Promise<void>((resolve) => {
      agent.on('subagent_end', () => resolve());
    });
    void agent.prompt('go');
    await settled;
    // The crash comes once the settle is written (records are written when the tick ends).
    await untilJournaled(dir, 'owed', (r) => r.k === 'task' && r.ev === 'settled');
    const copy = crashCopy(dir);
    session.close();
    await agent.stop();
    hang.resolve();

    const before = journalRecords(copy, 'owed');
    expect(before.filter((r) => r.k === 'task' && r.ev === 'settled')).toHaveLength(1);
    expect(before.filter((r) => r.k === 'notice')).toHaveLength(0);
    expect(before.filter((r) => r.k === 'snapshot' && r.n > 1)).toHaveLength(0);

    const reopened = sessions({ dir: copy }).open('owed');
    const resumed = createAgent({ ...config, model: scriptedModel(owed), session: reopened });
    await reopened.idle();
    reopened.close();
    await resumed.stop();

    const check = sessions({ dir: copy }).open('owed');
    const messages = check.journal.messages;
    check.close();
    expectValidHistory(messages);
    expect(
      messages.filter((m) => m.role === 'assistant' && m.content.some((p) => p.type === 'tool_call')),
    ).toHaveLength(2);
    expect(notifications(messages)).toHaveLength(1);
    expect(journalRecords(copy, 'owed').filter((r) => r.k === 'notice')).toHaveLength(1);
    // The tool running at the crash was closed, not run again.
    expect(runs.get('root_work')).toBe(1);
    expect(runs.get('bg_work')).toBe(1);
  });
});

describe('sessions: a reopened tree is the same tree', () => {
  it("a root reopened in a new process resumes its finished subagent by id, from the subagent's history", async () => {
    const dir = tempDir();
    /** The root asks for a swarm of two, then (prompted "resume <id>") resumes that agent; each subagent works once. */
    const rootScript = (request: ModelRequest): ScriptedAnswer => {
      const who = asker(request);
      const last = request.messages.at(-1);
      const lastText = last?.role === 'user' ? textOf(last) : '';
      if (who !== 'go') {
        if (lastText === 'follow up') return { text: `${who} again` };
        return script(request);
      }
      if (lastText.startsWith('resume ')) {
        const id = lastText.slice('resume '.length);
        return { toolCalls: [{ id: 'root_resume', name: 'agent', args: { prompt: 'follow up', agent_id: id } }] };
      }
      if (last?.role === 'tool') return { text: 'root done' };
      return {
        toolCalls: [{ id: 'root_swarm', name: 'swarm', args: { tasks: [{ prompt: 'fg1' }, { prompt: 'fg2' }] } }],
      };
    };
    const work = defineTool({
      name: 'work',
      description: 'w',
      schema: z.object({ who: z.string() }),
      execute: ({ who }) => `${who} worked`,
    });
    const session = sessions({ dir }).create({ id: 'tree', agentId: 'root' });
    const config = { tools: [work], subagents: {} };
    const agent = createAgent({ ...config, model: scriptedModel(rootScript), session });
    const children: string[] = [];
    agent.on('subagent_end', (event) => children.push(event.childId));
    await agent.prompt('go');
    await session.idle();
    const fg1 = children[0] ?? '';
    const history = agent.subagent(fg1)?.messages ?? [];
    const prompt = asker({ messages: history } as unknown as ModelRequest);
    expect(prompt).toMatch(/^fg[12]$/);
    session.close();
    await agent.stop();

    const reopened = sessions({ dir }).open('tree');
    const model = scriptedModel(rootScript);
    const resumed = createAgent({ ...config, model, session: reopened });
    const result = await resumed.prompt(`resume ${fg1}`);
    expect(result.text).toBe('root done');
    const answer = toolResults(resumed.messages).find((r) => r.toolCallId === 'root_resume');
    expect(resultText(answer)).toContain(`${prompt} again`);
    // The resumed subagent went on from its journaled history: its first request held it whole.
    const followUp = model.requests.find((r) => r.messages.some((m) => m.role === 'user' && textOf(m) === 'follow up'));
    expect(followUp?.messages.slice(0, history.length)).toEqual(history);
    reopened.close();
    await resumed.stop();
  });

  it('a crash while a subagent resumed by id works: reopened, it goes on from its whole history, nothing twice', async () => {
    const dir = tempDir();
    const runs: string[] = [];
    const work = defineTool({
      name: 'work',
      description: 'w',
      schema: z.object({}),
      execute: (_, ctx) => {
        runs.push(ctx.toolCallId);
        return 'worked';
      },
    });
    /** The root swarms `w`, then resumes it by id; resumed, `w` works once and answers (its answer hangs first). */
    const answers = (hangAfterWork: boolean) => {
      const hung = latch();
      const model = scriptedModel((request: ModelRequest): ScriptedAnswer | Promise<ScriptedAnswer> => {
        const who = asker(request);
        const last = request.messages.at(-1);
        const lastText = last?.role === 'user' ? textOf(last) : '';
        if (who === 'go') {
          if (lastText.startsWith('resume ')) {
            const id = lastText.slice('resume '.length);
            return { toolCalls: [{ id: 'root_resume', name: 'agent', args: { prompt: 'follow up', agent_id: id } }] };
          }
          if (last?.role === 'tool') return { text: 'root done' };
          return { toolCalls: [{ id: 'root_swarm', name: 'swarm', args: { tasks: [{ prompt: 'w' }] } }] };
        }
        if (!request.messages.some((m) => m.role === 'user' && textOf(m) === 'follow up')) return { text: 'w first' };
        if (last?.role !== 'tool') return { toolCalls: [{ id: 'w_work', name: 'work', args: {} }] };
        if (!hangAfterWork) return { text: 'w followed up' };
        hung.resolve();
        return new Promise<ScriptedAnswer>(() => {});
      });
      return { model, hung };
    };
    const config = { tools: [work], subagents: {} };
    const session = sessions({ dir }).create({ id: 'tree', agentId: 'root' });
    const first = answers(true);
    const agent = createAgent({ ...config, model: first.model, session });
    const children: string[] = [];
    agent.on('subagent_end', (event) => children.push(event.childId));
    await agent.prompt('go');
    const id = children[0] ?? '';
    void agent.prompt(`resume ${id}`);
    await first.hung.promise;
    await untilJournaled(dir, 'tree', (r) => r.k === 'tool_end' && r.id === 'w_work');
    const copy = crashCopy(dir);
    session.close();
    await agent.stop();

    const reopened = sessions({ dir: copy }).open('tree');
    const second = answers(false);
    const resumed = createAgent({ ...config, model: second.model, session: reopened });
    await reopened.idle();
    reopened.close();
    await resumed.stop();
    // Its one live call was sent the whole history: its first task's, then the follow-up's up to the crash.
    const sent = second.model.requests
      .filter((r) => asker(r) === 'w')
      .map((r) => r.messages.map((m) => `${m.role}:${textOf(m)}`));
    expect(sent).toEqual([['user:w', 'assistant:w first', 'user:follow up', 'assistant:', 'tool:worked']]);
    expect(runs).toEqual(['w_work']);
    const answer = toolResults(resumed.messages).find((r) => r.toolCallId === 'root_resume');
    expect(resultText(answer)).toContain('w followed up');
  });
});
