import { describe, expect, it } from 'vitest';
import { chooseCut, keptFacts, render, summarize } from '../../src/context/compaction.js';
import { ContextEngine, project } from '../../src/context/index.js';
import { type AgentEvent, createAgent, type Message, type ModelRequest, scriptedModel } from '../../src/index.js';
import type { AgentEventBody } from '../../src/protocol/index.js';
import { expectValidHistory } from '../agent/helpers.js';
import { assistant, call, result, text, tool, user } from './history.js';

/** A small deterministic generator, so a failing seed can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/** A healthy history with parallel batches (1–4 calls), steers, notifications and long results. */
function history(rand: () => number, turns: number): Message[] {
  const messages: Message[] = [];
  let id = 0;
  for (let t = 0; t < turns; t++) {
    messages.push(user(`turn ${t} ${'words '.repeat(Math.floor(rand() * 40))}`));
    const steps = Math.floor(rand() * 4);
    for (let s = 0; s < steps; s++) {
      const calls = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => call(`c${id++}`));
      messages.push(assistant(text('working'), ...calls));
      messages.push(tool(...calls.map((c) => result(c.id, 'x'.repeat(Math.floor(rand() * 800))))));
      if (rand() < 0.2) messages.push(user('a steer', rand() < 0.5 ? 'steer' : 'notification'));
    }
    messages.push(assistant(text(`answer ${t}`)));
  }
  return messages;
}

describe('the cut never splits a call from its result', () => {
  it('fuzzed over 300 histories and budgets', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = random(seed);
      const messages = history(rand, 2 + Math.floor(rand() * 12));
      const from = Math.floor(rand() * (messages.length / 2));
      const cut = chooseCut(messages, from, Math.floor(rand() * 3_000));
      if (cut === undefined) continue;
      expect(cut).toBeGreaterThan(from);
      expect(messages[cut]?.role).not.toBe('tool');
      const before = new Set(
        messages.slice(0, cut).flatMap((m) => m.content.flatMap((p) => (p.type === 'tool_call' ? [p.id] : []))),
      );
      for (const message of messages.slice(cut)) {
        for (const part of message.content) {
          if (part.type === 'tool_result') expect(before.has(part.toolCallId), `seed ${seed}`).toBe(false);
        }
      }
      // What is sent after the cut needs no repair of calls and results.
      const tail = project(messages.slice(cut), { mergeUserMessages: true });
      expect(
        tail.repairs.filter((r) => r.kind !== 'user_messages_merged'),
        `seed ${seed}`,
      ).toEqual([]);
      expectValidHistory(tail.messages);
    }
  });

  it('keeps the last exchange whole even when it alone is over the budget', () => {
    const messages = [user('q'), assistant(call('a'), call('b')), tool(result('a', 'x'.repeat(9_000)), result('b'))];
    expect(chooseCut(messages, 0, 10)).toBe(1);
    expect(chooseCut([user('only')], 0, 10)).toBeUndefined();
  });
});

