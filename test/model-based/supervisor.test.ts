/**
 * Model-based tests of the swarm batch machine (the supervisor's queue, cap and join policy), the same way as the
 * agent's: xstate/graph explores it with an abstract serializeState, one path per abstract transition is replayed
 * on a real batch actor whose pools are fakes (they record what they are told), and the invariants are checked:
 *
 * - every task is settled exactly once: by its pool (as its task actor would report it) or by the batch itself
 *   when it was dropped before it started; a dropped task never starts, a task never starts twice;
 * - never more tasks running than the batch's concurrency, and none started once the join is decided;
 * - a background task dropped by the batch reaches the owner exactly once (a started one is its task actor's to
 *   notify), a foreground one never;
 * - once the join is decided (or the batch cancelled), every task still running is told to stop, with the reason;
 * - the supervisor hears BATCH.SETTLED exactly once, when every task has settled, and the batch ends only after.
 *
 * The model: which started tasks have settled is the pools' knowledge, not the batch's (it counts them); the model
 * lets them settle in the order they started, so the events offered are the ones real pools could send.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, type InspectionEvent, type SnapshotFrom } from 'xstate';
import { type BatchContext, type BatchEvent, type BatchInput, batchMachine } from '../../machines/supervisor/index.js';
import { stateIds, transitionKeys, transitionList } from '../../src/inspect/export.js';
import type { BatchSpec, TaskSpec } from '../../src/protocol/index.js';
import { coveringPaths } from './paths.js';

type Snapshot = SnapshotFrom<typeof batchMachine>;
const contextOf = (snapshot: Snapshot): BatchContext => snapshot.context as unknown as BatchContext;

const tasks = (n: number): TaskSpec[] =>
  Array.from({ length: n }, (_, i) => ({ taskId: `t${i}`, agentId: `a${i}`, prompt: `p${i}`, expectsOutput: false }));

/** Shapes of batch: the default join in the foreground, first(1) and quorum(3) of 3 in the background, quorum(2). */
const CASES: Array<{ name: string; batch: BatchSpec }> = [
  { name: 'all, foreground, cap 2', batch: { batchId: 'B', background: false, concurrency: 2, tasks: tasks(3) } },
  {
    name: 'first(1), background, cap 1',
    batch: { batchId: 'B', background: true, concurrency: 1, tasks: tasks(3), join: { kind: 'first', k: 1 } },
  },
  {
    name: 'quorum(3), background, cap 1',
    batch: { batchId: 'B', background: true, concurrency: 1, tasks: tasks(3), join: { kind: 'quorum', k: 3 } },
  },
  {
    name: 'quorum(2), foreground, cap 3',
    batch: { batchId: 'B', background: false, concurrency: 3, tasks: tasks(3), join: { kind: 'quorum', k: 2 } },
  },
];
const settings = { ownerId: 'owner', notifyOwner: true, maxRestarts: 1, restartDelayMs: 1000 };

/** Stands for "the oldest task running now" in the model's events; the replay names the real one. */
const OLDEST = 'oldest';

/** How the tasks left are told to end: `joined` cancels them, `cancelled` (CANCEL_BATCH) interrupts them. */
const stoppingOf = (snapshot: Snapshot) =>
  snapshot.matches('joined') ? 'cancelled' : snapshot.matches('cancelled') ? 'interrupted' : undefined;

function eventsFor(snapshot: Snapshot, queue: TaskSpec[]): BatchEvent[] {
  if (snapshot.status !== 'active') return [];
  const c = contextOf(snapshot);
  // The supervisor sends a batch its tasks right after spawning it, before anything else can reach it.
  if (c.next === 0 && c.tasks.length === 0 && c.ended === 0) return [{ type: 'QUEUE', tasks: queue }];
  const events: BatchEvent[] = [];
  if (c.running > 0) {
    // A running task settles by itself, or cancelled (after the batch told its pool so). The batch counts
    // settlements by status (which task it is only matters to its pool), so the model lets them settle in the
    // order they started.
    events.push({ type: 'TASK.SETTLED', taskId: OLDEST, status: 'completed' });
    events.push({ type: 'TASK.SETTLED', taskId: OLDEST, status: 'failed' });
    const stopping = stoppingOf(snapshot);
    if (stopping) events.push({ type: 'TASK.SETTLED', taskId: OLDEST, status: stopping });
  }
  for (const task of c.tasks) events.push({ type: 'CANCEL', taskId: task.taskId });
  events.push({ type: 'CANCEL_BATCH' });
  // A pool ends once it is sealed and every task it was given has settled (all these tasks share pool 0).
  if (c.pools.includes(0) && !c.unsealed.includes(0) && c.running === 0) {
    events.push({ type: 'xstate.done.actor.pool.0' });
  }
  return events;
}

