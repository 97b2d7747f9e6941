import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AgentEvent, createAgent, scriptedModel } from '../../src/index.js';
import type { MessageDelta } from '../../src/protocol/index.js';
import { EventQueue } from '../../src/runtime/agent/event-stream.js';
import { sleep } from '../../src/runtime/env/sleep.js';

// The queue behind `agent.stream()`, driven directly: the agent only ever pushes its own events in order and ends
// the queue after its turn_end, so several of the queue's promises (a reader parked when the queue ends, a reader
// closing early, deltas of other agents, thousands of reads) are reached here rather than through an agent.

let seq = 0;
function event(body: Record<string, unknown> & { type: AgentEvent['type'] }, agentId = 'a'): AgentEvent {
  return { seq: ++seq, agentId, turn: 1, step: 1, time: 0, ...body } as AgentEvent;
}
function delta(d: MessageDelta, agentId = 'a'): AgentEvent {
  return event({ type: 'message_update', delta: d }, agentId);
}
const text = (s: string, agentId = 'a') => delta({ type: 'text', delta: s }, agentId);
const reasoning = (s: string, agentId = 'a') => delta({ type: 'reasoning', delta: s }, agentId);

async function drain(queue: EventQueue): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const e of queue) out.push(e);
  return out;
}

/** What a reader sees, compactly: `text:abc`, `reasoning:x`, or the event type. */
function shape(e: AgentEvent): string {
  if (e.type !== 'message_update') return e.type;
  const d = e.delta;
  if (d.type === 'text' || d.type === 'reasoning') return `${e.agentId}:${d.type}:${d.delta}`;
  return `${e.agentId}:${d.type}`;
}

describe('EventQueue: a reader waiting for events', () => {
  it('a parked next() is answered by the next push, with that very event', async () => {
    const queue = new EventQueue();
    const pending = queue.next();
    const first = event({ type: 'turn_start' });
    queue.push(first);
    expect(await pending).toEqual({ value: first, done: false });
    // The event went straight to the reader, not into the buffer as well.
    queue.end();
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });

  it('a reader parked when the turn ends gets the end, not a hang', async () => {
    const queue = new EventQueue();
    const pending = queue.next();
    queue.end();
    expect(await pending).toEqual({ value: undefined, done: true });
    // And it stays ended: later reads and pushes change nothing.
    queue.push(text('late'));
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });

  it('end() lets the reader finish what is buffered first; pushes after the end are dropped', async () => {
    const queue = new EventQueue();
    queue.push(event({ type: 'turn_start' }));
    queue.push(text('hi'));
    queue.end();
    queue.push(event({ type: 'turn_end', stopReason: 'completed', inputId: 'x' }));
    expect((await drain(queue)).map(shape)).toEqual(['turn_start', 'a:text:hi']);
  });

  it('several reads, several pushes, interleaved: every event once, in push order', async () => {
    const queue = new EventQueue(4);
    const read: string[] = [];
    const reader = (async () => {
      for await (const e of queue) read.push(shape(e));
    })();
    for (let i = 0; i < 10; i++) {
      queue.push(text(String(i)));
      if (i % 3 === 0) await Promise.resolve();
    }
    queue.end();
    await reader;
    // Whether or not some deltas were merged on the way, the text arrives whole and in order.
    expect(read.join('').replaceAll('a:text:', '')).toBe('0123456789');
  });
});

