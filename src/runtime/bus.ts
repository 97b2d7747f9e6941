import type { AgentEvent, AgentEventBody, AgentEventOf, AgentEventType, MessageDelta } from '../protocol/index.js';

export type Listener<E = AgentEvent> = (event: E) => void;

/** Where an event comes from; the bus adds `seq` and `time`. */
export interface EventOrigin {
  agentId: string;
  parentId?: string;
  turn: number;
  step: number;
}

/**
 * One bus per system. XState's `emit` reaches only listeners on the emitting actor, never its parent, so machines
 * and workers publish here and one listener on the root follows the whole tree. An event is built only when
 * somebody listens to its type, which keeps the hot paths (deltas) nearly free when nobody does.
 */
export class EventBus {
  private seq = 0;
  // Made on the first listener: every standalone agent owns a bus, and most never get one of each kind.
  private byType?: Map<string, Set<Listener>>;
  private all?: Set<Listener>;

  constructor(private readonly onListenerError: (error: unknown) => void = reportListenerError) {}

  /** A resumed session's events continue its journal's numbering. */
  continueAt(seq: number): void {
    if (seq > this.seq) this.seq = seq;
  }

  wants(type: AgentEventType): boolean {
    return (this.all?.size ?? 0) > 0 || (this.byType?.get(type)?.size ?? 0) > 0;
  }

  publish(origin: EventOrigin, body: AgentEventBody): AgentEvent | undefined {
    const typed = this.byType?.get(body.type);
    const all = this.all !== undefined && this.all.size > 0 ? this.all : undefined;
    if (all === undefined && (typed === undefined || typed.size === 0)) return undefined;
    // Built as one literal with the body spread last: the origin is usually the agent's runtime object, so it is
    // never spread (that would copy the runtime into every event), and on this V8 `{ ...body, more }` or adding
    // fields after a spread take a slow path (~1 µs or worse per event, the whole cost of a streamed delta).
    const seq = ++this.seq;
    const time = Date.now();
    const { agentId, parentId, turn, step } = origin;
    const event = (
      parentId === undefined
        ? { seq, time, agentId, turn, step, ...body }
        : { seq, time, agentId, parentId, turn, step, ...body }
    ) as AgentEvent;
    this.dispatch(typed, all, event);
    return event;
  }

  /**
   * `message_update`, published once per streamed delta: the same event as `publish` makes (same fields, same
   * order), written out. The spread in `publish` sees every kind of body, so V8 gives up on it and copies through
   * its generic path; this site only ever sees deltas, and skips the body object too.
   */
  publishDelta(origin: EventOrigin, delta: MessageDelta): void {
    const typed = this.byType?.get('message_update');
    const all = this.all !== undefined && this.all.size > 0 ? this.all : undefined;
    if (all === undefined && (typed === undefined || typed.size === 0)) return;
    const seq = ++this.seq;
    const time = Date.now();
    const { agentId, parentId, turn, step } = origin;
    const event: AgentEvent =
      parentId === undefined
        ? { seq, time, agentId, turn, step, type: 'message_update', delta }
        : { seq, time, agentId, parentId, turn, step, type: 'message_update', delta };
    this.dispatch(typed, all, event);
  }

  on<T extends AgentEventType>(type: T, listener: Listener<AgentEventOf<T>>): () => void;
  on(type: '*', listener: Listener): () => void;
  on(type: string, listener: Listener<never>): () => void {
    const fn = listener as Listener;
    if (type === '*') {
      this.all ??= new Set();
      const all = this.all;
      all.add(fn);
      return () => all.delete(fn);
    }
    this.byType ??= new Map();
    const byType = this.byType;
    let set = byType.get(type);
    if (!set) {
      set = new Set();
      byType.set(type, set);
    }
    set.add(fn);
    return () => set.delete(fn);
  }

  private dispatch(typed: Set<Listener> | undefined, all: Set<Listener> | undefined, event: AgentEvent): void {
    if (typed) for (const listener of typed) this.deliver(listener, event);
    if (all) for (const listener of all) this.deliver(listener, event);
  }

  private deliver(listener: Listener, event: AgentEvent): void {
    try {
      listener(event);
    } catch (error) {
      // A listener's bug must not stop the agent that published the event.
      this.onListenerError(error);
    }
  }
}

function reportListenerError(error: unknown): void {
  console.error('[troupe] an event listener threw:', error);
}
