import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel } from '../../src/index.js';
import type { ToolResultPart } from '../../src/protocol/index.js';
import { callKey, dedupeCalls, RepetitionCounter, ResultBudget } from '../../src/tools/index.js';
import { expectValidHistory, record, resultText, toolResults } from '../agent/helpers.js';
import { call } from './history.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-budget-test-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const textResult = (text: string, id = 'call_1'): ToolResultPart => ({
  type: 'tool_result',
  toolCallId: id,
  toolName: 'dump',
  content: [{ type: 'text', text }],
  isError: false,
});

function numbered(lines: number): string {
  return Array.from({ length: lines }, (_, i) => `line ${i + 1} ${'x'.repeat(40)}`).join('\n');
}

describe('the tool-result budget', () => {
  it('passes a result within the budget untouched (the same object)', () => {
    const budget = new ResultBudget({ maxChars: 100, dir: tempDir() });
    const small = textResult('a'.repeat(100));
    expect(budget.fit(small)).toBe(small);
    expect(budget.hasSaved).toBe(false);
  });

  it('saves an oversized result in full and sends its start, its end, its size and how to read the rest', () => {
    const dir = tempDir();
    const budget = new ResultBudget({ maxChars: 1_000, previewChars: 400, dir });
    const full = numbered(500);
    const fitted = budget.fit({ ...textResult(full, 'call/9'), details: { kept: 1 } });
    const text = resultText(fitted);
    expect(text.startsWith(full.slice(0, 300))).toBe(true);
    expect(text).toContain(full.slice(-100));
    expect(text).toContain(`${full.length.toLocaleString('en')} characters (500 lines)`);
    expect(text).toContain('read_result');
    expect(text.length).toBeLessThan(1_000);
    const details = fitted.details as { kept: number; fullResult: { path: string; chars: number } };
    expect(details.kept).toBe(1);
    expect(details.fullResult.chars).toBe(full.length);
    // The id is made safe for a file name; the file holds every character.
    expect(details.fullResult.path).toBe(join(dir, 'call_9.txt'));
    expect(readFileSync(details.fullResult.path, 'utf8')).toBe(full);
    expect(budget.hasSaved).toBe(true);
  });

  it('keeps images, counts only text, and can be turned off', () => {
    const image = { type: 'image' as const, source: { kind: 'base64' as const, mediaType: 'image/png', data: 'AAAA' } };
    const budget = new ResultBudget({ maxChars: 10, dir: tempDir() });
    const fitted = budget.fit({
      ...textResult('y'.repeat(50)),
      content: [{ type: 'text', text: 'y'.repeat(50) }, image],
    });
    expect(fitted.content.at(-1)).toEqual(image);
    const off = new ResultBudget({ maxChars: false });
    const big = textResult('z'.repeat(200_000));
    expect(off.fit(big)).toBe(big);
    expect(() => new ResultBudget({ maxChars: 0 })).toThrow(RangeError);
  });

  it('read_result reads a range of lines or the lines matching a pattern, and only results it saved', async () => {
    const budget = new ResultBudget({ maxChars: 1_000, dir: tempDir() });
    budget.fit(textResult(numbered(500), 'call_big'));
    const reader = budget.readerTool();
    const ctx = {} as never;
    const range = (await reader.execute({ id: 'call_big', offset: 10, limit: 3 }, ctx)) as string;
    expect(range.split('\n').slice(0, 3)).toEqual([
      `10: line 10 ${'x'.repeat(40)}`,
      `11: line 11 ${'x'.repeat(40)}`,
      `12: line 12 ${'x'.repeat(40)}`,
    ]);
    expect(range).toContain('offset 13 reads on');
    const found = (await reader.execute({ id: 'call_big', pattern: '^line 49\\d ' }, ctx)) as string;
    expect(found.split('\n').map((line) => line.split(':')[0])).toEqual(
      Array.from({ length: 10 }, (_, i) => String(490 + i)),
    );
    expect(await reader.execute({ id: '../etc/passwd' }, ctx)).toMatchObject({ isError: true });
    expect(await reader.execute({ id: 'call_big', pattern: '(' }, ctx)).toMatchObject({ isError: true });
    expect(await reader.execute({ id: 'call_big', offset: 900 }, ctx)).toContain('past its end');
  });
});