describe('EventQueue: closing early', () => {
  it('return() mid-stream ends the stream at once, drops the buffer, calls onClose once, ignores later pushes', async () => {
    let closed = 0;
    const queue = new EventQueue(256, () => closed++);
    queue.push(text('a'));
    queue.push(text('b'));
    expect(await queue.next()).toMatchObject({ done: false, value: { delta: { delta: 'a' } } });
    expect(await queue.return()).toEqual({ value: undefined, done: true });
    expect(closed).toBe(1);
    // 'b' was buffered but the reader said it wants no more.
    expect(await queue.next()).toEqual({ value: undefined, done: true });
    queue.push(text('c'));
    queue.end();
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });

  it('breaking out of for-await closes the queue through return()', async () => {
    let closed = 0;
    const queue = new EventQueue(256, () => closed++);
    queue.push(text('a'));
    queue.push(text('b'));
    for await (const e of queue) {
      expect(shape(e)).toBe('a:text:a');
      break;
    }
    expect(closed).toBe(1);
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });

  it('works without an onClose callback (the default does nothing)', async () => {
    const queue = new EventQueue();
    queue.push(text('a'));
    await expect(queue.return()).resolves.toEqual({ value: undefined, done: true });
  });

  // A reader that closes the stream from elsewhere (a cancel button, a race) while its loop waits in next().
  it('return() while a next() is waiting settles that next() as done', async () => {
    const queue = new EventQueue();
    let settled: IteratorResult<AgentEvent> | undefined;
    const pending = queue.next().then((r) => {
      settled = r;
      return r;
    });
    await queue.return();
    // A macrotask later every promise settled by return() has run its callbacks.
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toEqual({ value: undefined, done: true });
    await pending;
  });
});

describe('EventQueue: bounded buffering', () => {
  it('keeps every delta apart while the reader is less than highWaterMark behind', async () => {
    const queue = new EventQueue(3);
    queue.push(text('a'));
    queue.push(text('b'));
    queue.push(text('c'));
    queue.end();
    expect((await drain(queue)).map(shape)).toEqual(['a:text:a', 'a:text:b', 'a:text:c']);
  });

  it('past highWaterMark merges consecutive text deltas of one agent into the last one, losing nothing', async () => {
    const queue = new EventQueue(2);
    for (const s of ['a', 'b', 'c', 'd', 'e']) queue.push(text(s));
    queue.end();
    const seen = await drain(queue);
    expect(seen.map(shape)).toEqual(['a:text:a', 'a:text:bcde']);
    // The merged event keeps the coordinates of the event it was merged into.
    expect(seen[1]?.seq).toBe(seen[0] ? seen[0].seq + 1 : -1);
  });

  it('merges reasoning with reasoning, but never text with reasoning', async () => {
    const queue = new EventQueue(1);
    queue.push(reasoning('r1'));
    queue.push(reasoning('r2'));
    queue.push(text('t1'));
    queue.push(text('t2'));
    queue.push(reasoning('r3'));
    queue.end();
    expect((await drain(queue)).map(shape)).toEqual(['a:reasoning:r1r2', 'a:text:t1t2', 'a:reasoning:r3']);
  });

  it('never merges deltas of different agents', async () => {
    const queue = new EventQueue(1);
    queue.push(text('a1', 'a'));
    queue.push(text('b1', 'b'));
    queue.push(text('b2', 'b'));
    queue.push(text('a2', 'a'));
    queue.end();
    expect((await drain(queue)).map(shape)).toEqual(['a:text:a1', 'b:text:b1b2', 'a:text:a2']);
  });

  it('never merges tool-call deltas, nor across an event that is not a delta', async () => {
    const queue = new EventQueue(1);
    queue.push(delta({ type: 'tool_call_start', toolCallId: 'c1', toolName: 'echo' }));
    queue.push(delta({ type: 'tool_call', toolCallId: 'c1', delta: '{"a"' }));
    queue.push(delta({ type: 'tool_call', toolCallId: 'c1', delta: ':1}' }));
    queue.push(delta({ type: 'tool_call_end', toolCallId: 'c1' }));
    queue.push(text('x'));
    queue.push(event({ type: 'step_end' }));
    queue.push(text('y'));
    queue.push(text('z'));
    queue.end();
    const seen = await drain(queue);
    expect(seen.map(shape)).toEqual([
      'a:tool_call_start',
      'a:tool_call',
      'a:tool_call',
      'a:tool_call_end',
      'a:text:x',
      'step_end',
      'a:text:yz',
    ]);
    const args = seen.flatMap((e) => (e.type === 'message_update' && e.delta.type === 'tool_call' ? [e.delta] : []));
    expect(args.map((d) => d.delta)).toEqual(['{"a"', ':1}']);
  });

  it('counts only unread events against highWaterMark: a reader that catches up gets separate deltas again', async () => {
    const queue = new EventQueue(2);
    queue.push(text('a'));
    queue.push(text('b'));
    queue.push(text('c')); // 2 unread: merged into b
    expect((await queue.next()).value).toMatchObject({ delta: { delta: 'a' } });
    expect((await queue.next()).value).toMatchObject({ delta: { delta: 'bc' } });
    queue.push(text('d')); // 0 unread: kept apart
    queue.push(text('e')); // 1 unread: kept apart
    queue.end();
    expect((await drain(queue)).map(shape)).toEqual(['a:text:d', 'a:text:e']);
  });

  it('reads thousands of buffered events in order across the buffer’s compaction, with pushes in between', async () => {
    // highWaterMark above the count: no merging, so every event must come back exactly once.
    const queue = new EventQueue(10_000);
    const pushed: number[] = [];
    const push = (n: number) => {
      for (let i = 0; i < n; i++) {
        const e = event({ type: 'step_start' });
        pushed.push(e.seq);
        queue.push(e);
      }
    };
    push(3000);
    const read: number[] = [];
    // Read past the point where the consumed prefix is dropped (more than 1024 read, more than half the buffer)…
    for (let i = 0; i < 2000; i++) read.push(((await queue.next()).value as AgentEvent).seq);
    // …then keep pushing and reading: the unread tail survived the compaction.
    push(1500);
    for (let i = 0; i < 1500; i++) read.push(((await queue.next()).value as AgentEvent).seq);
    push(10);
    queue.end();
    for (const e of await drain(queue)) read.push(e.seq);
    expect(read).toEqual(pushed);
  });
});

