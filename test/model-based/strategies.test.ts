/**
 * Model-based tests of the supervision strategies, over the batch machine (the verdict on TASK.FAILED, the
 * intensity window, escalation) and the task machine (failed, restarting, restarted by a sibling, resumed). As in
 * supervisor.test.ts, xstate/graph explores each machine with an abstract serializeState, one path per abstract
 * transition is replayed on a real actor (fake pools and agents record what they are told), and invariants are
 * checked after every event:
 *
 * - batch: a verdict goes only to a task started and not settled, and exactly one per fresh failure (none for a
 *   stale one); the siblings restarted with a failed task are exactly the ones its strategy names; never more
 *   than `maxRestarts` restarts within `withinMs`; an escalation is reported once, and every task still running is
 *   told to stop; BATCH.SETTLED once, after every task settled.
 * - task: it settles exactly once; its agent is stopped before another is spawned; each restart is announced with
 *   the attempt the next run prepares; nothing is prepared, reported or announced after it settled.
 *
 * The batch model: every task starts at once (concurrency = size) and tasks settle or fail oldest first, so the
 * events offered name the task real pools could. The model's clock moves with the restarts and settles so that
 * the intensity window both fills and slides.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, type InspectionEvent, type SnapshotFrom } from 'xstate';
import {
  type BatchContext,
  type BatchEvent,
  batchMachine,
  type TaskContext,
  type TaskEvent,
  taskMachine,
} from '../../machines/supervisor/index.js';
import { stateIds, transitionKeys, transitionList } from '../../src/inspect/export.js';
import type { BatchSpec, FailureClass, StrategyOptions, TaskSpec } from '../../src/protocol/index.js';
import { coveringPaths } from './paths.js';

type BatchSnapshot = SnapshotFrom<typeof batchMachine>;
const contextOf = (snapshot: BatchSnapshot): BatchContext => snapshot.context as unknown as BatchContext;

const tasks = (n: number): TaskSpec[] =>
  Array.from({ length: n }, (_, i) => ({ taskId: `t${i}`, agentId: `a${i}`, prompt: `p${i}`, expectsOutput: false }));

const CASES: Array<{ name: string; supervision: StrategyOptions; classes: FailureClass[] }> = [
  {
    name: 'oneForAll, intensity 1 in 100 ms',
    supervision: { strategy: 'oneForAll', intensity: { maxRestarts: 1, withinMs: 100 } },
    classes: ['model', 'budget', 'escalation'],
  },
  {
    name: 'restForOne, a model failure resumes',
    supervision: { strategy: 'restForOne', onFailure: { model: 'resume' } },
    classes: ['model', 'tool'],
  },
  { name: 'oneForOne', supervision: {}, classes: ['model', 'guardrail'] },
];
const SIZE = 3;
const settings = { ownerId: 'owner', notifyOwner: false, maxRestarts: 2, restartDelayMs: 10 };

/** The model's clock: restarts of one task come 40 ms apart, each settle moves it 200 ms on. */
const clockOf = (c: BatchContext) => 1000 + 40 * Math.max(0, ...Object.values(c.attempts)) + 200 * c.ended;

function batchEvents(snapshot: BatchSnapshot, classes: FailureClass[]): BatchEvent[] {
  if (snapshot.status !== 'active') return [];
  const c = contextOf(snapshot);
  if (c.next === 0 && c.tasks.length === 0 && c.ended === 0) return [{ type: 'QUEUE', tasks: tasks(SIZE) }];
  const events: BatchEvent[] = [];
  if (c.running > 0) {
    const taskId = `t${c.ended}`;
    if (snapshot.matches('running')) {
      events.push({ type: 'TASK.SETTLED', taskId, status: 'completed' });
      events.push({ type: 'TASK.SETTLED', taskId, status: 'failed' });
      const attempt = c.attempts[c.ended] ?? 0;
      const at = clockOf(c);
      for (const failure of classes) events.push({ type: 'TASK.FAILED', taskId, attempt, failure, text: 'x', at });
      if (attempt > 0) {
        events.push({ type: 'TASK.FAILED', taskId, attempt: attempt - 1, failure: 'model', text: 'x', at });
      }
      events.push({ type: 'CANCEL_BATCH' });
    } else {
      // Stopping (escalated or cancelled): a task settles as told, or with the failure it had.
      events.push({
        type: 'TASK.SETTLED',
        taskId,
        status: snapshot.matches('cancelled') ? 'interrupted' : 'cancelled',
      });
      events.push({ type: 'TASK.SETTLED', taskId, status: 'failed' });
      events.push({
        type: 'TASK.FAILED',
        taskId,
        attempt: c.attempts[c.ended] ?? 0,
        failure: 'model',
        text: 'x',
        at: 0,
      });
    }
  }
  if (c.pools.includes(0) && !c.unsealed.includes(0) && c.running === 0) {
    events.push({ type: 'xstate.done.actor.pool.0' });
  }
  return events;
}