describe('identical calls', () => {
  it('have one key whatever the key order of their arguments', () => {
    expect(callKey(call('a', 'f', { x: 1, y: { b: 2, a: [1, { d: 1, c: 2 }] } }))).toBe(
      callKey(call('b', 'f', { y: { a: [1, { c: 2, d: 1 }], b: 2 }, x: 1 })),
    );
    expect(callKey(call('a', 'f', { x: 1 }))).not.toBe(callKey(call('a', 'g', { x: 1 })));
    expect(callKey(call('a', 'f', { x: [1, 2] }))).not.toBe(callKey(call('a', 'f', { x: [2, 1] })));
  });

  it('run once per answer: the first of each group runs, the others are its twins', () => {
    const calls = [call('1', 'f', { a: 1 }), call('2', 'g'), call('3', 'f', { a: 1 }), call('4', 'f', { a: 1 })];
    const { run, twins } = dedupeCalls(calls);
    expect(run.map((c) => c.id)).toEqual(['1', '2']);
    expect(twins?.get('1')?.map((c) => c.id)).toEqual(['3', '4']);
    const distinct = [call('1'), call('2')];
    expect(dedupeCalls(distinct).run).toBe(distinct);
  });
});

describe('the repetition ladder', () => {
  it('notes at 3, warns with the other tools at 5, orders a finish at 8, stops at 12; a new turn starts over', () => {
    const counter = new RepetitionCounter();
    const levels: (string | undefined)[] = [];
    let warn = '';
    for (let i = 1; i <= 13; i++) {
      const rung = counter.count(call(`c${i}`, 'read', { path: 'a' }), 1, () => ['read', 'grep', 'bash']);
      levels.push(rung?.level);
      if (rung?.level === 'warn') warn = rung.text;
    }
    expect(levels).toEqual([
      undefined,
      undefined,
      'note',
      undefined,
      'warn',
      undefined,
      undefined,
      'finish',
      undefined,
      undefined,
      undefined,
      'stop',
      'stop',
    ]);
    expect(warn).toContain('grep, bash');
    expect(warn).not.toContain('read,');
    // Other arguments count apart; a new turn counts from one.
    expect(counter.count(call('x', 'read', { path: 'b' }), 1, () => [])).toBeUndefined();
    for (let i = 0; i < 2; i++) expect(counter.count(call('y', 'read', { path: 'a' }), 2, () => [])).toBeUndefined();
    expect(counter.count(call('y', 'read', { path: 'a' }), 2, () => [])?.level).toBe('note');
  });

  it('is configurable and refuses a ladder out of order', () => {
    const counter = new RepetitionCounter({ note: 2, warn: 2, finish: 3, stop: 4 });
    const levels = [1, 2, 3, 4].map((i) => counter.count(call(`c${i}`, 'echo', { same: true }), 0, () => [])?.level);
    expect(levels).toEqual([undefined, 'warn', 'finish', 'stop']);
    expect(() => new RepetitionCounter({ note: 6, warn: 5 })).toThrow(RangeError);
  });
});

