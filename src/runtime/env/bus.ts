import type {
  AgentEvent,
  AgentEventBody,
  AgentEventOf,
  AgentEventType,
  MessageDelta,
  Usage,
} from '../../protocol/index.js';

export type Listener<E = AgentEvent> = (event: E) => void;

/** Where in an agent's run an event happens: its turn and step (an agent's machine context is one). */
export interface Place {
  readonly turn: number;
  readonly step: number;
}

/** Where an event comes from, and where it stands when the publisher gives no place; the bus adds `seq` and `time`. */
export interface EventOrigin extends Place {
  agentId: string;
  parentId?: string;
  /** Which of its events report what was published before (a resumed agent replaying its journal). */
  replayed?(body: AgentEventBody): boolean;
}

/** How far `on(...)` listens: the agent's own events (default), or those of every agent below it as well. */
export interface ListenOptions {
  subtree?: boolean;
}

/** The listeners of one scope: every agent's events (the bus's own), or one agent's. */
class Listeners {
  byType?: Map<string, Set<Listener>>;
  all?: Set<Listener>;
  /** One agent's journal (its session's recorder): hears the agent's events before anybody else does. */
  journal?: Listeners;

  add(type: string, listener: Listener): () => boolean {
    if (type === '*') {
      this.all ??= new Set();
      const all = this.all;
      all.add(listener);
      return () => all.delete(listener);
    }
    this.byType ??= new Map();
    let set = this.byType.get(type);
    if (!set) {
      set = new Set();
      this.byType.set(type, set);
    }
    const typed = set;
    typed.add(listener);
    return () => typed.delete(listener);
  }

  get empty(): boolean {
    if (this.journal !== undefined && !this.journal.empty) return false;
    if (this.all !== undefined && this.all.size > 0) return false;
    if (this.byType) for (const set of this.byType.values()) if (set.size > 0) return false;
    return true;
  }
}

/**
 * One bus per system. XState's `emit` reaches only listeners on the emitting actor, never its parent, so machines
 * and workers publish here and one listener on the root follows the whole tree. An event is built only when
 * somebody listens to its type, which keeps the hot paths (deltas) nearly free when nobody does.
 *
 * A listener hears every agent, or one agent only (`agentId`): those are kept by agent, so a swarm of a thousand
 * agents that each listen to their own events costs one lookup per event, not a thousand filters.
 */
export class EventBus {
  private seq = 0;
  /** Listeners of every agent's events; their sets are made on the first listener of each kind. */
  private readonly global = new Listeners();
  /** Listeners of one agent's events, by agent id: made with the first. */
  private byAgent?: Map<string, Listeners>;
  /** Listeners of each type (and of all, `'*'`) in every scope, for `wants`. */
  private readonly counts = new Map<string, number>();
  /**
   * The supervision tree's token accounts, told each model answer's usage directly: as a listener of `usage` they
   * made every agent of the tree build and publish an event per answer that nobody else may want.
   */
  countUsage?: (agentId: string, usage: Usage) => void;

  constructor(private readonly onListenerError: (error: unknown) => void = reportListenerError) {}

  /** A resumed session's events continue its journal's numbering. */
  continueAt(seq: number): void {
    if (seq > this.seq) this.seq = seq;
  }

  wants(type: AgentEventType): boolean {
    return (this.counts.get('*') ?? 0) > 0 || (this.counts.get(type) ?? 0) > 0;
  }

  publish(origin: EventOrigin, body: AgentEventBody, at?: Place): AgentEvent | undefined {
    // Most events of a run have no listener at all (step_start, turn_end, ...): two lookups say so.
    if (!this.wants(body.type)) return undefined;
    const typed = this.global.byType?.get(body.type);
    const all = this.global.all !== undefined && this.global.all.size > 0 ? this.global.all : undefined;
    const own = this.byAgent?.get(origin.agentId);
    // One agent's listeners want only some types (a session's recorder, five of them): the rest are not built.
    const ownTyped = own?.byType?.get(body.type);
    const ownAll = own?.all !== undefined && own.all.size > 0 ? own.all : undefined;
    const journal = own?.journal?.byType?.get(body.type);
    const journaled = journal !== undefined && journal.size > 0;
    const mine = ownAll !== undefined || (ownTyped !== undefined && ownTyped.size > 0) || journaled;
    if (all === undefined && (typed === undefined || typed.size === 0) && !mine) return undefined;
    // Built as one literal with the body spread last: the origin is usually the agent's runtime object, so it is
    // never spread (that would copy the runtime into every event), and on this V8 `{ ...body, more }` or adding
    // fields after a spread take a slow path (~1 µs or worse per event, the whole cost of a streamed delta).
    const seq = ++this.seq;
    const time = Date.now();
    const { agentId, parentId } = origin;
    const { turn, step } = at ?? origin;
    const event = (
      parentId === undefined
        ? { seq, time, agentId, turn, step, ...body }
        : { seq, time, agentId, parentId, turn, step, ...body }
    ) as AgentEvent;
    if (origin.replayed?.(body)) event.replayed = true;
    // The journal first: a fact is recorded (and, where a caller counts on it, stored) before any listener can
    // act on it, exit included.
    if (journaled) this.dispatch(journal, undefined, event);
    this.dispatch(typed, all, event);
    if (mine) this.dispatch(ownTyped, ownAll, event);
    return event;
  }