function batchState(snapshot: BatchSnapshot): string {
  const { tasks: _t, ...c } = contextOf(snapshot);
  return JSON.stringify({ v: snapshot.value, st: snapshot.status, q: _t.length, ...c });
}

class Violation extends Error {}

interface Verdict {
  taskId: string;
  type: string;
  cause?: string;
}

class BatchRecorder {
  running = new Set<string>();
  settled = new Set<string>();
  verdicts: Verdict[] = [];
  stopped = new Set<string>();
  escalations = 0;
  batchSettled = 0;
  violations: string[] = [];
}
let rec = new BatchRecorder();

const testBatch = batchMachine.provide({
  actors: {
    pool: fromCallback<{ type: string; task?: TaskSpec; starts?: Array<{ task: TaskSpec }> }>(({ receive }) => {
      receive((command) => {
        if (command.type === 'START' && command.task) rec.running.add(command.task.taskId);
        for (const start of command.type === 'FILL' ? (command.starts ?? []) : []) rec.running.add(start.task.taskId);
        if (command.type === 'CANCEL_ALL') for (const taskId of rec.running) rec.stopped.add(taskId);
      });
    }) as never,
  },
  actions: {
    startInLeaf: (_, { event }) => {
      rec.running.add(event.task.taskId);
    },
    settleTask: (_, params) => {
      rec.settled.add(params.taskId);
    },
    reportSettled: () => {
      rec.batchSettled++;
    },
    tellTask: (_, { taskId, event }) => {
      if (!rec.running.has(taskId)) rec.violations.push(`${event.type} told to ${taskId}, which is not running`);
      rec.verdicts.push({
        taskId,
        type: event.type,
        ...('cause' in event && event.cause ? { cause: event.cause } : {}),
      });
    },
    reportEscalation: () => {
      rec.escalations++;
    },
  },
});
const batchKeys = transitionKeys(testBatch);

function replayBatch(supervision: StrategyOptions) {
  rec = new BatchRecorder();
  const taken = new Set<string>();
  const entered = new Set<string>();
  const spec: Omit<BatchSpec, 'tasks'> = { batchId: 'B', background: false, concurrency: SIZE, supervision };
  const actor = createActor(testBatch, {
    input: { ...settings, batch: { ...spec, size: SIZE } },
    inspect: (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep' || event.actorRef !== actor) return;
      for (const t of event._transitions) {
        const key = batchKeys.get(t);
        if (key) taken.add(key);
      }
      for (const node of (event.snapshot as unknown as { _nodes: Array<{ id: string }> })._nodes) entered.add(node.id);
    },
  });
  actor.subscribe({ error: (error) => rec.violations.push(`actor error: ${String(error)}`) });
  actor.start();
  /** Restart decisions (a RESTART or RESUME of the failed task itself), with when. */
  const decisions: number[] = [];
  const send = (event: BatchEvent) => {
    const before = actor.getSnapshot();
    const c = contextOf(before);
    const told = rec.verdicts.length;
    const running = [...rec.running].filter((id) => !rec.settled.has(id));
    if (event.type === 'TASK.SETTLED') {
      rec.settled.add(event.taskId);
      rec.running.delete(event.taskId);
    }
    actor.send(event);
    const after = actor.getSnapshot();
    const verdicts = rec.verdicts.slice(told);
    if (event.type === 'TASK.FAILED' && before.matches('running')) {
      const stale = event.attempt < (c.attempts[Number(event.taskId.slice(1))] ?? 0);
      const own = verdicts.filter((v) => v.taskId === event.taskId);
      if (stale && verdicts.length) rec.violations.push('a stale failure got a verdict');
      if (!stale && !after.matches('escalated') && own.length !== 1) {
        rec.violations.push(`${own.length} verdicts for ${event.taskId}`);
      }
      if (own[0]?.type === 'RESTART' || own[0]?.type === 'RESUME') decisions.push(event.at);
      if (own[0]?.type === 'RESTART') {
        const index = Number(event.taskId.slice(1));
        const others = running.filter((id) => id !== event.taskId);
        const expected =
          supervision.strategy === 'oneForAll'
            ? others
            : supervision.strategy === 'restForOne'
              ? others.filter((id) => Number(id.slice(1)) > index)
              : [];
        const siblings = verdicts.filter((v) => v.cause === event.taskId).map((v) => v.taskId);
        if (JSON.stringify(siblings.sort()) !== JSON.stringify(expected.sort())) {
          rec.violations.push(`restarted ${siblings} with ${event.taskId}, the strategy names ${expected}`);
        }
      }
      const intensity = supervision.intensity;
      if (intensity) {
        for (const at of decisions) {
          const within = decisions.filter((d) => d > at - intensity.withinMs && d <= at).length;
          if (within > intensity.maxRestarts) rec.violations.push(`${within} restarts within ${intensity.withinMs} ms`);
        }
      }
    } else if (verdicts.length) rec.violations.push(`${event.type} gave a verdict`);
    if (after.matches('escalated') || after.matches('cancelled')) {
      for (const taskId of rec.running) if (!rec.stopped.has(taskId)) rec.violations.push(`${taskId} not told to stop`);
    }
    if (rec.escalations > 1) rec.violations.push('escalated twice');
    if (rec.escalations === 1 && !after.matches('escalated') && contextOf(after).escalation === undefined) {
      rec.violations.push('escalation reported outside escalated');
    }
    if (rec.batchSettled > 1) rec.violations.push('BATCH.SETTLED twice');
    if (rec.batchSettled === 1 && rec.settled.size < SIZE) rec.violations.push('BATCH.SETTLED before every task');
    if (rec.violations.length) throw new Violation(rec.violations.join('\n'));
  };
  return { actor, taken, entered, send };
}

