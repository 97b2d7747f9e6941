import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEventOf, createAgent, defineTool, scriptedModel, textOf } from '../../src/index.js';
import { expectValidHistory, gatedTool, latch, nextEvent, record, resultText, toolResults } from './helpers.js';

const remove = defineTool({
  name: 'delete_file',
  description: 'Deletes a file',
  schema: z.object({ path: z.string() }),
  execute: ({ path }) => `deleted ${path}`,
});
const read = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  schema: z.object({ path: z.string() }),
  execute: ({ path }) => `contents of ${path}`,
});

describe('approvals', () => {
  const askForDeletes = (call: { name: string }) => (call.name === 'delete_file' ? 'ask' : 'allow');

  it('waits for every asked call; approved calls run, denied ones answer with the reason', async () => {
    const executed: string[] = [];
    const tracked = (tool: typeof remove) =>
      defineTool({
        ...tool,
        execute: (args: { path: string }, ctx) => {
          executed.push(args.path);
          return tool.execute(args, ctx);
        },
      });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'delete_file', args: { path: 'a.txt' }, id: 'del_a' },
          { name: 'read_file', args: { path: 'b.txt' }, id: 'read_b' },
          { name: 'delete_file', args: { path: 'c.txt' }, id: 'del_c' },
        ],
      },
      { text: 'done' },
    ]);
    const agent = createAgent({ model, tools: [tracked(remove), tracked(read)], policy: askForDeletes });
    const asked: Array<AgentEventOf<'approval_requested'>> = [];
    agent.on('approval_requested', (e) => asked.push(e));
    const done = agent.prompt('clean up');

    await nextEvent(agent, (e) => e.type === 'approval_requested' && e.toolCallId === 'del_c');
    expect(asked.map((e) => [e.toolCallId, e.args])).toEqual([
      ['del_a', { path: 'a.txt' }],
      ['del_c', { path: 'c.txt' }],
    ]);
    // The whole batch waits, the allowed read included.
    expect(executed).toEqual([]);
    expect(agent.actor.getSnapshot().matches({ running: { turn: { step: { tools: 'awaitingApproval' } } } })).toBe(
      true,
    );

    agent.approve('del_a');
    expect(executed).toEqual([]);
    agent.deny('del_c', 'keep c');
    const result = await done;

    expect(executed.sort()).toEqual(['a.txt', 'b.txt']);
    expect(toolResults(result.messages).map((r) => [r.toolCallId, r.isError, resultText(r)])).toEqual([
      ['del_a', false, 'deleted a.txt'],
      ['read_b', false, 'contents of b.txt'],
      ['del_c', true, 'The user denied this tool call: keep c'],
    ]);
    await agent.stop();
  });

  it('a policy deny is an error result without asking; an async policy is awaited; a throwing one denies', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'delete_file', args: { path: '/etc/passwd' } },
          { name: 'read_file', args: { path: 'ok' } },
          { name: 'read_file', args: { path: 'boom' } },
        ],
      },
      { text: 'ok' },
    ]);
    const agent = createAgent({
      model,
      tools: [remove, read],
      policy: async (call) => {
        await Promise.resolve();
        if (call.arguments.path === 'boom') throw new Error('policy store offline');
        return call.name === 'delete_file' ? { decision: 'deny', reason: 'system files are off limits' } : 'allow';
      },
    });
    const asked: unknown[] = [];
    agent.on('approval_requested', (e) => asked.push(e));
    const result = await agent.prompt('x');
    expect(asked).toEqual([]);
    expect(toolResults(result.messages).map((r) => resultText(r))).toEqual([
      'Permission denied: system files are off limits',
      'contents of ok',
      'Permission denied: the policy failed: policy store offline',
    ]);
    await agent.stop();
  });
});

