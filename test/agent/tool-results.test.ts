import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel } from '../../src/index.js';
import { latch, record, resultText, toolResults } from './helpers.js';

/** The TOOL_RESULTS events the agent's own actor received, as lists of call ids. */
function toolResultEvents(): { inspect: (e: InspectionEvent) => void; lists: string[][] } {
  const lists: string[][] = [];
  const inspect = (e: InspectionEvent) => {
    if (e.type !== '@xstate.event' || e.event.type !== 'TOOL_RESULTS') return;
    lists.push((e.event.results as { toolCallId: string }[]).map((r) => r.toolCallId));
  };
  return { inspect, lists };
}

describe('tool results reach the machine', () => {
  it('together when they finish in the same tick, one event for the lot, in one step with their end events', async () => {
    const gate = latch();
    const wait = defineTool({
      name: 'wait',
      description: 'waits for the gate',
      schema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        await gate.promise;
        return `done ${n}`;
      },
    });
    const calls = [1, 2, 3].map((n) => ({ name: 'wait', args: { n }, id: `w${n}` }));
    const { inspect, lists } = toolResultEvents();
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: calls }, { text: 'ok' }]),
      tools: [wait],
      inspect,
    });
    const events = record(agent);
    const done = agent.prompt('go');
    await new Promise((resolve) => setImmediate(resolve));
    gate.resolve();
    const result = await done;

    expect(lists).toEqual([['w1', 'w2', 'w3']]);
    expect(toolResults(result.messages).map(resultText)).toEqual(['done 1', 'done 2', 'done 3']);
    // The three ends come together, after the three starts and before anything of the next step.
    const types = events.map((e) => e.type);
    const first = types.indexOf('tool_execution_end');
    expect(types.slice(first, first + 3)).toEqual(['tool_execution_end', 'tool_execution_end', 'tool_execution_end']);
    expect(types.slice(0, first).filter((t) => t === 'tool_execution_start')).toHaveLength(3);
    expect(types.slice(first + 3)).not.toContain('tool_execution_end');
    await agent.stop();
  });

  it('together when they finish in separate callbacks of one event-loop phase (timers firing together)', async () => {
    // Node runs microtasks between two timer (or immediate) callbacks, so a microtask flush alone would send one
    // event per call here; a result that leaves siblings running waits for the end of the phase instead.
    const wait = defineTool({
      name: 'wait',
      description: 'waits for its own macrotask',
      schema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        await new Promise((resolve) => setImmediate(resolve));
        return `done ${n}`;
      },
    });
    const calls = [1, 2, 3, 4].map((n) => ({ name: 'wait', args: { n }, id: `w${n}` }));
    const { inspect, lists } = toolResultEvents();
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: calls }, { text: 'ok' }]),
      tools: [wait],
      inspect,
    });
    const result = await agent.prompt('go');
    expect(lists).toEqual([['w1', 'w2', 'w3', 'w4']]);
    expect(toolResults(result.messages).map(resultText)).toEqual(['done 1', 'done 2', 'done 3', 'done 4']);
    await agent.stop();
  });

  it('one by one when they finish apart, a lone result without waiting for the others', async () => {
    const slow = latch();
    const tools = [
      defineTool({ name: 'fast', description: 'fast', schema: z.object({}), execute: () => 'fast' }),
      defineTool({
        name: 'slow',
        description: 'slow',
        schema: z.object({}),
        execute: async () => {
          await slow.promise;
          return 'slow';
        },
      }),
    ];
    const { inspect, lists } = toolResultEvents();
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'fast', id: 'f' },
          { name: 'slow', id: 's' },
        ],
      },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools, inspect });
    const fastEnded = latch();
    agent.on('tool_execution_end', (e) => {
      if (e.toolCallId === 'f') fastEnded.resolve();
    });
    const done = agent.prompt('go');
    await fastEnded.promise;
    // The fast result was delivered while the slow call still runs.
    expect(lists).toEqual([['f']]);
    slow.resolve();
    await done;
    expect(lists).toEqual([['f'], ['s']]);
    await agent.stop();
  });

  it('give tools a context they can destructure, whose own keys are only what the tool was given', async () => {
    let seen: { aborted: boolean; id: string; agent: string } | undefined;
    let keys: string[] = [];
    const probe = defineTool({
      name: 'probe',
      description: 'reads its context',
      schema: z.object({}),
      execute: (_args, ctx) => {
        const { signal, update, toolCallId, agentId } = ctx;
        update({ step: 1 });
        seen = { aborted: signal.aborted, id: toolCallId, agent: agentId };
        keys = Object.keys(ctx);
        return 'ok';
      },
    });
    const agent = createAgent({
      id: 'probe_agent',
      model: scriptedModel([{ toolCalls: [{ name: 'probe', id: 'p1' }] }, { text: 'done' }]),
      tools: [probe],
    });
    const updates: unknown[] = [];
    agent.on('tool_execution_update', (e) => updates.push(e.partial));
    await agent.prompt('go');
    expect(seen).toEqual({ aborted: false, id: 'p1', agent: 'probe_agent' });
    expect(updates).toEqual([{ step: 1 }]);
    // Logging or serialising a ctx shows what the tool was given, never the agent's runtime.
    for (const key of keys) expect(['toolCallId', 'agentId', 'signal', 'update']).toContain(key);
    await agent.stop();
  });

  it("abort a running call's signal on interrupt, never that of a call that already finished", async () => {
    const signals = new Map<string, AbortSignal>();
    const slow = latch();
    const tools = [
      defineTool({
        name: 'quick',
        description: 'quick',
        schema: z.object({}),
        execute: (_args, ctx) => {
          signals.set('quick', ctx.signal);
          return 'quick';
        },
      }),
      defineTool({
        name: 'slow',
        description: 'slow',
        schema: z.object({}),
        execute: async (_args, ctx) => {
          signals.set('slow', ctx.signal);
          await slow.promise;
          return 'slow';
        },
      }),
    ];
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'quick', id: 'q' },
          { name: 'slow', id: 's' },
        ],
      },
    ]);
    const agent = createAgent({ model, tools });
    const quickEnded = latch();
    agent.on('tool_execution_end', (e) => {
      if (e.toolCallId === 'q') quickEnded.resolve();
    });
    const done = agent.prompt('go');
    await quickEnded.promise;
    agent.interrupt();
    const result = await done;
    expect(result.stopReason).toBe('interrupted');
    expect(signals.get('slow')?.aborted).toBe(true);
    expect(signals.get('quick')?.aborted).toBe(false);
    expect(toolResults(result.messages).map(resultText)).toEqual(['quick', expect.stringContaining('interrupted')]);
    slow.resolve();
    await agent.stop();
  });
});