function serializeState(snapshot: Snapshot): string {
  const c = contextOf(snapshot);
  return JSON.stringify({
    v: snapshot.value,
    st: snapshot.status,
    queued: c.tasks.length,
    next: c.next,
    running: c.running,
    ended: c.ended,
    completed: c.completed,
    cancelled: c.cancelled,
    pools: c.pools,
    unsealed: c.unsealed,
  });
}

class Violation extends Error {}

/** What the fake pools and the batch's effects saw in one replay. */
class Recorder {
  started = new Map<string, number>();
  running = new Set<string>();
  /** Tasks told to stop (CANCEL_ALL or CANCEL of their index), with the reason. */
  stopped = new Map<string, string>();
  settled = new Map<string, number>();
  notified = new Map<string, number>();
  /** Started tasks by their index, wherever they were started (a CANCEL names the index). */
  indexes = new Map<number, string>();
  batchSettled = 0;
  violations: string[] = [];
  constructor(readonly batch: BatchSpec) {}

  settle(taskId: string): void {
    this.settled.set(taskId, (this.settled.get(taskId) ?? 0) + 1);
    this.running.delete(taskId);
  }

  /** A task started, through its pools or straight in its pool of depth 0. */
  start({ task, index }: { task: TaskSpec; index: number }): void {
    const { taskId } = task;
    if (this.settled.has(taskId)) this.violations.push(`${taskId} started after it was settled`);
    if (this.started.has(taskId)) this.violations.push(`${taskId} started twice`);
    if (index !== this.batch.tasks.findIndex((t) => t.taskId === taskId)) {
      this.violations.push(`${taskId} started as index ${index}`);
    }
    this.started.set(taskId, 1);
    this.running.add(taskId);
    this.indexes.set(index, taskId);
    if (this.running.size > this.batch.concurrency) {
      this.violations.push(`${this.running.size} tasks running, over the cap of ${this.batch.concurrency}`);
    }
  }
}
let current = new Recorder(CASES[0]?.batch as BatchSpec);

type PoolCommand =
  | { type: 'START'; task: TaskSpec; index: number }
  | { type: 'FILL'; starts: Array<{ type: 'START'; task: TaskSpec; index: number }> }
  | { type: 'CANCEL'; index: number; status: string }
  | { type: 'CANCEL_ALL'; status: string }
  | { type: 'SEAL' };

const testMachine = batchMachine.provide({
  actors: {
    pool: fromCallback<PoolCommand>(({ receive }) => {
      const rec = current;
      receive((command) => {
        if (command.type === 'START') rec.start(command);
        else if (command.type === 'FILL') for (const start of command.starts) rec.start(start);
        else if (command.type === 'CANCEL_ALL') {
          for (const taskId of rec.running) rec.stopped.set(taskId, command.status);
        } else if (command.type === 'CANCEL') {
          const taskId = rec.indexes.get(command.index);
          if (taskId && rec.running.has(taskId)) rec.stopped.set(taskId, command.status);
        }
      });
    }) as never,
  },
  actions: {
    startInLeaf: (_, params) => current.start(params.event),
    settleTask: (_, params) => {
      if (current.started.has(params.taskId)) current.violations.push(`${params.taskId} dropped after it started`);
      current.settle(params.taskId);
    },
    notifyOwner: (_, params) => {
      const taskId = params.inputId.replace(/^notify\./, '');
      current.notified.set(taskId, (current.notified.get(taskId) ?? 0) + 1);
    },
    reportSettled: () => {
      current.batchSettled++;
    },
  },
});
const keys = transitionKeys(testMachine);

function shapeOf({ tasks: _tasks, ...shape }: BatchSpec): Omit<BatchSpec, 'tasks'> {
  return shape;
}

