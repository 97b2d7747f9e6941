/**
 * A moment of a whole tree, read from its journal alone: a root that runs a swarm of two subagents, each calling a
 * tool that asks for approval. At the last seq the moment is the tree as it ended (and as it reopens); a later seq
 * never forgets an agent, a message or a token an earlier one held; a damaged or hostile journal is read without a
 * throw.
 */
import { it as prop } from '@fast-check/vitest';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  defineTool,
  type ModelRequest,
  type ScriptedAnswer,
  scriptedModel,
  sessions,
} from '../../src/index.js';
import { addUsage, emptyUsage } from '../../src/protocol/index.js';
import { type JournalRecord, momentAt, type TreeMoment } from '../../src/session/index.js';
import { timelineOf } from '../../src/session/timeline.js';
import { taskOf } from '../agent/helpers.js';
import { cleanTempDirs, journalRecords, tempDir } from './helpers.js';

cleanTempDirs();

const work = defineTool({
  name: 'work',
  description: 'works',
  schema: z.object({ who: z.string() }),
  execute: ({ who }) => `${who} worked`,
});

function script(request: ModelRequest): ScriptedAnswer {
  const task = taskOf(request);
  const last = request.messages.at(-1);
  if (task === 'go') {
    if (last?.role === 'user')
      return { toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: 'a' }, { prompt: 'b' }] } }] };
    return { text: 'root done' };
  }
  if (last?.role === 'user') return { toolCalls: [{ name: 'work', args: { who: task } }] };
  return { text: `${task} done` };
}

/** Every call of `work` waits for a person; the tree's own tools do not. */
const policy = (call: { name: string }) => (call.name === 'work' ? 'ask' : 'allow');

let records: JournalRecord[];
let events: AgentEvent[];
let reopened: readonly unknown[];
const seqOf = (r: JournalRecord) => ('s' in r ? r.s : 0);

beforeAll(async () => {
  const dir = tempDir();
  const manager = sessions({ dir });
  const session = manager.create({ id: 'tree', agentId: 'root' });
  const agent = createAgent({ model: scriptedModel(script), tools: [work], policy, subagents: {}, session });
  events = [];
  agent.on('*', (e) => events.push(e), { subtree: true });
  agent.on('approval_requested', (e) => agent.approve(e), { subtree: true });
  await agent.prompt('go');
  await session.idle();
  session.close();
  await agent.stop();
  records = journalRecords(dir, 'tree');
  const again = manager.open('tree');
  const resumed = createAgent({ model: scriptedModel([]), tools: [work], session: again });
  reopened = structuredClone(resumed.messages);
  again.close();
  await resumed.stop();
});

const lastSeq = () => Math.max(...records.map(seqOf));

