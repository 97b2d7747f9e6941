import { describe, expect, it } from 'vitest';
import {
  createAgent,
  type Model,
  ModelError,
  type ModelEvent,
  type ModelRequest,
  scriptedModel,
} from '../../src/index.js';
import { echo, latch } from './helpers.js';

/**
 * A model whose every call is recorded with its signal. Call 1, like some SDKs, may leave an abort listener on its
 * signal; call `waiting` streams nothing until it is aborted; the others are answered by `inner` (by default: a tool
 * call first, then text).
 */
function probe(options: { leaveListener: boolean; waiting?: number; inner?: Model }) {
  const signals: AbortSignal[] = [];
  let staleAbort = false;
  const streaming = latch();
  const waiting = options.waiting ?? 2;
  const inner =
    options.inner ??
    scriptedModel((_request, index) =>
      index === 0 ? { toolCalls: [{ name: 'echo', args: { text: 'a' } }] } : { text: 'after the interrupt' },
    );
  const model: Model = {
    id: 'probe',
    provider: 'scripted',
    stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
      signals.push(signal);
      const n = signals.length;
      if (n === 1 && options.leaveListener) signal.addEventListener('abort', () => (staleAbort = true));
      if (n !== waiting) return inner.stream(request, signal);
      return (async function* () {
        streaming.resolve();
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        yield* [];
        throw new ModelError({ code: 'aborted', message: 'aborted' });
      })();
    },
  };
  return { model, signals, streaming: streaming.promise, staleAbort: () => staleAbort };
}

describe("the model call's abort signal", () => {
  for (const leaveListener of [false, true]) {
    it(`is live for every call, aborted by an interrupt only for the call in flight (${leaveListener ? 'a provider that leaves a listener behind' : 'a tidy provider'})`, async () => {
      const { model, signals, streaming, staleAbort } = probe({ leaveListener });
      const agent = createAgent({ model, tools: [echo] });

      const running = agent.prompt('go');
      await streaming;
      expect(signals.map((s) => s.aborted)).toEqual([false, false]);
      agent.interrupt();
      expect((await running).stopReason).toBe('interrupted');
      expect(signals[1]?.aborted).toBe(true);
      // A listener the first call left behind belongs to a call that had finished: the interrupt of a later call
      // must not reach it.
      expect(staleAbort()).toBe(false);

      const next = await agent.prompt('again');
      expect(next.text).toBe('after the interrupt');
      expect(signals).toHaveLength(3);
      expect(signals[2]?.aborted).toBe(false);
      await agent.stop();
    });
  }
});

describe('model-call signals across agents', () => {
  it("never carry one agent's stale listener or interrupt into another agent's call", async () => {
    // Call 1 (the first agent's) leaves a listener behind; call 3 (the third agent's) waits.
    const { model, signals, streaming, staleAbort } = probe({
      leaveListener: true,
      waiting: 3,
      inner: scriptedModel(() => ({ text: 'done' })),
    });
    const first = createAgent({ model });
    const second = createAgent({ model });
    const third = createAgent({ model });
    expect((await first.prompt('one')).text).toBe('done');
    expect((await second.prompt('two')).text).toBe('done');

    // The third agent's call waits; the second agent, idle, is interrupted: nothing of it reaches the third.
    const running = third.prompt('three');
    await streaming;
    second.interrupt();
    expect(signals[2]?.aborted).toBe(false);
    third.interrupt();
    expect((await running).stopReason).toBe('interrupted');
    expect(signals[2]?.aborted).toBe(true);
    // The first agent's listener belongs to a call long finished: no later call's interrupt reaches it.
    expect(staleAbort()).toBe(false);
    await Promise.all([first.stop(), second.stop(), third.stop()]);
  });
});
