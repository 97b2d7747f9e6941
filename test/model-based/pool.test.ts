/**
 * Property tests of the pool machine as the runtime composes it: a pool of depth POOL_DEPTH over pools of depth 0
 * over stand-in task actors, all real actors. Random runs of what a batch may send it (a first FILL of tasks in index
 * order with gaps, or none; then STARTs in index order with gaps, to the pool or, once a pool of depth 0 holds a
 * task, straight to that one, found by its system id; CANCEL, CANCEL_ALL, SEAL) and of tasks ending are checked
 * against a model after every step:
 *
 * - every task given (by FILL or START) spawns exactly one task actor, in the slot and child pool its index names,
 *   with its task;
 * - no actor ever holds more than POOL_SIZE children;
 * - a CANCEL reaches the task of its index while that task is alive, and nothing else; CANCEL_ALL reaches every
 *   live task once;
 * - a child pool is alive exactly while it holds a live task or may still be given one; the pool ends exactly when
 *   it is sealed and every task it was given has ended.
 */
import { it } from '@fast-check/vitest';
import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { type AnyActorRef, createActor, createMachine } from 'xstate';
import {
  leafPoolOf,
  leafPoolSystemId,
  POOL_DEPTH,
  POOL_SIZE,
  POOL_TASKS,
  poolMachine,
} from '../../machines/supervisor/index.js';
import type { TaskSpec } from '../../src/protocol/index.js';

const RUNS = Number(process.env.TROUPE_FUZZ_RUNS ?? 40);

/** What the stand-in tasks saw in one run, by task index. */
interface Seen {
  started: Map<number, number>;
  cancels: Map<number, number>;
  refs: Map<number, AnyActorRef>;
}
let seen: Seen;

/** A task actor that records its start and every CANCEL it gets, and ends when told to FINISH. */
const fakeTask = createMachine({
  types: {} as { input: { task: TaskSpec } },
  context: ({ input }) => ({ index: Number(input.task.taskId.slice(1)) }),
  entry: ({ context, self }) => {
    seen.started.set(context.index, (seen.started.get(context.index) ?? 0) + 1);
    seen.refs.set(context.index, self);
  },
  initial: 'running',
  states: {
    running: {
      on: {
        CANCEL: {
          actions: ({ context }) => seen.cancels.set(context.index, (seen.cancels.get(context.index) ?? 0) + 1),
        },
        FINISH: 'finished',
      },
    },
    finished: { type: 'final' },
  },
});

const leaf = poolMachine.provide({ actors: { task: fakeTask } });
const composed = (depth: number): typeof poolMachine =>
  depth === 0 ? leaf : poolMachine.provide({ actors: { task: fakeTask, pool: composed(depth - 1) } });

type Step =
  | { kind: 'start'; gap: number; direct: boolean }
  | { kind: 'finish'; pick: number }
  | { kind: 'cancel'; pick: number }
  | { kind: 'cancelAll' }
  | { kind: 'seal' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('start' as const), gap: fc.nat({ max: 20 }), direct: fc.boolean() }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancelAll' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('seal' as const) }) },
);

const task = (index: number): TaskSpec => ({
  taskId: `t${index}`,
  agentId: `a${index}`,
  prompt: `p${index}`,
  expectsOutput: false,
});
const childOf = (index: number): number => Math.floor(index / POOL_SIZE) % POOL_SIZE;

function childrenOf(ref: AnyActorRef): Record<string, AnyActorRef> {
  return (ref.getSnapshot() as { children: Record<string, AnyActorRef> }).children;
}

/** Every actor under `ref` holds at most POOL_SIZE children. */
function widest(ref: AnyActorRef): number {
  const children = Object.values(childrenOf(ref));
  return Math.max(children.length, ...children.map((child) => ('children' in child.getSnapshot() ? widest(child) : 0)));
}