describe('momentAt: the tree at one moment of its journal', () => {
  it('at the last seq: every agent of the tree, the root as it reopens, each usage as its turns reported', () => {
    const moment = momentAt(records, lastSeq());
    expect(moment.records).toBe(records.length);
    expect(moment.gaps).toEqual([]);
    const ids = [...new Set(events.map((e) => e.agentId))];
    expect(moment.agents.map((a) => a.id).sort()).toEqual(ids.sort());
    const [root, ...children] = moment.agents;
    expect(root?.id).toBe('root');
    expect(root?.messages).toEqual(reopened);
    expect(children).toHaveLength(2);
    for (const child of children) {
      expect(child.owner).toBe('root');
      expect(child.running).toBe(false);
      expect(child.runningTools).toEqual([]);
      expect(child.pendingApprovals).toEqual([]);
      expect(child.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      const turnEnds = events.filter((e) => e.agentId === child.id && e.type === 'turn_end');
      const usage = emptyUsage();
      for (const e of turnEnds) if (e.type === 'turn_end') addUsage(usage, e.usage);
      expect(child.usage).toEqual(usage);
    }
    expect(root?.tasks.map((t) => t.status)).toEqual(['completed', 'completed']);
    expect(root?.lastStop).toBe('completed');
  });

  it('while a subagent runs its tool: it exists, its call is running, its task too, the swarm call unanswered', () => {
    const start = records.find((r) => r.k === 'tool_start' && r.a !== 'root');
    if (start?.k !== 'tool_start') throw new Error('the fixture runs a tool in a subagent');
    const moment = momentAt(records, start.s);
    const child = moment.agents.find((a) => a.id === start.a);
    expect(child?.runningTools).toEqual([{ id: start.id, name: 'work' }]);
    expect(child?.running).toBe(true);
    expect(child?.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(moment.agents[0]?.tasks.find((t) => t.agentId === start.a)?.status).toBe('running');
    expect(moment.agents[0]?.runningTools.map((t) => t.name)).toEqual(['swarm']);
    expect(moment.agents[0]?.messages.at(-1)?.role).toBe('assistant');
    // A moment earlier, before its approval was asked: nothing waits, nothing runs yet.
    const before = momentAt(records, start.s - 2).agents.find((a) => a.id === start.a);
    expect(before?.runningTools).toEqual([]);
  });

  it('is monotone: a later seq keeps every agent, message prefix and token of an earlier one', () => {
    const moments = Array.from({ length: lastSeq() + 1 }, (_, seq) => momentAt(records, seq));
    moments.reduce((before, after) => {
      expectGrew(before, after);
      return after;
    });
  });

  it('resolves a tool message by its own agent: two agents that both used call id "call_1" keep their results', () => {
    const header = records[0];
    if (header?.k !== 'session') throw new Error('the fixture has a header');
    const result = (text: string) => ({
      type: 'tool_result' as const,
      toolCallId: 'call_1',
      toolName: 'work',
      content: [{ type: 'text' as const, text }],
      isError: false,
    });
    const msg = (s: number, a: string): JournalRecord => ({
      k: 'msg',
      s,
      a,
      i: 0,
      turn: 0,
      step: 0,
      m: { role: 'tool', content: [{ ref: 'call_1' }] },
    });
    const shared: JournalRecord[] = [
      header,
      { k: 'tool_end', s: 1, a: 'root', id: 'call_1', result: result('root saw') },
      { k: 'tool_end', s: 2, a: 'sub', id: 'call_1', result: result('sub saw') },
      msg(3, 'root'),
      msg(4, 'sub'),
    ];
    const moment = momentAt(shared, 4);
    expect(moment.gaps).toEqual([]);
    expect(moment.agents.find((a) => a.id === 'root')?.messages).toEqual([
      { role: 'tool', content: [result('root saw')] },
    ]);
    expect(moment.agents.find((a) => a.id === 'sub')?.messages).toEqual([
      { role: 'tool', content: [result('sub saw')] },
    ]);
  });

  prop.prop([fc.array(fc.nat(), { maxLength: 8 }), fc.nat(), fc.integer({ min: 1, max: 6 })], { numRuns: 40 })(
    'a journal with records missing, a huge string and a deep snapshot is read without a throw, still monotone',
    (drops, at, hostile) => {
      const kept = records.filter((_, i) => i === 0 || !drops.some((d) => d % records.length === i));
      let deep: unknown = 'bottom';
      for (let i = 0; i < 100_000; i++) deep = { value: deep };
      const huge = 'x'.repeat(1_000_000 * hostile);
      const damaged: JournalRecord[] = [
        ...kept.slice(0, (at % kept.length) + 1),
        { k: 'snapshot', a: 'root', v: 1, n: 0, snapshot: deep },
        { k: 'msg', s: 1, a: huge, i: 2 ** 40, turn: 0, step: 0, m: { role: 'user', content: [], source: 'prompt' } },
        { k: 'msg', s: 1, a: 'root', i: 0, turn: 0, step: 0, m: { input: huge, n: 0 } },
        ...kept.slice((at % kept.length) + 1),
      ];
      let before = momentAt(damaged, 0);
      for (let seq = 1; seq <= lastSeq(); seq++) {
        const after = momentAt(damaged, seq);
        expectGrew(before, after);
        before = after;
      }
      expect(before.gaps.length).toBeGreaterThanOrEqual(2);
    },
  );
});

describe('the state at a moment: the last snapshot, moved on by the facts after it', () => {
  it('a subagent waiting for its approval is in awaitingApproval, read from the journal, not its step snapshot', () => {
    const asked = records.find((r) => r.k === 'asked' && r.a !== 'root');
    if (asked?.k !== 'asked') throw new Error('the fixture asks approval in a subagent');
    const child = momentAt(records, asked.s).agents.find((a) => a.id === asked.a);
    expect(child?.state).toEqual({ running: { turn: { step: { tools: 'awaitingApproval' } } } });
    expect(child).toMatchObject({ stateFrom: 'journal', stateAt: asked.s });
  });

  it('at the end every agent is idle; at a step start the snapshot written there is the state', () => {
    const end = momentAt(records, lastSeq());
    for (const agent of end.agents) expect(agent.state, agent.id).toBe('idle');
    const at = records.findIndex((r) => r.k === 'snapshot' && r.a === 'root' && r.snapshot !== null);
    const seq = Math.max(...records.slice(0, at).map(seqOf));
    const root = momentAt(records, seq).agents[0];
    const snapshot = records[at];
    if (snapshot?.k !== 'snapshot') throw new Error('unreachable');
    expect(root?.stateFrom).toBe('snapshot');
    expect(root?.state).toEqual((snapshot.snapshot as { value: unknown }).value);
  });
});

describe('timelineOf: the session laid out for the inspector', () => {
  it('a lane per agent under its owner, its turns and steps as spans, its tools and approvals as marks', () => {
    const timeline = timelineOf(records);
    expect(timeline.id).toBe('tree');
    expect(timeline.lanes[0]).toEqual({ agent: 'root', depth: 0 });
    const children = timeline.lanes.slice(1);
    expect(children).toHaveLength(2);
    for (const lane of children) expect(lane).toMatchObject({ owner: 'root', depth: 1, profile: expect.any(String) });
    for (const lane of timeline.lanes) {
      const turns = timeline.spans.filter((s) => s.agent === lane.agent && s.kind === 'turn');
      const started = records.filter((r) => r.k === 'turn_start' && r.a === lane.agent);
      expect(turns.map((t) => t.from)).toEqual(started.map(seqOf));
      expect(turns.filter((t) => t.open || t.to < t.from)).toEqual([]);
      const steps = timeline.spans.filter((s) => s.agent === lane.agent && s.kind === 'step');
      expect(steps.length).toBeGreaterThanOrEqual(turns.length);
    }
    const kinds = (agent: string) => timeline.marks.filter((m) => m.agent === agent).map((m) => m.kind);
    expect(kinds('root')).toEqual(expect.arrayContaining(['input', 'tool', 'batch', 'task']));
    for (const lane of children) expect(kinds(lane.agent)).toEqual(['asked', 'approval', 'tool']);
    expect(timeline.seqs).toEqual([...new Set(records.filter((r) => 's' in r).map(seqOf))].sort((a, b) => a - b));
    expect(timeline.marks.filter((m) => !timeline.seqs.includes(m.seq))).toEqual([]);
  });

  it('a prompt dropped from the queue is marked where its drop is, beside its input', () => {
    const header = records[0];
    if (header?.k !== 'session') throw new Error('the fixture has a header');
    const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'later' }] }];
    const timeline = timelineOf([
      header,
      { k: 'tool_start', s: 1, a: 'root', id: 'c', name: 'work' },
      { k: 'input', a: 'root', inputId: 'in_2', messages, expectsOutput: false },
      {
        k: 'tool_end',
        s: 2,
        a: 'root',
        id: 'c',
        result: { type: 'tool_result', toolCallId: 'c', toolName: 'work', content: [], isError: false },
      },
      { k: 'dropped', a: 'root', inputId: 'in_2' },
    ]);
    expect(timeline.marks.filter((m) => m.kind === 'input')).toEqual([
      { agent: 'root', kind: 'input', seq: 1, label: 'prompted' },
      { agent: 'root', kind: 'input', seq: 2, label: 'dropped, never started' },
    ]);
  });

  it('a hostile journal: owners in a cycle, a huge label: every lane listed once, labels cut, no throw', () => {
    const header = records[0];
    if (header?.k !== 'session') throw new Error('the fixture has a header');
    const task = (a: string, agentId: string): JournalRecord => ({
      k: 'task',
      a,
      taskId: `t-${agentId}`,
      agentId,
      ev: 'started',
    });
    const timeline = timelineOf([
      header,
      task('x', 'y'),
      task('y', 'x'),
      { k: 'tool_start', s: 1, a: 'x', id: 'c', name: 'n'.repeat(100_000) },
    ]);
    expect(timeline.lanes.map((l) => l.agent).sort()).toEqual(['root', 'x', 'y']);
    expect(timeline.marks[0]?.label.length).toBeLessThan(100);
  });
});

function expectGrew(before: TreeMoment, after: TreeMoment): void {
  expect(after.records).toBeGreaterThanOrEqual(before.records);
  for (const agent of before.agents) {
    const later = after.agents.find((a) => a.id === agent.id);
    expect(later, agent.id).toBeDefined();
    expect(later?.messages.slice(0, agent.messages.length)).toEqual(agent.messages);
    expect(later?.turns).toBeGreaterThanOrEqual(agent.turns);
    expect(later?.usage.input).toBeGreaterThanOrEqual(agent.usage.input);
    expect(later?.usage.output).toBeGreaterThanOrEqual(agent.usage.output);
  }
}