describe('steering and queued prompts', () => {
  it('a steer joins the history at the next step boundary, inside the running turn', async () => {
    const gate = latch();
    const wait = defineTool({
      name: 'wait',
      description: 'waits',
      schema: z.object({}),
      execute: async () => {
        await gate.promise;
        return 'waited';
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'wait' }] }, { text: 'switched to Python' }]);
    const agent = createAgent({ model, tools: [wait] });
    const turns = record(agent);
    const done = agent.prompt('write it in Go');
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    agent.steer('actually, use Python');
    gate.resolve();
    const result = await done;

    expect(result.messages.map((m) => [m.role, m.role === 'user' ? m.source : undefined])).toEqual([
      ['user', 'prompt'],
      ['assistant', undefined],
      ['tool', undefined],
      ['user', 'steer'],
      ['assistant', undefined],
    ]);
    // The steer reached the model's second request, after the tool result, and started no new turn.
    expect(textOf(model.requests[1]?.messages.at(-1))).toBe('actually, use Python');
    expect(turns.filter((e) => e.type === 'turn_start')).toHaveLength(1);
    expectValidHistory(result.messages);
    await agent.stop();
  });

  it('a steer that arrives during the final answer keeps the turn going', async () => {
    const model = scriptedModel([
      { text: 'Here is the Go version.', chunkSize: 4, deltaDelayMs: 2 },
      { text: 'And here it is in Python.' },
    ]);
    const agent = createAgent({ model });
    const done = agent.prompt('write it');
    await nextEvent(agent, (e) => e.type === 'message_update');
    agent.steer('in Python please');
    const result = await done;
    expect(result.text).toBe('And here it is in Python.');
    expect(model.calls).toBe(2);
    await agent.stop();
  });

  it('prompts sent while running are queued and run as the next turns, in order', async () => {
    const model = scriptedModel([{ text: 'one', latencyMs: 5 }, { text: 'two' }, { text: 'three' }]);
    const agent = createAgent({ model });
    const events = record(agent);
    const [a, b, c] = await Promise.all([agent.prompt('1'), agent.prompt('2'), agent.prompt('3')]);
    expect([a.text, b.text, c.text]).toEqual(['one', 'two', 'three']);
    expect(b.messages.map((m) => textOf(m))).toEqual(['2', 'two']);
    const turnEnds = events.filter((e) => e.type === 'turn_end').map((e) => e.turn);
    expect(turnEnds).toEqual([1, 2, 3]);
    // One run: queued prompts do not return to idle in between.
    expect(events.filter((e) => e.type === 'agent_start')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'agent_end')).toHaveLength(1);
    await agent.stop();
  });
});

