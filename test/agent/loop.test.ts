import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, type ToolDefinition } from '../../src/index.js';
import { expectValidHistory, type Latch, latch, record, resultText, toolResults } from './helpers.js';

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  schema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => String(a + b),
});

describe('the tool loop', () => {
  it('runs three steps of tool calls, then answers, passing every result back to the model', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', args: { a: 1, b: 2 } }] },
      { toolCalls: [{ name: 'add', args: { a: 3, b: 4 } }] },
      { toolCalls: [{ name: 'add', args: { a: 7, b: 3 } }] },
      { text: 'The total is 10.', usage: { input: 10, output: 5 } },
    ]);
    const agent = createAgent({ model, tools: [add], system: 'Be brief.' });
    const events = record(agent);
    const result = await agent.prompt('Add some numbers');

    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('The total is 10.');
    expect(toolResults(result.messages).map(resultText)).toEqual(['3', '7', '10']);
    expect(result.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(result.usage).toMatchObject({ input: 10, output: 5 });
    expectValidHistory(agent.messages);

    // The model saw each previous result, with the system prompt and tool schema.
    expect(model.requests).toHaveLength(4);
    expect(model.requests[0]?.system).toBe('Be brief.');
    expect(model.requests[0]?.tools[0]).toMatchObject({
      name: 'add',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    });
    expect(toolResults(model.requests[3]?.messages ?? []).map(resultText)).toEqual(['3', '7', '10']);

    const types = events.map((e) => e.type);
    expect(types[0]).toBe('agent_start');
    expect(types.at(-1)).toBe('agent_end');
    expect(types.filter((t) => t === 'step_start')).toHaveLength(4);
    expect(types.filter((t) => t === 'tool_execution_end')).toHaveLength(3);
    // seq increases across the whole log, and every event knows its turn and step.
    expect(events.every((e, i) => i === 0 || e.seq > (events[i - 1]?.seq ?? 0))).toBe(true);
    expect(events.find((e) => e.type === 'tool_execution_start' && e.step === 2)).toBeDefined();
    await agent.stop();
  });

  it('an agent nothing restricts: each tool step is two replies to the agent, its calls validated with the answer', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', args: { a: 1, b: 2 } }] },
      { toolCalls: [{ name: 'add', args: { a: 'x', b: 4 } }] },
      { text: 'done' },
    ]);
    const received: string[] = [];
    const agent = createAgent({
      id: 'counted',
      model,
      tools: [add],
      inspect: (event) => {
        if (event.type !== '@xstate.event' || event.event.type.startsWith('xstate.')) return;
        const to = (event.actorRef as { id?: string }).id;
        if (to === 'counted') received.push(`${to} ← ${event.event.type}`);
      },
    });
    const result = await agent.prompt('go');
    expect(toolResults(result.messages).map((part) => part.isError)).toEqual([false, true]);
    const answer = ['counted ← MODEL_DONE'];
    // The second step's only call is invalid: it is answered with its error, nothing runs.
    expect(received).toEqual(['counted ← PROMPT', ...answer, 'counted ← TOOL_RESULTS', ...answer, ...answer]);
    await agent.stop();
  });

  it('runs consecutive parallel calls together and a sequential call alone, results in call order', async () => {
    const log: string[] = [];
    const gates = new Map<string, Latch>();
    const started = new Map<string, Latch>();
    for (const id of ['p1', 'p2', 's', 'p3']) {
      gates.set(id, latch());
      started.set(id, latch());
    }
    const work = (mode: 'parallel' | 'sequential'): ToolDefinition =>
      defineTool({
        name: mode === 'parallel' ? 'fetch' : 'write',
        description: mode,
        schema: z.object({ id: z.string() }),
        executionMode: mode,
        execute: async ({ id }: { id: string }) => {
          log.push(`start ${id}`);
          started.get(id)?.resolve();
          await gates.get(id)?.promise;
          log.push(`end ${id}`);
          return `done ${id}`;
        },
      });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'fetch', args: { id: 'p1' } },
          { name: 'fetch', args: { id: 'p2' } },
          { name: 'write', args: { id: 's' } },
          { name: 'fetch', args: { id: 'p3' } },
        ],
      },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools: [work('parallel'), work('sequential')] });
    const done = agent.prompt('go');

    // p1 and p2 overlap: both start before either ends. Release p2 first.
    await started.get('p1')?.promise;
    await started.get('p2')?.promise;
    expect(log).toEqual(['start p1', 'start p2']);
    gates.get('p2')?.resolve();
    gates.get('p1')?.resolve();
    // The sequential call starts only after the whole parallel group, and alone.
    await started.get('s')?.promise;
    expect(log).toEqual(['start p1', 'start p2', 'end p2', 'end p1', 'start s']);
    gates.get('s')?.resolve();
    await started.get('p3')?.promise;
    expect(log.indexOf('end s')).toBeLessThan(log.indexOf('start p3'));
    gates.get('p3')?.resolve();

    const result = await done;
    expect(toolResults(result.messages).map(resultText)).toEqual(['done p1', 'done p2', 'done s', 'done p3']);
    expectValidHistory(result.messages);
    await agent.stop();
  });

  it('caps one parallel group at toolConcurrency', async () => {
    let running = 0;
    let peak = 0;
    const release = latch();
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      schema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        running++;
        peak = Math.max(peak, running);
        await release.promise;
        running--;
        return String(n);
      },
    });
    const calls = Array.from({ length: 10 }, (_, n) => ({ name: 'slow', args: { n } }));
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: calls }, { text: 'ok' }]),
      tools: [slow],
      toolConcurrency: 3,
    });
    const started: string[] = [];
    agent.on('tool_execution_start', (e) => started.push(e.toolCallId));
    const done = agent.prompt('go');
    // Let every call that could start do so: the three admitted ones block on the latch, the rest must queue.
    while (started.length < 3) await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(started).toHaveLength(3);
    release.resolve();
    const result = await done;
    expect(peak).toBe(3);
    expect(toolResults(result.messages).map(resultText)).toEqual(calls.map((c) => String(c.args.n)));
    await agent.stop();
  });

  it('ends the turn with max_steps, every tool call still answered', async () => {
    const model = scriptedModel(() => ({ toolCalls: [{ name: 'add', args: { a: 1, b: 1 } }] }));
    const agent = createAgent({ model, tools: [add], maxSteps: 3 });
    const result = await agent.prompt('loop forever');
    expect(result.stopReason).toBe('max_steps');
    expect(model.calls).toBe(3);
    expect(toolResults(result.messages)).toHaveLength(3);
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('ends the turn after a batch whose every result says terminate', async () => {
    const finish = defineTool({
      name: 'finish',
      description: 'ends the task',
      schema: z.object({}),
      execute: () => ({ content: 'finished', terminate: true }),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'finish' }, { name: 'finish' }] }, { text: 'never asked' }]);
    const agent = createAgent({ model, tools: [finish, add] });
    const result = await agent.prompt('finish');
    expect(result.stopReason).toBe('completed');
    expect(model.calls).toBe(1);
    expect(result.messages.at(-1)?.role).toBe('tool');

    // One result without terminate keeps the turn going.
    const mixed = scriptedModel([
      { toolCalls: [{ name: 'finish' }, { name: 'add', args: { a: 1, b: 1 } }] },
      { text: 'went on' },
    ]);
    const other = createAgent({ model: mixed, tools: [finish, add] });
    expect((await other.prompt('x')).text).toBe('went on');
    await agent.stop();
    await other.stop();
  });

  it('publishes tool progress updates and keeps details out of the model-facing text', async () => {
    const progress = defineTool({
      name: 'download',
      description: 'downloads',
      schema: z.object({}),
      execute: (_args, ctx) => {
        ctx.update({ percent: 50 });
        ctx.update({ percent: 100 });
        return { content: 'downloaded', details: { bytes: 1234 } };
      },
    });
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'download' }] }, { text: 'ok' }]),
      tools: [progress],
    });
    const updates: unknown[] = [];
    agent.on('tool_execution_update', (e) => updates.push(e.partial));
    const result = await agent.prompt('get it');
    expect(updates).toEqual([{ percent: 50 }, { percent: 100 }]);
    const [first] = toolResults(result.messages);
    expect(first?.details).toEqual({ bytes: 1234 });
    expect(resultText(first)).toBe('downloaded');
    await agent.stop();
  });
});