describe('model-based: the batch machine under each strategy (verdicts, intensity, escalation)', () => {
  const taken = new Set<string>();
  const entered = new Set<string>();
  for (const { name, supervision, classes } of CASES) {
    it(`${name}: a path through every abstract transition, replayed with the invariants holding`, {
      timeout: 180_000,
    }, () => {
      const spec = { batchId: 'B', background: false, concurrency: SIZE, supervision };
      const { states, edges, paths } = coveringPaths<BatchSnapshot, BatchEvent>(batchMachine, {
        input: { ...settings, batch: { ...spec, size: SIZE } },
        events: (snapshot) => batchEvents(snapshot, classes),
        serializeState: batchState,
      });
      for (const path of paths) {
        const run = replayBatch(supervision);
        try {
          for (const step of path.steps.slice(1)) {
            run.send(step.event);
            expect(run.actor.getSnapshot().value).toEqual(step.state.value);
          }
        } catch (error) {
          const events = path.steps.slice(1).map((s) => JSON.stringify(s.event).slice(0, 90));
          throw new Error(`${(error as Error).message}\npath:\n  ${events.join('\n  ')}`);
        }
        run.actor.stop();
        for (const key of run.taken) taken.add(key);
        for (const id of run.entered) entered.add(id);
      }
      console.log(`batch machine (${name}): ${states} abstract states, ${edges} transitions, ${paths.length} paths`);
      expect(paths.length).toBeGreaterThan(10);
    });
  }

  it('the strategies together take every TASK.FAILED transition and every transition of `escalated`', () => {
    const strategic = transitionList(batchMachine).filter(
      (t) => t.event === 'TASK.FAILED' || t.source === 'batch.escalated',
    );
    expect(strategic.length).toBeGreaterThan(8);
    expect(strategic.map((t) => t.key).filter((key) => !taken.has(key))).toEqual([]);
    expect(entered.has('batch.escalated')).toBe(true);
  });
});

// ---- the task machine ----

type TaskSnapshot = SnapshotFrom<typeof taskMachine>;
const FAR = 1e9;
const taskInput = {
  ...settings,
  task: { taskId: 't0', agentId: 'a0', prompt: 'p0', expectsOutput: false },
  batchId: 'B',
  background: false,
};
/** Started again from a journal in the middle of the backoff before its run 1. */
const restoredInput = { ...taskInput, task: { ...taskInput.task, attempt: 1, backoffMs: FAR } };

function taskEvents(snapshot: TaskSnapshot): TaskEvent[] {
  if (snapshot.status !== 'active') return [];
  const c = snapshot.context as TaskContext;
  const done = (outcome: 'completed' | 'failed' | 'interrupted', failure?: FailureClass) =>
    ({
      type: 'CHILD.DONE',
      agentId: 'a0',
      taskId: 't0',
      outcome,
      text: outcome,
      ...(failure ? { failure } : {}),
    }) as TaskEvent;
  // Bounded: three runs at most, so the graph is finite.
  const verdicts: TaskEvent[] =
    c.attempt < 2
      ? [
          { type: 'RESTART', delayMs: FAR },
          { type: 'RESTART', delayMs: FAR, cause: 't1' },
          { type: 'RESUME', delayMs: FAR },
        ]
      : [];
  const events: TaskEvent[] = [
    done('completed'),
    done('failed', 'model'),
    done('interrupted'),
    done('interrupted', 'budget'),
    { ...(done('failed') as object), taskId: 'stale' } as TaskEvent,
    // A crash comes only from an agent that is alive.
    ...(c.alive ? [{ type: 'xstate.error.actor.subagent.a0', error: new Error('boom') } as unknown as TaskEvent] : []),
    { type: 'CANCEL', status: 'cancelled', text: 'cancelled' },
    { type: 'GIVE_UP' },
    { type: 'RELEASE' },
    ...verdicts,
  ];
  if (snapshot.matches('restarting')) events.push({ type: 'xstate.after.backoff.task.restarting' } as never);
  return events;
}