describe('interrupts', () => {
  it('during the model stream: the partial answer is discarded and the turn ends interrupted', async () => {
    const model = scriptedModel([
      { text: 'a long answer that streams slowly', chunkSize: 2, deltaDelayMs: 5 },
      { text: 'fresh start' },
    ]);
    const agent = createAgent({ model });
    const events = record(agent);
    const done = agent.prompt('talk');
    await nextEvent(agent, (e) => e.type === 'message_update');
    agent.interrupt();
    const result = await done;

    expect(result.stopReason).toBe('interrupted');
    expect(result.messages.map((m) => m.role)).toEqual(['user']);
    const discarded = events.find((e) => e.type === 'message_end' && e.discarded);
    expect(discarded).toMatchObject({ discarded: 'interrupted' });
    // turn_end comes after the discard, and no delta of the aborted stream arrives after it.
    const end = events.findIndex((e) => e.type === 'turn_end');
    expect(events.findIndex((e) => e.type === 'message_end' && e.discarded)).toBeLessThan(end);
    await new Promise((r) => setTimeout(r, 30));
    expect(events.slice(end + 1).filter((e) => e.type === 'message_update')).toEqual([]);

    const next = await agent.prompt('again');
    expect(next.text).toBe('fresh start');
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('during a slow tool: its signal aborts, every open call gets an interrupted result, late results are dropped', async () => {
    const finishLate = latch<string>();
    let aborted = false;
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      schema: z.object({}),
      execute: async (_args, ctx) => {
        ctx.signal.addEventListener('abort', () => {
          aborted = true;
        });
        return finishLate.promise;
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { path: 'x' } }, { name: 'slow' }] },
      { text: 'next' },
    ]);
    const agent = createAgent({ model, tools: [read, slow] });
    const done = agent.prompt('go');
    await nextEvent(agent, (e) => e.type === 'tool_execution_end' && e.toolName === 'read_file');
    agent.interrupt();
    const result = await done;

    expect(aborted).toBe(true);
    expect(result.stopReason).toBe('interrupted');
    const [fast, cut] = toolResults(result.messages);
    expect(fast).toMatchObject({ isError: false });
    expect(cut?.isError).toBe(true);
    expect(resultText(cut)).toContain('interrupted');
    finishLate.resolve('late');
    await new Promise((r) => setImmediate(r));
    expect(toolResults(agent.messages)).toHaveLength(2);
    expectValidHistory(agent.messages);

    expect((await agent.prompt('go on')).text).toBe('next');
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('as the tool calls arrive: calls nothing had to authorize do not start once the interrupt is in', async () => {
    // Nothing can refuse these calls, so the tool worker runs them unasked: only once the agent has taken their
    // validation, after the interrupt a listener of the answer sent.
    let ran = 0;
    const counted = defineTool({
      name: 'counted',
      description: 'counted',
      schema: z.object({}),
      execute: async () => {
        ran++;
        return 'ran';
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'counted' }, { name: 'counted', args: { n: 2 } }] }]);
    const agent = createAgent({ model, tools: [counted] });
    agent.on('message_end', (event) => {
      if (event.message.role === 'assistant') agent.interrupt();
    });
    const result = await agent.prompt('go');

    expect(result.stopReason).toBe('interrupted');
    expect(ran).toBe(0);
    expect(toolResults(result.messages).map((part) => resultText(part))).toEqual([
      expect.stringContaining('interrupted'),
      expect.stringContaining('interrupted'),
    ]);
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('while awaiting approval, the waiting calls are closed', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'delete_file', args: { path: 'x' } }] }]);
    const agent = createAgent({ model, tools: [remove], policy: () => 'ask' });
    const done = agent.prompt('go');
    await nextEvent(agent, (e) => e.type === 'approval_requested');
    agent.interrupt();
    const result = await done;
    expect(result.stopReason).toBe('interrupted');
    expectValidHistory(agent.messages);
    agent.approve(toolResults(result.messages)[0]?.toolCallId ?? '');
    expect(agent.actor.getSnapshot().value).toBe('idle');
    await agent.stop();
  });

  it('a prompt signal interrupts its turn, or drops its prompt from the queue before it starts', async () => {
    const model = scriptedModel([
      { text: 'slow', chunkSize: 1, deltaDelayMs: 5 },
      { text: 'third', chunkSize: 1, deltaDelayMs: 5 },
    ]);
    const agent = createAgent({ model });
    const events = record(agent);
    const first = new AbortController();
    const second = new AbortController();
    const a = agent.prompt('1', { signal: first.signal });
    const b = agent.prompt('2', { signal: second.signal });
    const c = agent.prompt('3');
    second.abort();
    // The dropped prompt settles at once, while the turn ahead of it still runs.
    const rb = await b;
    expect(rb).toMatchObject({ stopReason: 'interrupted', messages: [], text: '' });
    await nextEvent(agent, (e) => e.type === 'message_update');
    first.abort();
    const [ra, rc] = await Promise.all([a, c]);
    expect([ra.stopReason, rc.stopReason]).toEqual(['interrupted', 'completed']);
    expect(rc.text).toBe('third');
    // The dropped prompt never started: no turn of it, no model call, nothing of it in the history.
    expect(events.filter((e) => e.type === 'turn_start')).toHaveLength(2);
    expect(model.calls).toBe(2);
    expect(agent.messages.filter((m) => m.role === 'user').map((m) => textOf(m))).toEqual(['1', '3']);
    await agent.stop();
  });

  it('aborting a queued prompt leaves the running turn alone and settles the prompt once', async () => {
    const { tool: wait, gate } = gatedTool();
    const model = scriptedModel([{ toolCalls: [{ name: 'wait' }] }, { text: 'first done' }, { text: 'after' }]);
    const agent = createAgent({ model, tools: [wait] });
    const events = record(agent);
    const controller = new AbortController();
    const running = agent.prompt('go');
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    let settled = 0;
    const queued = agent.prompt('queued', { signal: controller.signal }).then((result) => {
      settled++;
      return result;
    });
    const after = agent.prompt('after it');
    controller.abort();
    controller.abort();
    expect(agent.getState().queuedPrompts).toBe(1);
    gate.resolve();
    expect((await running).text).toBe('first done');
    expect(await queued).toMatchObject({ stopReason: 'interrupted', messages: [] });
    expect((await after).text).toBe('after');
    expect(settled).toBe(1);
    expect(events.filter((e) => e.type === 'turn_end').map((e) => e.stopReason)).toEqual(['completed', 'completed']);
    expect(agent.messages.filter((m) => m.role === 'user').map((m) => textOf(m))).toEqual(['go', 'after it']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    await agent.stop();
  });

  it('a prompt whose signal has already aborted never starts, even on an idle agent', async () => {
    const model = scriptedModel([{ text: 'answer' }]);
    const agent = createAgent({ model });
    const events = record(agent);
    const result = await agent.prompt('never', { signal: AbortSignal.abort() });
    expect(result).toMatchObject({ stopReason: 'interrupted', messages: [] });
    expect(events).toEqual([]);
    expect(model.calls).toBe(0);
    expect(agent.messages).toEqual([]);
    expect((await agent.prompt('now')).text).toBe('answer');
    await agent.stop();
  });
});