describe('agent.stream() over the queue', () => {
  it('a reader that waits on every event still sees the whole turn, ending with its turn_end', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'one two three', chunkSize: 4 }]) });
    const stream = agent.stream('go', { highWaterMark: 1 });
    const types: string[] = [];
    let textSeen = '';
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'message_update' && e.delta.type === 'text') textSeen += e.delta.delta;
    }
    expect(types[0]).toBe('turn_start');
    expect(types.at(-1)).toBe('turn_end');
    expect(textSeen).toBe('one two three');
    expect((await stream.result).text).toBe('one two three');
    await agent.stop();
  });

  it('a reader that closes its stream early reads nothing more, even from later turns; the turns still complete', async () => {
    const agent = createAgent({
      model: scriptedModel([
        { text: 'first', chunkSize: 1 },
        { text: 'second', chunkSize: 1 },
      ]),
    });
    const stream = agent.stream('one');
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value?.type).toBe('turn_start');
    await iterator.return?.();
    expect((await stream.result).text).toBe('first');
    await agent.prompt('two');
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    await agent.stop();
  });
});

describe('sleep', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves after its delay, with or without a signal, and leaves no timer behind', async () => {
    vi.useFakeTimers();
    let done = 0;
    const plain = sleep(50).then(() => done++);
    const signalled = sleep(50, new AbortController().signal).then(() => done++);
    await vi.advanceTimersByTimeAsync(49);
    expect(done).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all([plain, signalled]);
    expect(done).toBe(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects at once with the reason when the signal is already aborted, starting no timer', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const reason = new Error('already gone');
    controller.abort(reason);
    await expect(sleep(1_000, controller.signal)).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects with the reason when aborted while sleeping, and clears its timer', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const reason = new Error('stop now');
    const pending = sleep(1_000, controller.signal);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('once it has resolved, a later abort of the same signal is not its business', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    const pending = sleep(10, controller.signal);
    await vi.advanceTimersByTimeAsync(10);
    await expect(pending).resolves.toBeUndefined();
    // The abort listener went with the timer, so a long-lived signal does not collect one listener per sleep.
    expect(removed).toHaveBeenCalledWith('abort', expect.any(Function));
    controller.abort(new Error('later'));
  });
});
