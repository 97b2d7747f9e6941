/**
 * Model-based tests of the real supervisor machine, the same way as the agent's: xstate/graph explores it with an
 * abstract serializeState, one path per abstract transition is replayed on a real actor whose children are fake
 * agents (they record what they are sent) and whose effect actions record, and the invariants are checked:
 *
 * - every task of every batch is settled exactly once (completed, failed, cancelled or interrupted);
 * - a background task's result reaches the owner exactly once (unless the owner is stopping it: STOP settles
 *   quietly), a foreground task's never;
 * - a batch never has more children running than its concurrency, and a child never gets a second task while
 *   it is running one;
 * - once stopped, no child is left.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, type InspectionEvent, type SnapshotFrom } from 'xstate';
import {
  type ChildCommand,
  type SupervisorContext,
  type SupervisorEvent,
  supervisorMachine,
} from '../../machines/supervisor.js';
import { stateIds, transitionKeys, transitionList } from '../../src/inspect/export.js';
import type { BatchSpec } from '../../src/protocol/index.js';
import { coveringPaths } from './paths.js';

type Snapshot = SnapshotFrom<typeof supervisorMachine>;
/** The context as the machine declares it (independent of how TypeScript infers the snapshot's). */
const contextOf = (snapshot: Snapshot): SupervisorContext => snapshot.context as unknown as SupervisorContext;
type Event =
  | SupervisorEvent
  | { type: `xstate.error.actor.subagent.${string}`; error: unknown }
  | { type: `xstate.done.actor.subagent.${string}`; output: unknown };

const BATCHES: BatchSpec[] = [
  {
    batchId: 'B1',
    background: false,
    concurrency: 1,
    tasks: [
      { taskId: 't1', agentId: 'a1', prompt: 'one', expectsOutput: false },
      { taskId: 't2', agentId: 'a2', prompt: 'two', expectsOutput: false },
    ],
  },
  {
    batchId: 'B2',
    background: true,
    concurrency: 2,
    tasks: [{ taskId: 't3', agentId: 'a3', prompt: 'three', expectsOutput: true }],
  },
];
const TASKS = BATCHES.flatMap((b) => b.tasks);
const input = { ownerId: 'owner', maxRestarts: 1, restartDelayMs: 3_600_000, keepFinished: 1 };

function eventsFor(snapshot: Snapshot): Event[] {
  if (snapshot.status !== 'active') return [];
  const c = contextOf(snapshot);
  const events: Event[] = [];
  for (const batch of BATCHES) {
    if (!c.batches[batch.batchId]) events.push({ type: 'SPAWN', batch });
    else events.push({ type: 'CANCEL_BATCH', batchId: batch.batchId });
  }
  for (const [agentId, entry] of Object.entries(c.running)) {
    const { taskId } = entry.task;
    if (entry.phase === 'running') {
      for (const outcome of ['completed', 'failed', 'interrupted'] as const) {
        events.push({ type: 'CHILD.DONE', agentId, taskId, outcome, text: `${outcome} ${taskId}` });
      }
      events.push(
        { type: `xstate.error.actor.subagent.${agentId}`, error: new Error('crashed') },
        // An agent never reaches a final state; if one did, its task would end as a crash.
        { type: `xstate.done.actor.subagent.${agentId}`, output: undefined },
      );
    } else {
      events.push({ type: 'RESTART', agentId, attempt: entry.attempt });
    }
  }
  for (const task of TASKS) events.push({ type: 'CANCEL', taskId: task.taskId });
  // A late report from a child that is not running a task: ignored.
  events.push({ type: 'CHILD.DONE', agentId: 'a9', taskId: 't9', outcome: 'completed', text: 'late' });
  for (const agentId of c.finished) {
    events.push({ type: 'RELEASE', agentId }, { type: `xstate.error.actor.subagent.${agentId}`, error: 'crashed' });
  }
  if (c.members.includes('m1')) {
    events.push({ type: 'RELEASE', agentId: 'm1' });
    events.push(
      c.working.includes('m1') ? { type: 'MEMBER.IDLE', agentId: 'm1' } : { type: 'MEMBER.BUSY', agentId: 'm1' },
    );
  } else events.push({ type: 'ADOPT', agentId: 'm1' });
  events.push({ type: 'STOP' });
  return events;
}

function serializeState(snapshot: Snapshot): string {
  const c = contextOf(snapshot);
  return JSON.stringify({
    v: snapshot.value,
    st: snapshot.status,
    batches: Object.values(c.batches).map((b) => [b.batchId, b.next, b.running, b.cancelled.length]),
    running: Object.entries(c.running).map(([id, r]) => [id, r.phase, r.attempt]),
    finished: c.finished,
    members: c.members,
    working: c.working,
  });
}

class Violation extends Error {}

class Recorder {
  spawned = new Map<string, number>();
  settled = new Map<string, number>();
  notified = new Map<string, number>();
  /** Background settlements the owner must hear about: those not made by STOP. */
  owed = new Map<string, number>();
  stopping = false;
  busy = new Set<string>();
  violations: string[] = [];
}
let current = new Recorder();

