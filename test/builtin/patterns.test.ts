import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, defineTool, jsonSchema, scriptedModel } from '../../src/index.js';
import { resultText, toolResults } from '../agent/helpers.js';
import { ToolDriver, tempDir } from './helpers.js';

// Patterns whose backtracking time doubles (or worse) with every character of a near-miss line.
const CATASTROPHIC = [
  '(a+)+$',
  '^(a+)+$',
  '(a*)*b',
  '(a|a)+$',
  '(a|aa)+$',
  '^(a?){30}a{30}$',
  '([a-z]+)+!x',
  '^(\\w+\\s?)+;$',
  '((a+)+)+b',
  '^(([a-z])+.)+[A-Z]([a-z])+$',
];
const NEAR_MISS = `${'a'.repeat(30)}!`;

/** Counts turns of the event loop while `work` runs: a frozen loop counts none until the work is over. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const start = turns;
  try {
    const result = await work();
    return { result, turns: turns - start };
  } finally {
    running = false;
  }
}

describe('a catastrophic pattern from the model never freezes grep', () => {
  let ws: string;
  let grep: ToolDriver;
  beforeAll(async () => {
    ws = await tempDir();
    // The near miss first, then enough plain lines that the search takes several turns of the loop.
    await fs.writeFile(path.join(ws, 'input.txt'), `${NEAR_MISS}\n${'x\n'.repeat(10_000)}`);
    grep = await ToolDriver.open({ roots: ws, shell: false, grep: { ripgrep: false } });
  });
  afterAll(async () => {
    await grep.close();
    await fs.rm(ws, { recursive: true, force: true });
  });

  it.each(CATASTROPHIC)('%s: answers, and the event loop turns while it searches', async (pattern) => {
    const { result, turns } = await turnsDuring(() => grep.ok('grep', { pattern, path: 'input.txt' }));
    expect(result).toMatch(/^No matches for /);
    expect(turns).toBeGreaterThan(0);
  });

  it('finds what a linear-time engine finds, case-insensitively too', async () => {
    expect(await grep.ok('grep', { pattern: 'A{30}!', path: 'input.txt', ignore_case: true })).toBe(
      `input.txt:1:${NEAR_MISS}`,
    );
  });

  it('names the constructs RE2 lacks instead of running them', async () => {
    for (const pattern of ['(a)\\1', '(?=a)a', '(?<!b)a', '(?<name>a)\\k<name>']) {
      expect(await grep.refused('grep', { pattern })).toMatch(
        /^grep: backreferences \(\\1\) and lookaround .* are not supported: grep patterns use RE2 syntax/,
      );
    }
    expect(await grep.refused('grep', { pattern: '(' })).toMatch(/^grep: error parsing regexp: missing closing \)/);
  });
});

describe('a catastrophic pattern in a tool schema never freezes argument validation', () => {
  it.each(CATASTROPHIC)('%s: the near miss is refused at once', async (pattern) => {
    const calls: unknown[] = [];
    const tool = defineTool({
      name: 'lookup',
      description: 'looks a word up',
      schema: jsonSchema({
        type: 'object',
        properties: {
          word: { type: 'string', pattern },
          nested: { type: 'array', items: { type: 'string', pattern } },
        },
      }),
      execute: (args) => {
        calls.push(args);
        return 'found';
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ name: 'lookup', args: { word: NEAR_MISS } }] },
      { toolCalls: [{ name: 'lookup', args: { nested: [NEAR_MISS] } }] },
      { text: 'done' },
    ]);
    const agent = createAgent({ model, tools: [tool] });
    // Validation is synchronous: the call answering at all is the proof (JavaScript's engine takes minutes).
    const result = await agent.prompt('go');
    await agent.stop();
    const results = toolResults(result.messages);
    expect(results).toHaveLength(2);
    for (const refused of results) {
      expect(refused?.isError).toBe(true);
      expect(resultText(refused)).toContain('Invalid arguments for lookup');
    }
    expect(calls).toEqual([]);
  });

  it('still checks an ordinary pattern, and lets a pattern RE2 cannot read through to the server', async () => {
    const schema = jsonSchema({
      type: 'object',
      properties: { id: { type: 'string', pattern: '^[a-z]{3}-\\d+$' }, tag: { type: 'string', pattern: '(?=x)x' } },
    });
    expect(schema.safeParse({ id: 'abc-12' }).success).toBe(true);
    expect(schema.safeParse({ id: 'abc-x' }).success).toBe(false);
    expect(schema.safeParse({ id: 'abc-12', tag: 'anything' }).success).toBe(true);
  });

  it('checks property names of patternProperties linearly', () => {
    const schema = jsonSchema({
      type: 'object',
      properties: {
        counts: { type: 'object', patternProperties: { '^(a+)+$': { type: 'number' } }, additionalProperties: false },
      },
    });
    expect(schema.safeParse({ counts: { aaa: 1 } }).success).toBe(true);
    expect(schema.safeParse({ counts: { aaa: 'x' } }).success).toBe(false);
    expect(schema.safeParse({ counts: { [NEAR_MISS]: 'x' } }).success).toBe(true);
  });
});
