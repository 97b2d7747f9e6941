import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type Message } from '../../src/index.js';
import { assertValidHistory, latch, router, waitFor } from './helpers.js';

const notificationsIn = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'notification').length;

describe('notifications that arrive together cost the parent one model call', () => {
  it('100 background tasks finishing in 5 bursts of 20: one parent model call per burst', async () => {
    const bursts = Array.from({ length: 5 }, () => latch());
    let parentCalls = 0;
    const heardPerCall: number[] = [];
    const model = router(async ({ prompt, answers, request }) => {
      if (prompt === 'ROOT') {
        parentCalls++;
        if (answers === 0) {
          const tasks = Array.from({ length: 100 }, (_, i) => ({ prompt: `task ${i}` }));
          return { toolCalls: [{ name: 'swarm', args: { tasks, background: true } }] };
        }
        if (answers === 1) return { text: 'started' };
        heardPerCall.push(notificationsIn(request.messages));
        return { text: `heard ${notificationsIn(request.messages)}` };
      }
      const i = Number(prompt.slice(5));
      await bursts[Math.floor(i / 20)]?.promise;
      return { text: `result ${i}` };
    });
    const root = createAgent({ model, subagents: { concurrency: 100, keepFinished: 0 } });
    await root.prompt('ROOT');
    expect(parentCalls).toBe(2);
    const callsPerBurst: number[] = [];
    for (const [b, burst] of bursts.entries()) {
      const before = parentCalls;
      const answered = waitFor(
        (type, fn) => root.on(type, fn),
        (e) => e.type === 'agent_end' && notificationsIn(root.messages) === 20 * (b + 1),
      );
      burst.open();
      await answered;
      callsPerBurst.push(parentCalls - before);
    }
    // Every burst's twenty results joined the history together, and the woken parent answered them with one call.
    expect(callsPerBurst).toEqual([1, 1, 1, 1, 1]);
    expect(heardPerCall).toEqual([20, 40, 60, 80, 100]);
    expect(notificationsIn(root.messages)).toBe(100);
    assertValidHistory(root.messages);
    await root.stop();
  });

  it('notifications arriving while the parent works join its next step together', async () => {
    const hold = latch();
    const childrenGo = latch();
    let finished = 0;
    const holdTool = defineTool({
      name: 'hold',
      description: 'waits',
      schema: z.object({}),
      execute: async () => {
        childrenGo.open();
        await hold.promise;
        return 'held';
      },
    });
    let parentCalls = 0;
    const model = router(async ({ prompt, answers, request }) => {
      if (prompt === 'ROOT') {
        parentCalls++;
        if (answers === 0) {
          const tasks = Array.from({ length: 10 }, (_, i) => ({ prompt: `task ${i}` }));
          return { toolCalls: [{ name: 'swarm', args: { tasks, background: true } }] };
        }
        if (answers === 1) return { toolCalls: [{ name: 'hold', args: {} }] };
        return { text: `heard ${notificationsIn(request.messages)}` };
      }
      await childrenGo.promise;
      // Spread over several macrotasks: each arrives on its own while the parent's tool runs.
      await new Promise((resolve) => setTimeout(resolve, Number(prompt.slice(5))));
      return { text: `result ${prompt}` };
    });
    const root = createAgent({ model, tools: [holdTool], subagents: { concurrency: 10 } });
    root.on('notification', () => {
      if (++finished === 10) hold.open();
    });
    const result = await root.prompt('ROOT');
    expect(result.text).toBe('heard 10');
    // swarm, hold, then one answer for the ten notifications and the tool's result.
    expect(parentCalls).toBe(3);
    assertValidHistory(root.messages);
    await root.stop();
  });
});