describe('stop()', () => {
  it('interrupts a running turn so the history stays valid, settles waiting prompts, and refuses new ones', async () => {
    const gate = latch();
    const hang = defineTool({
      name: 'hang',
      description: 'never returns',
      schema: z.object({}),
      execute: () => gate.promise.then(() => 'x'),
    });
    const agent = createAgent({ model: scriptedModel([{ toolCalls: [{ name: 'hang' }] }]), tools: [hang] });
    const running = agent.prompt('go');
    const queued = agent.prompt('later');
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    await agent.stop();
    expect((await running).stopReason).toBe('interrupted');
    expect((await queued).stopReason).toBe('interrupted');
    expectValidHistory(agent.messages);
    expect(agent.actor.getSnapshot().status).toBe('stopped');
    await expect(agent.prompt('more')).rejects.toThrow('is stopped');
    await agent.stop(); // idempotent
  });

  it('drops the queued prompts: none of them starts, asks the model or enters the history', async () => {
    const { tool: hang } = gatedTool('hang');
    const model = scriptedModel([{ toolCalls: [{ name: 'hang' }] }, { text: 'never asked' }]);
    const agent = createAgent({ model, tools: [hang] });
    const events = record(agent);
    let settled = 0;
    const count = <T>(result: T) => {
      settled++;
      return result;
    };
    const running = agent.prompt('go');
    const queued = [agent.prompt('later').then(count), agent.prompt('much later').then(count)];
    await nextEvent(agent, (e) => e.type === 'tool_execution_start');
    await agent.stop();
    expect((await running).stopReason).toBe('interrupted');
    for (const result of await Promise.all(queued))
      expect(result).toMatchObject({ stopReason: 'interrupted', messages: [], text: '' });
    expect(settled).toBe(2);
    expect(model.calls).toBe(1);
    expect(events.filter((e) => e.type === 'turn_start')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'turn_end')).toHaveLength(1);
    expect(agent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expectValidHistory(agent.messages);
  });
});
