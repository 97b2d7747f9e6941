import { describe, expect, it } from 'vitest';
import { type AnyActorRef, createActor, createMachine, type InspectionEvent } from 'xstate';
import { REDACTED, sanitizeInspection, summarize } from '../../src/inspect/sanitize.js';

describe('summarize', () => {
  it('cuts long strings, long arrays, wide objects and deep values, and says how much it left out', () => {
    const deep = { a: { b: { c: { d: 1 } } } };
    const out = summarize(
      {
        text: 'x'.repeat(50),
        list: Array.from({ length: 7 }, (_, i) => i),
        wide: { k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6 },
        deep,
      },
      { maxStringLength: 10, maxArrayLength: 3, maxKeys: 4, maxDepth: 3, secrets: [] },
    ) as Record<string, unknown>;
    expect(out.text).toBe(`${'x'.repeat(10)}… (+40 chars)`);
    expect(out.list).toEqual([0, 1, 2, '… 4 more']);
    expect(out.wide).toEqual({ k1: 1, k2: 2, k3: 3, k4: 4, '…': '2 more keys' });
    expect(out.deep).toEqual({ a: { b: '[object]' } });
  });

  it('redacts secret-looking keys, key patterns and the given secrets, wherever they are', () => {
    const out = summarize(
      {
        apiKey: 'abc',
        headers: { Authorization: 'Bearer abcdefghijkl' },
        note: 'my key is sk-ant-api03-abcdefghijklmnop, keep it',
        auth: 'Bearer abcdefghijklmnopqrstuvwxyz',
        custom: 'hunter2hunter2 is the password',
        nothing: null,
      },
      { secrets: ['hunter2hunter2'] },
    );
    expect(out).toEqual({
      apiKey: REDACTED,
      headers: { Authorization: REDACTED },
      note: `my key is ${REDACTED}, keep it`,
      auth: REDACTED,
      custom: `${REDACTED} is the password`,
      nothing: null,
    });
  });

  it('turns what JSON cannot hold into short descriptions', () => {
    const circular: Record<string, unknown> = { name: 'loop' };
    circular.self = circular;
    const out = summarize(
      {
        circular,
        when: new Date(0),
        error: new TypeError('boom'),
        bytes: new Uint8Array(16),
        map: new Map([[1, 2]]),
        set: new Set([1]),
        big: 10n,
        fn: function named() {},
        arrow: () => {},
        symbol: Symbol('s'),
        withJson: { toJSON: () => ({ plain: true }) },
        flag: true,
        none: undefined,
      },
      { secrets: [] },
    );
    expect(out).toEqual({
      circular: { name: 'loop', self: '[circular]' },
      when: '1970-01-01T00:00:00.000Z',
      error: { name: 'TypeError', message: 'boom' },
      bytes: '[16 bytes]',
      map: '[Map(1)]',
      set: '[Set(1)]',
      big: '10',
      fn: '[function named]',
      arrow: '[function arrow]',
      symbol: 'Symbol(s)',
      withJson: { plain: true },
      flag: true,
      none: undefined,
    });
  });

  it('lets a custom summary take over where it answers', () => {
    const out = summarize(
      { history: [1, 2, 3], keep: 'yes' },
      {
        summarize: (value, path) => (path.at(-1) === 'history' ? `${(value as unknown[]).length} messages` : undefined),
      },
    );
    expect(out).toEqual({ history: '3 messages', keep: 'yes' });
  });
});

describe('sanitizeInspection', () => {
  const machine = createMachine({
    id: 'm',
    context: { secret: 'sk-live-abcdefghijklmnopqrstu', big: 'y'.repeat(1000) },
    initial: 'a',
    states: { a: { on: { GO: 'b' } }, b: {} },
  });

  function run(options?: Parameters<typeof sanitizeInspection>[1]) {
    const seen: InspectionEvent[] = [];
    const actor = createActor(machine, { inspect: sanitizeInspection((e) => seen.push(e), options) });
    actor.start();
    actor.send({ type: 'GO', payload: 'x'.repeat(1000) } as never);
    actor.stop();
    return seen;
  }

  it('hands the observer sanitised snapshots, events and actors', () => {
    const seen = run({ maxStringLength: 20 });
    const types = new Set(seen.map((e) => e.type));
    expect(types).toEqual(new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot']));
    const text = JSON.stringify(seen.map((e) => ({ ...e, actorRef: undefined, sourceRef: undefined })));
    expect(text).not.toContain('sk-live-');
    expect(text).not.toContain('y'.repeat(21));
    expect(text).not.toContain('x'.repeat(21));
    const actorEvent = seen.find((e) => e.type === '@xstate.actor');
    if (!actorEvent) throw new Error('no @xstate.actor event');
    const snapshot = (actorEvent.actorRef as AnyActorRef).getSnapshot() as { context: { big: string } };
    expect(snapshot.context.big).toMatch(/… \(\+980 chars\)$/);
    // Everything else about the actor is the real one.
    expect(actorEvent.actorRef.sessionId).toMatch(/^x:/);
    const last = seen.filter((e) => e.type === '@xstate.snapshot').at(-1) as unknown as { snapshot: { value: string } };
    expect(last.snapshot.value).toBe('b');
  });

  it('forwards microsteps and actions only when asked, sanitised too', () => {
    const seen = run({ includeMicrosteps: true, maxStringLength: 20 });
    expect(seen.some((e) => e.type === '@xstate.microstep')).toBe(true);
    const text = JSON.stringify(
      seen.filter((e) => e.type === '@xstate.microstep').map((e) => ({ ...e, actorRef: undefined })),
    );
    expect(text).not.toContain('sk-live-');
  });

  it('accepts an observer object, and passes errors and completion on', () => {
    const calls: string[] = [];
    const observer = sanitizeInspection({
      next: () => calls.push('next'),
      error: () => calls.push('error'),
      complete: () => calls.push('complete'),
    });
    createActor(machine, { inspect: observer }).start();
    observer.error?.(new Error('x'));
    observer.complete?.();
    expect(calls).toContain('next');
    expect(calls.slice(-2)).toEqual(['error', 'complete']);
    const fn = sanitizeInspection(() => {});
    expect(() => fn.error?.(new Error('x'))).not.toThrow();
    expect(() => fn.complete?.()).not.toThrow();
  });
});