describe('model-based: the pool machine (depth 1 over depth 0 over tasks)', () => {
  it('has POOL_DEPTH 1 here: two levels of pools', () => {
    expect(POOL_DEPTH).toBe(1);
    expect(POOL_TASKS).toBe(POOL_SIZE * POOL_SIZE);
  });

  const fill = fc.array(fc.nat({ max: 20 }), { maxLength: 2 * POOL_SIZE + 4 });
  it.prop([fill, fc.array(step, { maxLength: 80 }), fc.nat({ max: POOL_TASKS - 1 })], { numRuns: RUNS })(
    'spawns each task once in its place, reaches only live tasks, and ends exactly when sealed and empty',
    (fillGaps, steps, first) => {
      seen = { started: new Map(), cancels: new Map(), refs: new Map() };
      const settings = { ownerId: 'o', notifyOwner: false, maxRestarts: 0, restartDelayMs: 0 };
      const pool = createActor(composed(POOL_DEPTH), {
        input: { ...settings, batchId: 'b', background: false, depth: POOL_DEPTH },
      }).start();
      const started: number[] = [];
      const live = new Set<number>();
      const cancels = new Map<number, number>();
      let sealed = false;
      let next = first;
      // What its batch sends a pool it has just spawned: the tasks of that fill, at once.
      const starts = [];
      for (const gap of fillGaps) {
        const index = next + gap;
        if (index >= POOL_TASKS) break;
        next = index + 1;
        starts.push({ type: 'START', task: task(index), index } as const);
        started.push(index);
        live.add(index);
      }
      if (starts.length) pool.send({ type: 'FILL', starts });
      for (const s of [{ kind: 'filled' } as const, ...steps]) {
        if (s.kind === 'start' && !sealed) {
          const index = next + s.gap;
          if (index >= POOL_TASKS) continue;
          next = index + 1;
          const start = { type: 'START', task: task(index), index } as const;
          // What the batch does: straight to the pool of depth 0 once it was given a task before.
          if (s.direct && started.some((i) => leafPoolOf(i) === leafPoolOf(index))) {
            const leaf = pool.system.get(leafPoolSystemId('b', leafPoolOf(index)));
            expect(leaf).toBeDefined();
            leaf?.send(start);
          } else pool.send(start);
          started.push(index);
          live.add(index);
        } else if (s.kind === 'finish' && live.size) {
          const index = [...live][s.pick % live.size] as number;
          seen.refs.get(index)?.send({ type: 'FINISH' });
          live.delete(index);
        } else if (s.kind === 'cancel' && started.length) {
          const index = started[s.pick % started.length] as number;
          pool.send({ type: 'CANCEL', index, status: 'cancelled', text: 'x' });
          if (live.has(index)) cancels.set(index, (cancels.get(index) ?? 0) + 1);
        } else if (s.kind === 'cancelAll') {
          pool.send({ type: 'CANCEL_ALL', status: 'interrupted', text: 'x' });
          for (const index of live) cancels.set(index, (cancels.get(index) ?? 0) + 1);
        } else if (s.kind === 'seal') {
          pool.send({ type: 'SEAL' });
          sealed = true;
        }

        expect([...seen.started.keys()].sort((a, b) => a - b)).toEqual([...started].sort((a, b) => a - b));
        expect([...seen.started.values()].every((n) => n === 1)).toBe(true);
        expect(Object.fromEntries(seen.cancels)).toEqual(Object.fromEntries(cancels));
        const done = sealed && live.size === 0;
        expect(pool.getSnapshot().status).toBe(done ? 'done' : 'active');
        if (done) break;
        expect(widest(pool)).toBeLessThanOrEqual(POOL_SIZE);
        // A child pool lives while it holds a live task, or is the one the next START may still go to.
        const last = started.at(-1);
        const filling = !sealed && last !== undefined && (last + 1) % POOL_SIZE !== 0 ? [childOf(last)] : [];
        const expected = new Set([...[...live].map(childOf), ...filling]);
        expect(Object.keys(childrenOf(pool)).sort()).toEqual([...expected].map((child) => `pool.${child}`).sort());
        // Each live task is in the slot its index names, under the child pool it names.
        for (const index of live) {
          const child = childrenOf(pool)[`pool.${childOf(index)}`] as AnyActorRef;
          expect(childrenOf(child)[`task.${index % POOL_SIZE}`]).toBe(seen.refs.get(index));
        }
      }
      pool.stop();
    },
  );
});