  /**
   * `message_update`, published once per streamed delta: the same event as `publish` makes (same fields, same
   * order), written out. The spread in `publish` sees every kind of body, so V8 gives up on it and copies through
   * its generic path; this site only ever sees deltas, and skips the body object too.
   */
  publishDelta(origin: EventOrigin, delta: MessageDelta, at?: Place): void {
    const typed = this.global.byType?.get('message_update');
    const all = this.global.all !== undefined && this.global.all.size > 0 ? this.global.all : undefined;
    const own = this.byAgent?.get(origin.agentId);
    const ownTyped = own?.byType?.get('message_update');
    const ownAll = own?.all !== undefined && own.all.size > 0 ? own.all : undefined;
    const mine = ownAll !== undefined || (ownTyped !== undefined && ownTyped.size > 0);
    if (all === undefined && (typed === undefined || typed.size === 0) && !mine) return;
    const seq = ++this.seq;
    const time = Date.now();
    const { agentId, parentId } = origin;
    const { turn, step } = at ?? origin;
    const event: AgentEvent =
      parentId === undefined
        ? { seq, time, agentId, turn, step, type: 'message_update', delta }
        : { seq, time, agentId, parentId, turn, step, type: 'message_update', delta };
    this.dispatch(typed, all, event);
    if (mine) this.dispatch(ownTyped, ownAll, event);
  }

  /**
   * Listens to one type of event (or all, `'*'`) of every agent, or of one agent only when `agentId` is given.
   * One agent's listeners hear its events after the bus-wide ones (the runtime's own bookkeeping listens
   * bus-wide, and is up to date when a caller's listener acts on an event).
   */
  on<T extends AgentEventType>(type: T, listener: Listener<AgentEventOf<T>>, agentId?: string): () => void;
  on(type: '*', listener: Listener, agentId?: string): () => void;
  on(type: string, listener: Listener<never>, agentId?: string): () => void {
    return this.listen(type, listener as Listener, agentId, false);
  }

  /**
   * Listens to one type of one agent's events as its journal: before the bus-wide listeners and the agent's own,
   * so that what a listener hears of is already recorded. Not for `'*'` or deltas (a journal keeps neither).
   */
  journal<T extends AgentEventType>(type: T, listener: Listener<AgentEventOf<T>>, agentId: string): () => void {
    return this.listen(type, listener as Listener, agentId, true);
  }

  private listen(type: string, fn: Listener, agentId: string | undefined, journal: boolean): () => void {
    let scope = this.global;
    let own: Listeners | undefined;
    if (agentId !== undefined) {
      this.byAgent ??= new Map();
      own = this.byAgent.get(agentId) ?? new Listeners();
      this.byAgent.set(agentId, own);
      scope = own;
      if (journal) {
        own.journal ??= new Listeners();
        scope = own.journal;
      }
    }
    const remove = scope.add(type, fn);
    this.counts.set(type, (this.counts.get(type) ?? 0) + 1);
    let removed = false;
    return () => {
      if (removed || !remove()) return;
      removed = true;
      this.counts.set(type, (this.counts.get(type) ?? 1) - 1);
      // An agent that stops listening leaves no entry behind (a long-lived tree sees many short-lived agents).
      if (own !== undefined && agentId !== undefined && own.empty && this.byAgent?.get(agentId) === own) {
        this.byAgent.delete(agentId);
      }
    };
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

/**
 * Whether an event comes from `rootId` or an agent below it, walking up from the event's agent by `parentOf`
 * (live agents' parents; the event's own `parentId` is the first step, so it holds for an agent already gone).
 */
export function withinSubtree(
  rootId: string,
  event: AgentEvent,
  parentOf: (agentId: string) => string | undefined,
): boolean {
  if (event.agentId === rootId) return true;
  for (let id = event.parentId; id !== undefined; id = parentOf(id)) if (id === rootId) return true;
  return false;
}

function reportListenerError(error: unknown): void {
  console.error('[troupe] an event listener threw:', error);
}