function taskState(snapshot: TaskSnapshot): string {
  const { task: _t, ...c } = snapshot.context as TaskContext;
  return JSON.stringify({ v: snapshot.value, st: snapshot.status, ...c });
}

class TaskRecorder {
  spawned = 0;
  stopped = 0;
  /** Prepares (P) and announced restarts (A) with their attempts, in order. */
  runs: string[] = [];
  settles = 0;
  failures = 0;
  violations: string[] = [];
}
let trec = new TaskRecorder();

const testTask = taskMachine.provide({
  actors: {
    subagent: fromCallback(() => {
      trec.spawned++;
      return () => {
        trec.stopped++;
      };
    }) as never,
  },
  actions: {
    prepareTask: (_, params) => {
      if (trec.settles) trec.violations.push('prepared after it settled');
      trec.runs.push(`P${params.attempt}`);
    },
    announceRestart: (_, params) => {
      if (trec.settles) trec.violations.push('restart announced after it settled');
      trec.runs.push(`A${params.attempt}`);
    },
    settleTask: () => {
      trec.settles++;
    },
    reportFailed: () => {
      if (trec.settles) trec.violations.push('failure reported after it settled');
      trec.failures++;
    },
  },
});
const taskKeys = transitionKeys(testTask);

describe('model-based: the task machine (failed, restarting, restarted by a sibling, resumed)', () => {
  it('a path through every abstract transition, replayed with the invariants holding; every transition taken', {
    timeout: 180_000,
  }, () => {
    const taken = new Set<string>();
    const entered = new Set<string>();
    // A new task, and one started again from a journal while its restart waited out its backoff.
    for (const [input, first] of [
      [taskInput, 'P0'],
      [restoredInput, 'A1'],
    ] as const) {
      const { states, edges, paths } = coveringPaths<TaskSnapshot, TaskEvent>(taskMachine, {
        input,
        events: taskEvents,
        serializeState: taskState,
      });
      for (const path of paths) {
        trec = new TaskRecorder();
        // Declared first: the inspector hears the initial microsteps while the actor is being created.
        let actor: ReturnType<typeof createActor<typeof testTask>> | undefined;
        actor = createActor(testTask, {
          input,
          inspect: (event: InspectionEvent) => {
            if (event.type !== '@xstate.microstep' || (actor && event.actorRef !== actor)) return;
            for (const t of event._transitions) {
              const key = taskKeys.get(t);
              if (key) taken.add(key);
              // A transient state (`starting`) is left in the microstep that enters it: its transitions show it.
              entered.add(t.source.id);
            }
            for (const node of (event.snapshot as unknown as { _nodes: Array<{ id: string }> })._nodes) {
              entered.add(node.id);
            }
          },
        });
        actor.start();
        try {
          for (const step of path.steps.slice(1)) {
            actor.send(step.event);
            expect(actor.getSnapshot().value).toEqual(step.state.value);
            if (trec.settles > 1) trec.violations.push('settled twice');
            // At most one agent alive: every spawn after the first follows a stop.
            if (trec.spawned - trec.stopped > 1) trec.violations.push('two agents alive');
            if (trec.violations.length) throw new Violation(trec.violations.join('\n'));
          }
          // Each run after the first prepares the attempt announced last before it.
          trec.runs.forEach((run, i) => {
            if (run.startsWith('P') && i > 0) expect(trec.runs[i - 1]).toBe(`A${run.slice(1)}`);
          });
          expect(trec.runs[0]).toBe(first);
          if (actor.getSnapshot().status === 'done') expect(trec.settles).toBe(1);
        } catch (error) {
          const events = path.steps.slice(1).map((s) => JSON.stringify(s.event).slice(0, 90));
          throw new Error(`${(error as Error).message}\npath:\n  ${events.join('\n  ')}`);
        }
        actor.stop();
      }
      console.log(`task machine: ${states} abstract states, ${edges} transitions, ${paths.length} paths`);
    }
    expect(stateIds(taskMachine).filter((id) => !entered.has(id))).toEqual([]);
    expect(
      transitionList(taskMachine)
        .map((t) => t.key)
        .filter((key) => !taken.has(key)),
    ).toEqual([]);
  });
});
