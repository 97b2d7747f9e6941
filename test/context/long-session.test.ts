/**
 * A scripted model with a 4,000-token window that counts tokens its own way (not with Troupe's estimator),
 * refuses anything larger with `context_overflow`, and reports its count as usage: a 300-turn conversation with a
 * tool call per turn runs through it without one overflow, and the facts planted at the start and in the last
 * turns are in what it is sent at the end.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEvent, createAgent, defineTool, type ModelRequest, scriptedModel, textOf } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { expectValidHistory } from '../agent/helpers.js';

const WINDOW = 4_000;

/** The model's own count: JSON on the wire, ~3.5 characters a token (coarser than Troupe's estimate). */
function countTokens(request: ModelRequest): number {
  const wire = JSON.stringify({ system: request.system, tools: request.tools, messages: request.messages });
  return Math.ceil(wire.length / 3.5);
}

function lastUserText(request: ModelRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i];
    if (message?.role === 'user') return textOf(message);
  }
  return '';
}

describe('a long session in a small window', () => {
  it('holds 300 turns with tool calls in 4,000 tokens: no overflow, planted facts kept, every request within the window', async () => {
    const sizes: number[] = [];
    let overflows = 0;
    let summaries = 0;
    const model = scriptedModel(
      (request): ScriptedAnswer => {
        const tokens = countTokens(request);
        if (tokens > WINDOW) {
          overflows++;
          return {
            error: { code: 'context_overflow', message: `prompt is too long: ${tokens} > ${WINDOW}`, status: 400 },
          };
        }
        sizes.push(tokens);
        const usage = { input: tokens, output: 30 };
        if (request.system?.startsWith('You are compacting')) {
          summaries++;
          return { text: `I have been looking up items for the user, one per turn (summary ${summaries}).`, usage };
        }
        const last = request.messages[request.messages.length - 1];
        const turn = /Turn (\d+)/.exec(lastUserText(request))?.[1] ?? '?';
        if (last?.role === 'user') return { toolCalls: [{ name: 'lookup', args: { item: Number(turn) } }], usage };
        return { text: `Item ${turn} noted.`, usage };
      },
      { record: false },
    );
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up an item',
      schema: z.object({ item: z.number() }),
      execute: ({ item }) => `Item ${item}: shelf ${item % 17}, ${'details '.repeat(25)}`,
    });
    const agent = createAgent({
      model,
      tools: [lookup],
      system: 'You keep an inventory.',
      context: { contextWindow: WINDOW },
    });
    const events: AgentEvent[] = [];
    agent.on('*', (e) => {
      if (e.type.startsWith('compaction') || e.type === 'turn_end') events.push(e);
    });
    let lastRequest: ModelRequest | undefined;
    const spy = model.stream.bind(model);
    Object.assign(model, {
      stream: (request: ModelRequest, signal: AbortSignal) => {
        if (!request.system?.startsWith('You are compacting')) lastRequest = request;
        return spy(request, signal);
      },
    });

    await agent.prompt('Turn 0: the vault code is 7391. Remember it. Please look up item 0.');
    for (let turn = 1; turn < 300; turn++) {
      const extra = turn === 298 ? ' Note: the courier is called Ilse.' : '';
      const answer = await agent.prompt(`Turn ${turn}: please look up item ${turn}.${extra}`);
      expect(answer.stopReason).toBe('completed');
    }

    expect(overflows).toBe(0);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(WINDOW);
    const ends = events.filter((e) => e.type === 'compaction_end');
    // Compaction frees room for several turns: it does not run on every turn.
    expect(ends.length).toBeGreaterThan(5);
    expect(ends.length).toBeLessThan(75);
    expect(events.filter((e) => e.type === 'compaction_start')).toHaveLength(ends.length);
    for (const end of ends) {
      if (end.type === 'compaction_end') expect(end.tokensAfter).toBeLessThan(end.tokensBefore);
    }
    const sent = JSON.stringify(lastRequest?.messages);
    expect(sent).toContain('the vault code is 7391');
    expect(sent).toContain('the courier is called Ilse');
    expect(sent).toContain(`summary ${summaries}`);
    expectValidHistory(lastRequest?.messages ?? []);
    // The stored history keeps every message: 300 turns of prompt, call, result, answer.
    expect(agent.messages).toHaveLength(1_200);
    await agent.stop();
  });
});
