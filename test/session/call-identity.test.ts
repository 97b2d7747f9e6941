import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  defineTool,
  type ModelRequest,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { expectValidHistory, latch, resultText, toolResults } from '../agent/helpers.js';
import { cleanTempDirs, crashCopy, journalRecords, tempDir } from './helpers.js';

cleanTempDirs();

/**
 * A model that numbers its tool calls per answer, as some servers do: every call it makes is `call_1` (and, when
 * asked for two at once, `call_1` twice). A user message `n` asks for one `count` call per number in it.
 */
function call1Model() {
  return scriptedModel((request: ModelRequest): ScriptedAnswer => {
    const last = request.messages.at(-1);
    if (last?.role !== 'user') return { text: 'counted' };
    const numbers = textOf(last).split(' ').map(Number);
    return { toolCalls: numbers.map((n) => ({ id: 'call_1', name: 'count', args: { n } })) };
  });
}

function countTool(runs: number[]) {
  return defineTool({
    name: 'count',
    description: 'counts',
    schema: z.object({ n: z.number() }),
    execute: ({ n }) => {
      runs.push(n);
      return `counted ${n}`;
    },
  });
}

/** Each result in the history answers its own call: the number the call asked for. */
function expectResultsMatchCalls(messages: ReturnType<typeof createAgent>['messages']): void {
  expectValidHistory(messages);
  const asked = new Map<string, number>();
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    for (const part of message.content) if (part.type === 'tool_call') asked.set(part.id, Number(part.arguments.n));
  }
  const results = toolResults(messages);
  expect(new Set(results.map((r) => r.toolCallId)).size).toBe(results.length);
  for (const result of results) expect(resultText(result)).toBe(`counted ${asked.get(result.toolCallId)}`);
}

/** The results a replay gave, by call. */
function replayedResults(events: readonly AgentEvent[]): [string, string][] {
  return events.flatMap((e) => (e.type === 'tool_execution_end' ? [[e.toolCallId, resultText(e.result)]] : []));
}