describe('the summary call', () => {
  const older = [
    user('please edit src/app.ts'),
    assistant(call('c1', 'read', { path: 'src/app.ts' })),
    tool(result('c1', 'y'.repeat(5_000), 'read')),
  ];

  it('renders the conversation as text, shortening tool results', () => {
    const text = render(older, 100);
    expect(text).toContain('[user] please edit src/app.ts');
    expect(text).toContain('[me → read] {"path":"src/app.ts"}');
    expect(text).toContain('… [4900 more characters]');
  });

  // Each overflow of the summary call falls back one step (results shortened twice, then the oldest half, three
  // quarters and nine tenths of the messages dropped); past the last step it gives up without another call.
  it.each([
    { overflows: 3, outcome: { text: 'note', dropped: 15 }, calls: 4, case: 'fits once three quarters are dropped' },
    { overflows: Number.POSITIVE_INFINITY, outcome: { text: '', dropped: 20 }, calls: 5, case: 'never fits' },
  ])(
    'falls back in steps when the summary itself overflows, and never loops: $case',
    async ({ overflows, outcome, calls }) => {
      const model = scriptedModel((_request, index) =>
        index < overflows
          ? { error: { code: 'context_overflow', message: 'prompt is too long', status: 400 } }
          : { text: 'note' },
      );
      const messages = Array.from({ length: 20 }, (_, i) => user(`message ${i}`));
      const summary = await summarize({
        model,
        messages,
        window: 100_000,
        maxTokens: 1_000,
        scale: 1,
        signal: new AbortController().signal,
      });
      expect(summary).toEqual(outcome);
      expect(model.calls).toBe(calls);
    },
  );

  it('a summary that would not fit is shortened before it is sent (compaction works at 100 % of the window)', async () => {
    const requests: ModelRequest[] = [];
    const model = scriptedModel((request) => {
      requests.push(request);
      return { text: 'note' };
    });
    const outcome = await summarize({
      model,
      messages: older,
      window: 1_500,
      maxTokens: 256,
      scale: 1,
      signal: new AbortController().signal,
    });
    expect(outcome.text).toBe('note');
    expect(JSON.stringify(requests[0]?.messages).length).toBeLessThan(5_000);
  });

  it('keeps paths, the last commands and open background tasks verbatim, whatever the summary says', () => {
    const messages: Message[] = [
      user('Fix the bug in packages/core/src/parser.ts and run the tests'),
      assistant(
        call('c1', 'bash', { command: 'npm test -- test/parser.test.ts' }),
        call('c2', 'agent', { prompt: 'x', background: true }),
      ),
      tool(
        result('c1', 'ok', 'bash'),
        result(
          'c2',
          'Started in the background: task_id="t_1", task_id="t_2". Their results arrive as notifications.',
          'agent',
        ),
      ),
      user('<notification task_id="t_1" status="completed">done</notification>', 'notification'),
    ];
    const facts = keptFacts(messages, '');
    expect(facts).toContain('packages/core/src/parser.ts');
    expect(facts).toContain('test/parser.test.ts');
    expect(facts).toContain('bash {"command":"npm test -- test/parser.test.ts"}');
    expect(facts).toContain('task_id="t_2"');
    expect(facts).not.toContain('task_id="t_1"');
    expect(keptFacts(messages, '<notification task_id="t_2"')).not.toContain('Background tasks');
  });
});

describe('compaction in an agent', () => {
  it('on context_overflow from the provider, compacts and retries the call, and the turn completes', async () => {
    let calls = 0;
    const model = scriptedModel((request) => {
      calls++;
      if (request.system?.startsWith('You are compacting')) return { text: 'I answered three questions.' };
      const size = JSON.stringify(request.messages).length;
      if (size > 2_500) return { error: { code: 'context_overflow', message: 'prompt is too long', status: 400 } };
      return { text: 'answer '.repeat(40) };
    });
    const agent = createAgent({ model, context: { compactAt: false } });
    const events: AgentEvent[] = [];
    agent.on('*', (e) => events.push(e));
    let last = await agent.prompt('first question');
    for (let i = 0; i < 8; i++) last = await agent.prompt(`question ${i} ${'context '.repeat(20)}`);
    expect(last.stopReason).toBe('completed');
    const starts = events.filter((e) => e.type === 'compaction_start');
    expect(starts.length).toBeGreaterThan(0);
    expect(starts.every((e) => e.type === 'compaction_start' && e.reason === 'overflow')).toBe(true);
    expect(events.filter((e) => e.type === 'turn_end' && e.stopReason === 'error')).toEqual([]);
    expect(calls).toBeGreaterThan(9);
    await agent.stop();
  });

  it('compaction_end reports tokens before and after, and the note replaces the older messages in what is sent', async () => {
    const emitted: AgentEventBody[] = [];
    const model = scriptedModel([{ text: 'I was asked about 1..6.' }]);
    const engine = new ContextEngine(model, { contextWindow: 1_000, keepRecentTokens: 100 }, (e) => emitted.push(e));
    const stored: Message[] = [];
    for (let i = 0; i < 6; i++)
      stored.push(user(`question ${i} ${'pad '.repeat(200)}`), assistant(text(`answer ${i}`)));
    const preamble = { tools: [] };
    expect(engine.overThreshold({ ...preamble, messages: engine.project(stored) }, stored)).toMatchObject({
      window: 1_000,
    });
    const done = await engine.compact('threshold', stored, preamble, new AbortController().signal);
    expect(done.tokensAfter).toBeLessThan(done.tokensBefore);
    expect(emitted.map((e) => e.type)).toEqual(['compaction_start', 'compaction_end']);
    const sent = engine.project(stored);
    expect(sent[0]).toBe(stored[0]);
    expect(sent[1]).toMatchObject({ role: 'user', source: 'compaction' });
    expect(JSON.stringify(sent[1])).toContain('I was asked about 1..6.');
    expect(sent[sent.length - 1]).toBe(stored[stored.length - 1]);
    expect(engine.overThreshold({ ...preamble, messages: sent }, stored)).toBeUndefined();
  });
});