function replay(batch: BatchSpec) {
  const rec = new Recorder(batch);
  current = rec;
  const taken = new Set<string>();
  const entered = new Set<string>();
  const actor = createActor(testMachine, {
    input: { ...settings, batch: { ...shapeOf(batch), size: batch.tasks.length } } satisfies BatchInput,
    inspect: (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep' || event.actorRef !== actor) return;
      for (const t of event._transitions) {
        const key = keys.get(t);
        if (key) taken.add(key);
      }
      for (const node of (event.snapshot as unknown as { _nodes: Array<{ id: string }> })._nodes) entered.add(node.id);
    },
  });
  actor.subscribe({ error: (error) => rec.violations.push(`actor error: ${String(error)}`) });
  actor.start();
  const check = () => {
    const snapshot = actor.getSnapshot();
    const stopping = stoppingOf(snapshot);
    if (stopping) {
      for (const taskId of rec.running) {
        if (rec.stopped.get(taskId) !== stopping) rec.violations.push(`${taskId} still running, not told`);
      }
    }
    const allSettled = batch.tasks.every((t) => rec.settled.has(t.taskId));
    if (rec.batchSettled > 1) rec.violations.push('BATCH.SETTLED reported twice');
    if (rec.batchSettled === 1 && !allSettled) rec.violations.push('BATCH.SETTLED before every task settled');
    if (snapshot.status === 'done' && !allSettled) rec.violations.push('released before every task settled');
    if (rec.violations.length) throw new Violation(rec.violations.join('\n'));
  };
  check();
  return {
    actor,
    taken,
    entered,
    send(event: BatchEvent) {
      if (event.type === 'TASK.SETTLED') {
        // What a real pool reports: only for a task it runs, once; here the oldest one.
        const [oldest] = rec.running;
        if (!oldest) throw new Error('the model offered a settle with no task running');
        rec.settle(oldest);
        actor.send({ ...event, taskId: oldest });
      } else actor.send(event);
      check();
    },
    finish() {
      for (const task of batch.tasks) {
        const settled = rec.settled.get(task.taskId) ?? 0;
        if (settled > 1) rec.violations.push(`${task.taskId} settled ${settled} times`);
        const dropped = settled === 1 && !rec.started.has(task.taskId);
        const notified = rec.notified.get(task.taskId) ?? 0;
        const owed = batch.background && dropped ? 1 : 0;
        if (notified !== owed) rec.violations.push(`${task.taskId} notified ${notified} times, expected ${owed}`);
      }
      if (contextOf(actor.getSnapshot()).ended !== rec.settled.size) rec.violations.push('ended ≠ tasks settled');
      actor.stop();
      if (rec.violations.length) throw new Violation(rec.violations.join('\n'));
    },
  };
}

describe('model-based: the batch machine (queue, cap, join policy) with fake pools', () => {
  const taken = new Set<string>();
  const entered = new Set<string>();

  for (const { name, batch } of CASES) {
    it(`${name}: a path through every abstract transition, replayed with the invariants holding`, {
      timeout: 180_000,
    }, () => {
      const { states, edges, paths } = coveringPaths<Snapshot, BatchEvent>(batchMachine, {
        input: { ...settings, batch: { ...shapeOf(batch), size: batch.tasks.length } },
        events: (snapshot) => eventsFor(snapshot, batch.tasks),
        serializeState,
      });
      for (const path of paths) {
        const run = replay(batch);
        try {
          for (const step of path.steps.slice(1)) {
            run.send(step.event);
            expect(run.actor.getSnapshot().value).toEqual(step.state.value);
            expect(contextOf(run.actor.getSnapshot())).toMatchObject({
              next: contextOf(step.state).next,
              ended: contextOf(step.state).ended,
              completed: contextOf(step.state).completed,
            });
          }
          run.finish();
        } catch (error) {
          const events = path.steps.slice(1).map((s) => JSON.stringify(s.event).slice(0, 80));
          throw new Error(`${(error as Error).message}\npath:\n  ${events.join('\n  ')}`);
        }
        for (const key of run.taken) taken.add(key);
        for (const id of run.entered) entered.add(id);
      }
      console.log(`batch machine (${name}): ${states} abstract states, ${edges} transitions, ${paths.length} paths`);
      expect(paths.length).toBeGreaterThan(10);
    });
  }

  it('the shapes together enter every state and take every transition of the batch machine', () => {
    // The verdicts on failures and escalation are strategies.test.ts's to cover (it checks they all are).
    const strategic = (source: string, event?: string) => event === 'TASK.FAILED' || source === 'batch.escalated';
    const missingStates = stateIds(batchMachine).filter((id) => !entered.has(id) && !strategic(id));
    const missingTransitions = transitionList(batchMachine)
      .filter((t) => !strategic(t.source, t.event))
      .map((t) => t.key)
      .filter((key) => !taken.has(key));
    expect(missingStates).toEqual([]);
    expect(missingTransitions).toEqual([]);
  });
});