const testMachine = supervisorMachine.provide({
  actors: {
    subagent: fromCallback<ChildCommand, { agentId: string }>(({ input, receive }) => {
      const rec = current;
      receive((command) => {
        if (command.type !== 'PROMPT') return;
        if (rec.busy.has(input.agentId)) rec.violations.push(`${input.agentId} prompted while running a task`);
        rec.busy.add(input.agentId);
      });
      return () => rec.busy.delete(input.agentId);
    }) as never,
  },
  actions: {
    settleTask: (_, params) => {
      const key = `${params.batchId}/${params.taskId}`;
      current.settled.set(key, (current.settled.get(key) ?? 0) + 1);
      if (params.background && !current.stopping)
        current.owed.set(params.taskId, (current.owed.get(params.taskId) ?? 0) + 1);
      if ((current.settled.get(key) ?? 0) > (current.spawned.get(key) ?? 0)) {
        current.violations.push(`task ${key} settled more often than it was given`);
      }
    },
    notifyOwner: (_, params) => {
      const taskId = params.inputId.replace(/^notify\./, '');
      current.notified.set(taskId, (current.notified.get(taskId) ?? 0) + 1);
    },
  },
});
const keys = transitionKeys(testMachine);

function replay() {
  const rec = new Recorder();
  current = rec;
  const taken = new Set<string>();
  const entered = new Set<string>();
  const actor = createActor(testMachine, {
    input,
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
  entered.add('supervisor.idle');
  const check = () => {
    const c = contextOf(actor.getSnapshot());
    for (const batch of Object.values(c.batches)) {
      const running = Object.values(c.running).filter((r) => r.batchId === batch.batchId).length;
      if (running > batch.concurrency || batch.running > batch.concurrency) {
        rec.violations.push(
          `batch ${batch.batchId} runs ${running} children, over its concurrency ${batch.concurrency}`,
        );
      }
    }
    if (rec.violations.length) throw new Violation(rec.violations.join('\n'));
  };
  const send = (event: Event) => {
    if (event.type === 'SPAWN' && actor.getSnapshot().status === 'active') {
      for (const task of event.batch.tasks) {
        const key = `${event.batch.batchId}/${task.taskId}`;
        rec.spawned.set(key, (rec.spawned.get(key) ?? 0) + 1);
      }
    }
    if (event.type === 'CHILD.DONE' || event.type.startsWith('xstate.')) {
      const agentId =
        event.type === 'CHILD.DONE' ? (event as { agentId: string }).agentId : event.type.split('.').pop();
      const running = contextOf(actor.getSnapshot()).running[agentId ?? ''];
      if (running?.phase === 'running' && (event.type !== 'CHILD.DONE' || running.task.taskId === event.taskId)) {
        rec.busy.delete(agentId ?? '');
      }
    }
    if (event.type === 'STOP') rec.stopping = true;
    actor.send(event as SupervisorEvent);
    check();
  };
  return {
    actor,
    taken,
    entered,
    send,
    finish() {
      if (actor.getSnapshot().status === 'active') send({ type: 'STOP' });
      const snapshot = actor.getSnapshot();
      if (snapshot.status !== 'done') rec.violations.push(`not done after STOP: ${snapshot.status}`);
      const children = Object.keys(snapshot.children);
      if (children.length) rec.violations.push(`children left after STOP: ${children.join(', ')}`);
      for (const [key, count] of rec.spawned) {
        const settled = rec.settled.get(key) ?? 0;
        if (settled !== count) rec.violations.push(`task ${key} given ${count} times, settled ${settled} times`);
      }
      for (const task of TASKS) {
        const notified = rec.notified.get(task.taskId) ?? 0;
        const expected = rec.owed.get(task.taskId) ?? 0;
        if (notified !== expected) {
          rec.violations.push(`task ${task.taskId} notified ${notified} times, expected ${expected}`);
        }
      }
      actor.stop();
      if (rec.violations.length) throw new Violation(rec.violations.join('\n'));
    },
  };
}

describe('model-based: the supervisor machine', () => {
  it('replays a path through every abstract transition on the real actor, with the invariants holding', {
    timeout: 180_000,
  }, () => {
    const { states, edges, paths } = coveringPaths<Snapshot, Event>(supervisorMachine, {
      input,
      events: eventsFor,
      serializeState,
    });
    const taken = new Set<string>();
    const entered = new Set<string>();
    for (const path of paths) {
      const run = replay();
      try {
        for (const step of path.steps.slice(1)) {
          run.send(step.event);
          expect(serializeState(run.actor.getSnapshot())).toBe(serializeState(step.state));
        }
        run.finish();
      } catch (error) {
        const events = path.steps.slice(1).map((s) => JSON.stringify(s.event).slice(0, 80));
        throw new Error(`${(error as Error).message}\npath:\n  ${events.join('\n  ')}`);
      }
      for (const key of run.taken) taken.add(key);
      for (const id of run.entered) entered.add(id);
    }
    const allStates = stateIds(supervisorMachine);
    const allTransitions = transitionList(supervisorMachine).map((t) => t.key);
    const missingStates = allStates.filter((id) => !entered.has(id));
    const missingTransitions = allTransitions.filter((key) => !taken.has(key));
    console.log(
      [
        'supervisor machine, model-based coverage:',
        `  abstract graph: ${states} states, ${edges} transitions, ${paths.length} paths replayed on the real actor`,
        `  state coverage: ${allStates.length - missingStates.length}/${allStates.length} state nodes`,
        `  transition coverage: ${allTransitions.length - missingTransitions.length}/${allTransitions.length} transitions (guarded branches counted apart)`,
        ...(missingStates.length ? [`  states never entered: ${missingStates.join(', ')}`] : []),
        ...(missingTransitions.length ? [`  transitions never taken: ${missingTransitions.join(', ')}`] : []),
      ].join('\n'),
    );
    expect(missingStates).toEqual([]);
    expect(missingTransitions).toEqual([]);
  });
});