describe('sessions: Troupe owns tool-call identity', () => {
  it('a provider that reuses call_1 within an answer and across turns: each call runs once, journaled and reopened whole', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'reuse', agentId: 'a' });
    const runs: number[] = [];
    const agent = createAgent({ model: call1Model(), tools: [countTool(runs)], session });
    const repairs: AgentEvent[] = [];
    agent.on('context_repair', (event) => repairs.push(event));
    await agent.prompt('1');
    await agent.prompt('2 3');
    await agent.prompt('4');
    expect(runs).toEqual([1, 2, 3, 4]);
    const ids = toolResults(agent.messages).map((r) => r.toolCallId);
    // The first use is the provider's id verbatim; later ones get a deterministic suffix.
    expect(ids).toEqual(['call_1', 'call_1_2', 'call_1_3', 'call_1_4']);
    expectResultsMatchCalls(agent.messages);
    // Each reuse (across turns, and within the second answer) is reported, naming the provider's id.
    expect(repairs.map((e) => (e.type === 'context_repair' ? e.repair : undefined))).toEqual([
      { kind: 'call_id_reused', toolCallId: 'call_1_2', providerId: 'call_1', toolName: 'count' },
      { kind: 'call_id_reused', toolCallId: 'call_1_3', providerId: 'call_1', toolName: 'count' },
      { kind: 'call_id_reused', toolCallId: 'call_1_4', providerId: 'call_1', toolName: 'count' },
    ]);
    const live = agent.messages;
    session.close();
    await agent.stop();

    // Every start and end is journaled once, under its own identity.
    const records = journalRecords(dir, 'reuse');
    expect(records.filter((r) => r.k === 'tool_end').map((r) => (r.k === 'tool_end' ? r.id : ''))).toEqual(ids);
    expect(records.filter((r) => r.k === 'tool_start')).toHaveLength(4);
    const reopened = createAgent({ model: call1Model(), tools: [countTool(runs)], session: manager.open('reuse') });
    expect(reopened.messages).toEqual(live);
    await reopened.stop();

    // A replay answers every call it replays with that call's own result (the second answer's two calls at least).
    const replay = await manager.replay('reuse', { tools: [countTool(runs)] });
    expect(runs).toEqual([1, 2, 3, 4]);
    const replayed = replayedResults(replay.events);
    expect(replayed.length).toBeGreaterThanOrEqual(3);
    expect(replayed).toEqual(
      toolResults(live)
        .map((r) => [r.toolCallId, resultText(r)])
        .slice(0, replayed.length),
    );
  });

  it.each([
    ['reuses call_1 across and within answers', call1Model(), ['1', '2 3'], ['call_1', 'call_1_2', 'call_1_3']],
    [
      'gives an id that an earlier repair took',
      scriptedModel([
        {
          toolCalls: ['call_1', 'call_1', 'call_1_2'].map((id, n) => ({ id, name: 'count', args: { n } })),
        },
        { text: 'counted' },
      ]),
      ['0 1 2'],
      ['call_1', 'call_1_2', 'call_1_2_2'],
    ],
  ])(
    "a streamed call's events name the call as its execution and result do: a provider that %s",
    async (_name, model, prompts, want) => {
      const runs: number[] = [];
      const agent = createAgent({ model, tools: [countTool(runs)] });
      const streamed: string[] = [];
      const executed: string[] = [];
      agent.on('message_update', ({ delta }) => {
        if (delta.type === 'tool_call_start') streamed.push(`start ${delta.toolCallId}`);
        else if (delta.type === 'tool_call') streamed.push(`args ${delta.toolCallId}`);
        else if (delta.type === 'tool_call_end') streamed.push(`end ${delta.toolCallId}`);
      });
      agent.on('tool_execution_start', (event) => executed.push(event.toolCallId));
      for (const prompt of prompts) await agent.prompt(prompt);
      await agent.stop();
      expect(executed).toEqual(want);
      const ids = toolResults(agent.messages).map((r) => r.toolCallId);
      expect(ids).toEqual(executed);
      // Each call streams its start, its arguments and its end, under the identity it runs by.
      expect(streamed).toEqual(executed.flatMap((id) => [`start ${id}`, `args ${id}`, `end ${id}`]));
    },
  );

  it('after a restart the model says call_1 again: the new call runs, it is not answered with the old result', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'restart', agentId: 'a' });
    const runs: number[] = [];
    const agent = createAgent({ model: call1Model(), tools: [countTool(runs)], session });
    await agent.prompt('1');
    const crashed = crashCopy(dir);
    session.close();
    await agent.stop();

    // A new process: the scripted model starts over and calls its first call `call_1` again.
    const resumed = sessions({ dir: crashed });
    const again = createAgent({ model: call1Model(), tools: [countTool(runs)], session: resumed.open('restart') });
    const events: AgentEvent[] = [];
    again.on('tool_execution_end', (event) => events.push(event));
    await again.prompt('7');
    expect(runs).toEqual([1, 7]);
    // What ran live in this process (a replay of the journal's first turn may come before it, marked replayed).
    const ran = events.filter((e) => !e.replayed);
    expect(ran.map((e) => (e.type === 'tool_execution_end' ? [e.toolCallId, resultText(e.result)] : []))).toEqual([
      ['call_1_2', 'counted 7'],
    ]);
    expectResultsMatchCalls(again.messages);
    const live = again.messages;
    await again.stop();
    const replay = await resumed.replay('restart', { tools: [countTool(runs)] });
    expect(runs).toEqual([1, 7]);
    expect(replayedResults(replay.events)).toEqual(toolResults(live).map((r) => [r.toolCallId, resultText(r)]));
  });

  it('a crash while the reused id runs: the call is not run blind again, and the next call_1 gets the next identity', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'mid', agentId: 'a' });
    const runs: number[] = [];
    const reached = latch();
    const hanging = defineTool({
      name: 'count',
      description: 'counts',
      schema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        runs.push(n);
        if (n === 2) {
          reached.resolve();
          await new Promise(() => {});
        }
        return `counted ${n}`;
      },
    });
    const agent = createAgent({ model: call1Model(), tools: [hanging], session });
    await agent.prompt('1');
    void agent.prompt('2');
    await reached.promise;
    const crashed = crashCopy(dir); // killed while the second call_1 (call_1_2) runs
    session.close();
    agent.interrupt();
    await agent.stop();

    const resumed = sessions({ dir: crashed });
    const reopened = resumed.open('mid');
    const again = createAgent({ model: call1Model(), tools: [countTool(runs)], session: reopened });
    await reopened.idle();
    // The call that was running is answered as interrupted, never run again; the old call_1 kept its result.
    expect(runs).toEqual([1, 2]);
    const results = toolResults(again.messages);
    expect(results.map((r) => r.toolCallId)).toEqual(['call_1', 'call_1_2']);
    expect(resultText(results[0])).toBe('counted 1');
    expect(resultText(results[1])).toMatch(/interrupted by a restart/);
    // The restarted model's next call_1 is a new call with an identity of its own, and it runs.
    await again.prompt('3');
    expect(runs).toEqual([1, 2, 3]);
    expect(toolResults(again.messages).map((r) => r.toolCallId)).toEqual(['call_1', 'call_1_2', 'call_1_3']);
    expectValidHistory(again.messages);
    reopened.close();
    await again.stop();
  });

  it('a result too long to send is saved per call: the reused id does not overwrite the first call file', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const session = manager.create({ id: 'saved', agentId: 'a' });
    const long = defineTool({
      name: 'count',
      description: 'counts at length',
      schema: z.object({ n: z.number() }),
      execute: ({ n }) => `${n}`.repeat(500),
    });
    const agent = createAgent({ model: call1Model(), tools: [long], session, toolResults: { maxChars: 100 } });
    await agent.prompt('1');
    await agent.prompt('2');
    const saved = toolResults(agent.messages).map(
      (r) => (r.details as { fullResult: { path: string } }).fullResult.path,
    );
    expect(new Set(saved).size).toBe(2);
    expect(saved.map((path) => readFileSync(path, 'utf8'))).toEqual(['1'.repeat(500), '2'.repeat(500)]);
    session.close();
    await agent.stop();
  });
});