describe('through an agent on the scripted model', () => {
  const dump = defineTool({
    name: 'dump',
    description: 'a large listing',
    schema: z.object({ lines: z.number() }),
    execute: ({ lines }) => numbered(lines),
  });

  it('an MCP-sized result reaches the model as a preview; read_result appears and reads the rest', async () => {
    const dir = tempDir();
    const model = scriptedModel([
      { toolCalls: [{ name: 'dump', args: { lines: 5_000 } }] },
      (request) => {
        const id = (request.messages.at(-1)?.content[0] as ToolResultPart | undefined)?.toolCallId ?? '';
        return { toolCalls: [{ name: 'read_result', args: { id, offset: 4_999 } }] };
      },
      { text: 'done' },
    ]);
    const agent = createAgent({ model, tools: [dump], toolResults: { dir } });
    const events = record(agent);
    const result = await agent.prompt('list everything');
    expect(result.text).toBe('done');
    const [first, second] = toolResults(result.messages);
    expect(resultText(first).length).toBeLessThan(6_000);
    expect(resultText(first)).toContain('more than the 50,000 a result may send');
    expect(resultText(second)).toBe(`4999: line 4999 ${'x'.repeat(40)}\n5000: line 5000 ${'x'.repeat(40)}`);
    // The first request had no read_result; the one after the oversized result has it.
    expect(model.requests[0]?.tools?.map((t) => t.name)).toEqual(['dump']);
    expect(model.requests[1]?.tools?.map((t) => t.name)).toEqual(['dump', 'read_result']);
    // Observers see what the model saw (the journal keeps the preview; the file keeps the whole).
    const end = events.find((e) => e.type === 'tool_execution_end');
    expect(end?.type === 'tool_execution_end' && end.result).toEqual(first);
    await agent.stop();
  });

  it('identical calls in one answer run once and every call gets the result under its own id', async () => {
    let runs = 0;
    const count = defineTool({
      name: 'count',
      description: 'counts',
      schema: z.object({ what: z.string() }),
      execute: ({ what }) => `${what}: ${++runs}`,
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'count', args: { what: 'a' } },
          { name: 'count', args: { what: 'b' } },
          { name: 'count', args: { what: 'a' } },
        ],
      },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools: [count] });
    const events = record(agent);
    const result = await agent.prompt('count');
    expect(runs).toBe(2);
    const results = toolResults(result.messages);
    expect(results.map((r) => resultText(r))).toEqual(['a: 1', 'b: 2', 'a: 1']);
    expect(new Set(results.map((r) => r.toolCallId)).size).toBe(3);
    expect(events.filter((e) => e.type === 'tool_execution_end')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'tool_execution_start')).toHaveLength(3);
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('with a beforeToolCall gate, every call is gated and twins are deduped among the calls that passed', async () => {
    let runs = 0;
    const count = defineTool({
      name: 'count',
      description: 'counts',
      schema: z.object({ what: z.string() }),
      execute: ({ what }) => `${what}: ${++runs}`,
    });
    const gated: string[] = [];
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'held', name: 'count', args: { what: 'a' } },
          { id: 'a2', name: 'count', args: { what: 'a' } },
          { id: 'a3', name: 'count', args: { what: 'a' } },
          { id: 'moved', name: 'count', args: { what: 'a' } },
          { id: 'b1', name: 'count', args: { what: 'b' } },
        ],
      },
      { text: 'ok' },
    ]);
    const agent = createAgent({
      model,
      tools: [count],
      hooks: {
        // The first of the twins is held back, and one has its arguments changed: neither may leave a twin waiting.
        beforeToolCall: (call) => {
          gated.push(call.id);
          if (call.id === 'held') return { deny: 'not this one' };
          if (call.id === 'moved') return { args: { what: 'a' } };
          return undefined;
        },
      },
    });
    const events = record(agent);
    const result = await agent.prompt('count');
    expect(gated.sort()).toEqual(['a2', 'a3', 'b1', 'held', 'moved']);
    // a2 runs for itself and a3; `moved` (changed by the hook, even to the same value) runs on its own; b1 runs.
    expect(runs).toBe(3);
    const byId = new Map(toolResults(result.messages).map((r) => [r.toolCallId, r]));
    expect(byId.get('held')?.isError).toBe(true);
    expect(resultText(byId.get('held'))).toContain('not this one');
    expect(resultText(byId.get('a3'))).toBe(resultText(byId.get('a2')));
    expect(resultText(byId.get('a2'))).toMatch(/^a: \d$/);
    expect(resultText(byId.get('moved'))).not.toBe(resultText(byId.get('a2')));
    expect(resultText(byId.get('b1'))).toMatch(/^b: \d$/);
    expect(byId.size).toBe(5);
    expect(events.filter((e) => e.type === 'tool_execution_end')).toHaveLength(4);
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('a model stuck on one successful call is noted, warned, told to finish, then stopped with its own stop reason', async () => {
    const read = defineTool({
      name: 'read',
      description: 'reads',
      schema: z.object({ path: z.string() }),
      execute: () => 'the same content',
    });
    const model = scriptedModel(() => ({ toolCalls: [{ name: 'read', args: { path: 'a.txt' } }] }));
    const agent = createAgent({ model, tools: [read], maxSteps: 50 });
    const events = record(agent);
    const result = await agent.prompt('read it');
    expect(result.stopReason).toBe('repetition');
    expect(model.calls).toBe(12);
    const ladder = events.flatMap((e) => (e.type === 'tool_repetition' ? [`${e.count}:${e.level}`] : []));
    expect(ladder).toEqual(['3:note', '5:warn', '8:finish', '12:stop']);
    const results = toolResults(result.messages);
    expect(resultText(results[7])).toContain('Do not call it again');
    expect(resultText(results[11])).toContain('The turn ends here');
    const end = events.find((e) => e.type === 'turn_end');
    expect(end?.type === 'turn_end' && end.stopReason).toBe('repetition');
    expectValidHistory(agent.messages);

    // The next turn counts afresh; the ladder can be set or turned off.
    const calm = scriptedModel((_, i) =>
      i < 14 ? { toolCalls: [{ name: 'read', args: { path: 'a' } }] } : { text: 'ok' },
    );
    const off = createAgent({ model: calm, tools: [read], toolResults: { repetition: false } });
    expect((await off.prompt('x')).stopReason).toBe('completed');
    const tight = createAgent({
      model: scriptedModel(() => ({ toolCalls: [{ name: 'read', args: { path: 'a' } }] })),
      tools: [read],
      toolResults: { repetition: { note: 2, warn: 3, finish: 3, stop: 4 } },
    });
    const stopped = await tight.prompt('x');
    expect(stopped.stopReason).toBe('repetition');
    expect(toolResults(stopped.messages)).toHaveLength(4);
    await Promise.all([agent.stop(), off.stop(), tight.stop()]);
  });
});
