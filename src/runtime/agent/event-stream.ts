import type { AgentEvent } from '../../protocol/index.js';

/**
 * An async queue of events with bounded buffering: when the reader falls more than `highWaterMark` events
 * behind, consecutive text or reasoning deltas are merged into one, so memory grows with the text, not with the
 * number of deltas, and nothing is lost.
 */
export class EventQueue implements AsyncIterableIterator<AgentEvent> {
  private buffer: AgentEvent[] = [];
  private head = 0;
  private waiting?: (result: IteratorResult<AgentEvent>) => void;
  private ended = false;

  constructor(
    private readonly highWaterMark = 256,
    private readonly onClose: () => void = () => {},
  ) {}

  push(event: AgentEvent): void {
    if (this.ended) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value: event, done: false });
      return;
    }
    if (this.buffer.length - this.head >= this.highWaterMark && this.mergeIntoLast(event)) return;
    this.buffer.push(event);
  }

  /** No more events: the reader gets what is buffered, then the end. */
  end(): void {
    this.ended = true;
    if (this.waiting && this.head >= this.buffer.length) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<AgentEvent>> {
    if (this.head < this.buffer.length) {
      const value = this.buffer[this.head++] as AgentEvent;
      if (this.head > 1024 && this.head * 2 > this.buffer.length) {
        this.buffer = this.buffer.slice(this.head);
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<AgentEvent>> {
    this.ended = true;
    // A reader may close the stream while another of its calls waits (a cancel button racing the loop).
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value: undefined, done: true });
    }
    this.buffer = [];
    this.head = 0;
    this.onClose();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private mergeIntoLast(event: AgentEvent): boolean {
    const last = this.buffer[this.buffer.length - 1];
    if (event.type !== 'message_update' || last?.type !== 'message_update' || last.agentId !== event.agentId)
      return false;
    const a = last.delta;
    const b = event.delta;
    if ((a.type === 'text' && b.type === 'text') || (a.type === 'reasoning' && b.type === 'reasoning')) {
      this.buffer[this.buffer.length - 1] = { ...last, delta: { type: a.type, delta: a.delta + b.delta } };
      return true;
    }
    return false;
  }
}
