import { type ActorRefFrom, type AnyActorLogic, assign, enqueueActions, fromCallback, raise, setup } from 'xstate';
import {
  type BatchSpec,
  joinDecided,
  notificationMessage,
  type SupervisorCommand,
  type TaskSpec,
  type TaskStatus,
  type UserMessage,
} from '../src/protocol/index.js';

/**
 * The supervisor: one per agent that starts subagents (created when first needed), and one at the root of a
 * `createSupervisor()` tree. It starts child agents as `subagent.<agentId>`, caps each swarm batch at its
 * concurrency, restarts failed tasks, evicts finished children beyond `keepFinished`, and sends every background
 * result to its owner (its XState parent) as a NOTIFY — exactly once. Everything it knows is in a small context:
 * batches as an array plus a cursor, the running children, the finished ones kept alive. The task records,
 * histories and results live in the runtime, which provides the named effect actions.
 */

export interface BatchState extends BatchSpec {
  /** Index of the next task to start; tasks before it are started, settled or skipped. */
  next: number;
  /** Started and not yet settled (a task waiting to restart keeps its slot). */
  running: number;
  /** Queued tasks cancelled before they started: skipped when their turn comes. */
  cancelled: string[];
  /** Tasks settled so far, and how many of them completed: what the join policy is decided on. */
  ended: number;
  completed: number;
  /** The join policy was decided: the tasks left were cancelled. */
  joined: boolean;
}

export interface RunningTask {
  task: TaskSpec;
  batchId: string;
  background: boolean;
  /** 0 for the first run; each restart adds one. */
  attempt: number;
  phase: 'running' | 'restarting';
}

/** How a child's task ended, as the runtime saw it (cancellation is decided here, not reported). */
export type ChildOutcome = 'completed' | 'failed' | 'interrupted';

export interface SupervisorInput {
  /** The agent that owns this supervisor, or the id of a root supervisor. */
  ownerId: string;
  /** Background results go to the owner (the XState parent) as NOTIFY; false for a root supervisor. */
  notifyOwner?: boolean;
  maxRestarts?: number;
  /** Backoff before the first restart; doubles with every further attempt. */
  restartDelayMs?: number;
  /** Finished children kept alive for a quick resume; older ones are stopped (their history is archived). */
  keepFinished?: number;
}

export interface SupervisorContext {
  ownerId: string;
  notifyOwner: boolean;
  maxRestarts: number;
  restartDelayMs: number;
  keepFinished: number;
  batches: Record<string, BatchState>;
  /** By agent id. */
  running: Record<string, RunningTask>;
  /** Finished children still alive (idle), oldest first. */
  finished: string[];
  /** Long-lived agents adopted by a root supervisor (`supervisor.agent()`): no task, never evicted. */
  members: string[];
  /** Members in the middle of a run: the supervisor is busy while they work, even with no task of its own. */
  working: string[];
}

export type SupervisorEvent =
  | SupervisorCommand
  | { type: 'CHILD.DONE'; agentId: string; taskId: string; outcome: ChildOutcome; text: string }
  | { type: 'RESTART'; agentId: string; attempt: number }
  /** A member started a run, or went back to idle (sent by the runtime). */
  | { type: 'MEMBER.BUSY'; agentId: string }
  | { type: 'MEMBER.IDLE'; agentId: string };

/** What the runtime hears about a settled task. */
export interface SettleParams {
  taskId: string;
  agentId: string;
  batchId: string;
  background: boolean;
  status: Exclude<TaskStatus, 'running'>;
  text: string;
}

export interface PrepareParams {
  task: TaskSpec;
  batchId: string;
  background: boolean;
  attempt: number;
}

/** Events the supervisor sends its children and its owner (a subset of the agent machine's commands). */
export type ChildCommand =
  | {
      type: 'PROMPT';
      input: { inputId: string; messages: UserMessage[]; expectsOutput: boolean };
    }
  | { type: 'INTERRUPT' };
export type OwnerNotify = { type: 'NOTIFY'; message: UserMessage; inputId: string };

const CHILD_PREFIX = 'subagent.';
export const childId = (agentId: string): string => `${CHILD_PREFIX}${agentId}`;

const CANCELLED_TEXT = 'The task was cancelled before it finished.';
const JOINED_TEXT = "The task was cancelled: its batch's join policy was decided without it.";
const INTERRUPTED_TEXT = 'The task was interrupted before it finished.';

function notificationOf(params: SettleParams): UserMessage {
  return notificationMessage(params.taskId, params.agentId, params.status, params.text);
}

function promptEvent(task: TaskSpec): ChildCommand {
  return {
    type: 'PROMPT',
    input: {
      inputId: task.taskId,
      messages: [{ role: 'user', source: 'prompt', content: [{ type: 'text', text: task.prompt }] }],
      expectsOutput: task.expectsOutput,
    },
  };
}

// ---- pure planning: every transition below computes its whole next context and effect list here ----

type Effect =
  | { kind: 'prepare'; params: PrepareParams }
  | { kind: 'spawn'; task: TaskSpec; ownerId: string }
  | { kind: 'prompt'; task: TaskSpec }
  | { kind: 'interrupt'; agentId: string }
  | { kind: 'stop'; agentId: string }
  | { kind: 'settle'; params: SettleParams; notify: boolean }
  | { kind: 'restart'; agentId: string; attempt: number; delayMs: number };

type RestartParams = { agentId: string; attempt: number; delayMs: number };
type PlanState = Pick<SupervisorContext, 'batches' | 'running' | 'finished' | 'members' | 'working'>;

interface Plan extends PlanState {
  effects: Effect[];
  /** Whether `running` / `batches` are already this plan's own copies (they are copied at the first write). */
  ownRunning: boolean;
  ownBatches: boolean;
}

function plan(context: SupervisorContext): Plan {
  return {
    batches: context.batches,
    running: context.running,
    finished: context.finished,
    members: context.members,
    working: context.working,
    effects: [],
    ownRunning: false,
    ownBatches: false,
  };
}

/**
 * A copy of a record keyed by ids, in V8's dictionary mode. A copy by spread (or into `{}`) gives an object whose
 * keys no other object has in that order, so V8 builds a new hidden class for every key: about 1 µs per key on
 * Node 20, over 100 µs per event with a hundred running children, and garbage that only a full GC frees. An
 * object that has lost a property that was not its last one is a hash table: its keys are plain inserts.
 */
function copyRecord<T>(record: Record<string, T>): Record<string, T> {
  const copy: Record<string, T | undefined> = { dictionary: undefined, mode: undefined };
  delete copy.dictionary;
  delete copy.mode;
  for (const key of Object.keys(record)) copy[key] = record[key];
  return copy as Record<string, T>;
}

/** The plan's `running`, copied before its first change (most events change one entry, or none). */
function runningOf(p: Plan): Record<string, RunningTask> {
  if (!p.ownRunning) {
    p.running = copyRecord(p.running);
    p.ownRunning = true;
  }
  return p.running;
}

function batchesOf(p: Plan): Record<string, BatchState> {
  if (!p.ownBatches) {
    p.batches = copyRecord(p.batches);
    p.ownBatches = true;
  }
  return p.batches;
}

/** Starts a task: a live finished child is prompted again, anything else is (re)built and spawned first. */
function startTask(
  context: SupervisorContext,
  p: Plan,
  task: TaskSpec,
  batchId: string,
  background: boolean,
  attempt: number,
) {
  const alive = p.finished.includes(task.agentId);
  if (alive) p.finished = p.finished.filter((id) => id !== task.agentId);
  p.effects.push({ kind: 'prepare', params: { task, batchId, background, attempt } });
  if (!alive) p.effects.push({ kind: 'spawn', task, ownerId: context.ownerId });
  p.effects.push({ kind: 'prompt', task });
  runningOf(p)[task.agentId] = { task, batchId, background, attempt, phase: 'running' };
}

/** Fills every batch up to its concurrency, skipping cancelled tasks; drops batches with nothing left. */
function fill(context: SupervisorContext, p: Plan) {
  for (const batchId of Object.keys(p.batches)) {
    const batch = p.batches[batchId] as BatchState;
    let { next, running, ended } = batch;
    while (running < batch.concurrency && next < batch.tasks.length) {
      const task = batch.tasks[next] as TaskSpec;
      next++;
      if (batch.cancelled.includes(task.taskId)) continue;
      if (p.running[task.agentId]) {
        // The same agent is already busy (a resume of a running agent): the runtime refuses these, so skip.
        p.effects.push({
          kind: 'settle',
          notify: false,
          params: settleOf(task, batchId, batch.background, 'failed', 'That agent is still running a task.'),
        });
        ended++;
        continue;
      }
      startTask(context, p, task, batchId, batch.background, 0);
      running++;
    }
    if (next >= batch.tasks.length && running === 0) delete batchesOf(p)[batchId];
    else if (next !== batch.next || running !== batch.running)
      batchesOf(p)[batchId] = { ...batch, next, running, ended };
  }
}

function settleOf(
  task: TaskSpec,
  batchId: string,
  background: boolean,
  status: SettleParams['status'],
  text: string,
): SettleParams {
  return { taskId: task.taskId, agentId: task.agentId, batchId, background, status, text };
}

/** A running (or restarting) task ends: its slot is freed. */
function release(p: Plan, agentId: string) {
  const entry = p.running[agentId];
  if (!entry) return;
  delete runningOf(p)[agentId];
  const batch = p.batches[entry.batchId];
  if (batch) batchesOf(p)[entry.batchId] = { ...batch, running: batch.running - 1 };
}

function keepAlive(context: SupervisorContext, p: Plan, agentId: string) {
  p.finished = [...p.finished.filter((id) => id !== agentId), agentId];
  while (p.finished.length > context.keepFinished) {
    const oldest = p.finished[0] as string;
    p.finished = p.finished.slice(1);
    p.effects.push({ kind: 'stop', agentId: oldest });
  }
}

function settle(context: SupervisorContext, p: Plan, params: SettleParams) {
  p.effects.push({ kind: 'settle', params, notify: params.background && context.notifyOwner });
  join(context, p, params);
}

/**
 * The batch counts a settled task; when that decides its join policy (first k completed, or a quorum met or out of
 * reach), its other tasks are cancelled: running ones interrupted and stopped (their tools see the abort), queued
 * ones never start. Each is reported with its own status; finished results stay.
 */
function join(context: SupervisorContext, p: Plan, params: SettleParams) {
  const batch = p.batches[params.batchId];
  if (!batch) return;
  const completed = batch.completed + (params.status === 'completed' ? 1 : 0);
  const ended = batch.ended + 1;
  const decided = !batch.joined && joinDecided(batch.join, batch.tasks.length, completed, ended);
  batchesOf(p)[params.batchId] = { ...batch, completed, ended, joined: batch.joined || decided };
  if (!decided) return;
  for (const entry of Object.values(p.running)) {
    if (entry.batchId === params.batchId) abort(context, p, entry.task.agentId, 'cancelled', JOINED_TEXT);
  }
  dropQueued(context, p, params.batchId, 'cancelled', JOINED_TEXT);
}

/** Ends a running task from outside (cancel, interrupt, stop): the child is interrupted, then stopped. */
function abort(
  context: SupervisorContext,
  p: Plan,
  agentId: string,
  status: 'cancelled' | 'interrupted',
  text = status === 'cancelled' ? CANCELLED_TEXT : INTERRUPTED_TEXT,
) {
  const entry = p.running[agentId];
  if (!entry) return;
  if (entry.phase === 'running') {
    p.effects.push({ kind: 'interrupt', agentId }, { kind: 'stop', agentId });
  }
  release(p, agentId);
  settle(context, p, settleOf(entry.task, entry.batchId, entry.background, status, text));
}

/** Settles the queued (never started) tasks of a batch. */
function dropQueued(
  context: SupervisorContext,
  p: Plan,
  batchId: string,
  status: 'cancelled' | 'interrupted',
  text = status === 'cancelled' ? CANCELLED_TEXT : INTERRUPTED_TEXT,
) {
  const batch = p.batches[batchId];
  if (!batch) return;
  // Marked drained first: the settles below count against the batch (and must not drain it again).
  batchesOf(p)[batchId] = { ...batch, next: batch.tasks.length };
  for (let i = batch.next; i < batch.tasks.length; i++) {
    const task = batch.tasks[i] as TaskSpec;
    if (batch.cancelled.includes(task.taskId)) continue;
    settle(context, p, settleOf(task, batchId, batch.background, status, text));
  }
}

function onChildEnded(
  context: SupervisorContext,
  p: Plan,
  agentId: string,
  outcome: ChildOutcome,
  text: string,
  crashed: boolean,
) {
  const entry = p.running[agentId];
  if (!entry) {
    // Not a running task: a finished child or a member crashed; it is stopped and forgotten.
    if (crashed) {
      p.finished = p.finished.filter((id) => id !== agentId);
      p.members = p.members.filter((id) => id !== agentId);
      p.working = p.working.filter((id) => id !== agentId);
      p.effects.push({ kind: 'stop', agentId });
    }
    return;
  }
  if (outcome === 'failed' && entry.attempt < context.maxRestarts) {
    p.effects.push({ kind: 'stop', agentId });
    const attempt = entry.attempt + 1;
    runningOf(p)[agentId] = { ...entry, attempt, phase: 'restarting' };
    p.effects.push({
      kind: 'restart',
      agentId,
      attempt,
      delayMs: context.restartDelayMs * 2 ** (attempt - 1),
    });
    return;
  }
  release(p, agentId);
  if (crashed) p.effects.push({ kind: 'stop', agentId });
  else keepAlive(context, p, agentId);
  settle(context, p, settleOf(entry.task, entry.batchId, entry.background, outcome, text));
  fill(context, p);
}

/** The part of XState's action enqueuer that `enact` uses (its full generic type does not survive a helper). */
interface Enqueue {
  (action: { type: 'prepareTask'; params: PrepareParams }): void;
  (action: { type: 'settleTask'; params: SettleParams }): void;
  (action: { type: 'releaseChild'; params: { agentId: string } }): void;
  (action: { type: 'announceRestart'; params: { agentId: string; attempt: number } }): void;
  (action: { type: 'prepareMember'; params: { agentId: string } }): void;
  (action: { type: 'notifyOwner'; params: OwnerNotify }): void;
  (action: { type: 'applyPlan'; params: PlanState }): void;
  (action: { type: 'restartLater'; params: { agentId: string; attempt: number; delayMs: number } }): void;
  spawnChild(src: 'subagent', options: { id: string; input: Record<string, unknown> }): void;
  sendTo(id: string, event: ChildCommand): void;
  stopChild(id: string): void;
}

/** Turns a plan into XState actions: one assign, then the effects in order. */
function enact(p: Plan, enqueue: Enqueue) {
  // Named assign and raise actions, created once: an action created while the runtime is inside another actor's
  // custom action (a nested send) would make XState warn.
  enqueue({
    type: 'applyPlan',
    params: { batches: p.batches, running: p.running, finished: p.finished, members: p.members, working: p.working },
  });
  for (const effect of p.effects) {
    switch (effect.kind) {
      case 'prepare':
        enqueue({ type: 'prepareTask', params: effect.params });
        break;
      case 'spawn':
        enqueue.spawnChild('subagent', {
          id: childId(effect.task.agentId),
          input: { agentId: effect.task.agentId, parentId: effect.ownerId, ...effect.task.agent },
        });
        break;
      case 'prompt':
        enqueue.sendTo(childId(effect.task.agentId), promptEvent(effect.task));
        break;
      case 'interrupt':
        enqueue.sendTo(childId(effect.agentId), { type: 'INTERRUPT' });
        break;
      case 'stop':
        enqueue.stopChild(childId(effect.agentId));
        enqueue({ type: 'releaseChild', params: { agentId: effect.agentId } });
        break;
      case 'settle':
        enqueue({ type: 'settleTask', params: effect.params });
        if (effect.notify) {
          const notify: OwnerNotify = {
            type: 'NOTIFY',
            message: notificationOf(effect.params),
            inputId: `notify.${effect.params.taskId}`,
          };
          enqueue({ type: 'notifyOwner', params: notify });
        }
        break;
      case 'restart':
        enqueue({ type: 'announceRestart', params: { agentId: effect.agentId, attempt: effect.attempt } });
        enqueue({
          type: 'restartLater',
          params: { agentId: effect.agentId, attempt: effect.attempt, delayMs: effect.delayMs },
        });
        break;
    }
  }
}

type Ev<T extends SupervisorEvent['type']> = Extract<SupervisorEvent, { type: T }>;

/** No own keys; unlike Object.keys(…).length, it allocates nothing (this guard runs after every event). */
function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}

function childOf(eventType: string): string {
  const at = eventType.indexOf(CHILD_PREFIX);
  return at < 0 ? '' : eventType.slice(at + CHILD_PREFIX.length);
}

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
  },
  actors: {
    /** A child agent: the runtime provides the agent machine joined to its workers. */
    subagent: fromCallback(() => {}) as AnyActorLogic,
  },
  actions: {
    // Effects, provided by the runtime with machine.provide(); they read their params and never change context.
    /** Builds (or rebuilds, or re-arms) the child's runtime before it is spawned or prompted. */
    prepareTask: (_, _params: PrepareParams) => {},
    /** Records a task's end: results, events, the waiting caller. */
    settleTask: (_, _params: SettleParams) => {},
    /** A child was stopped: its history is archived for a later resume and its runtime released. */
    releaseChild: (_, _params: { agentId: string }) => {},
    /** An adopted member is about to be spawned. */
    prepareMember: (_, _params: { agentId: string }) => {},
    announceRestart: (_, _params: { agentId: string; attempt: number }) => {},
    /** Delivers a background result to the owner; the runtime provides `sendParent` (the owner is the parent). */
    notifyOwner: (_, _params: OwnerNotify) => {},

    applyPlan: assign((_, params: PlanState) => params),
    memberBusy: assign({
      working: ({ context, event }) => {
        const { agentId } = event as Ev<'MEMBER.BUSY'>;
        return context.working.includes(agentId) ? context.working : [...context.working, agentId];
      },
    }),
    memberIdle: assign({
      working: ({ context, event }) => context.working.filter((id) => id !== (event as Ev<'MEMBER.IDLE'>).agentId),
    }),
    restartLater: raise(
      (_, params: RestartParams) => ({ type: 'RESTART' as const, agentId: params.agentId, attempt: params.attempt }),
      { delay: (_, params: RestartParams) => params.delayMs },
    ),

    startBatch: enqueueActions(({ context, event, enqueue }) => {
      const { batch } = event as Ev<'SPAWN'>;
      const p = plan(context);
      batchesOf(p)[batch.batchId] = {
        ...batch,
        next: 0,
        running: 0,
        cancelled: [],
        ended: 0,
        completed: 0,
        joined: false,
      };
      fill(context, p);
      enact(p, enqueue as unknown as Enqueue);
    }),
    childDone: enqueueActions(({ context, event, enqueue }) => {
      const done = event as Ev<'CHILD.DONE'>;
      const p = plan(context);
      onChildEnded(context, p, done.agentId, done.outcome, done.text, false);
      enact(p, enqueue as unknown as Enqueue);
    }),
    childCrashed: enqueueActions(({ context, event, enqueue }) => {
      const agentId = childOf(event.type);
      const p = plan(context);
      const error = (event as unknown as { error?: unknown }).error;
      const why = error instanceof Error ? error.message : String(error ?? 'unknown error');
      onChildEnded(context, p, agentId, 'failed', `The subagent crashed: ${why}`, true);
      enact(p, enqueue as unknown as Enqueue);
    }),
    restart: enqueueActions(({ context, event, enqueue }) => {
      const { agentId } = event as Ev<'RESTART'>;
      const entry = context.running[agentId];
      if (!entry) return;
      const p = plan(context);
      startTask(context, p, entry.task, entry.batchId, entry.background, entry.attempt);
      enact(p, enqueue as unknown as Enqueue);
    }),
    cancel: enqueueActions(({ context, event, enqueue }) => {
      const { taskId } = event as Ev<'CANCEL'>;
      const p = plan(context);
      const running = Object.values(p.running).find((entry) => entry.task.taskId === taskId);
      if (running) {
        abort(context, p, running.task.agentId, 'cancelled');
      } else {
        for (const batch of Object.values(p.batches)) {
          const index = batch.tasks.findIndex((task) => task.taskId === taskId);
          if (index < batch.next || batch.cancelled.includes(taskId)) continue;
          batchesOf(p)[batch.batchId] = { ...batch, cancelled: [...batch.cancelled, taskId] };
          settle(
            context,
            p,
            settleOf(batch.tasks[index] as TaskSpec, batch.batchId, batch.background, 'cancelled', CANCELLED_TEXT),
          );
        }
      }
      fill(context, p);
      enact(p, enqueue as unknown as Enqueue);
    }),
    cancelBatch: enqueueActions(({ context, event, enqueue }) => {
      const { batchId } = event as Ev<'CANCEL_BATCH'>;
      const p = plan(context);
      for (const entry of Object.values(p.running)) {
        if (entry.batchId === batchId) abort(context, p, entry.task.agentId, 'interrupted');
      }
      dropQueued(context, p, batchId, 'interrupted');
      fill(context, p);
      enact(p, enqueue as unknown as Enqueue);
    }),
    adopt: enqueueActions(({ context, event, enqueue }) => {
      const { agentId, agent } = event as Ev<'ADOPT'>;
      (enqueue as unknown as Enqueue)({
        type: 'applyPlan',
        params: { ...context, members: [...context.members, agentId] },
      });
      (enqueue as unknown as Enqueue)({ type: 'prepareMember', params: { agentId } });
      enqueue.spawnChild('subagent', {
        id: childId(agentId),
        input: { agentId, parentId: context.ownerId, ...agent },
      });
    }),
    releaseIdle: enqueueActions(({ context, event, enqueue }) => {
      const { agentId } = event as Ev<'RELEASE'>;
      if (!context.members.includes(agentId) && !context.finished.includes(agentId)) return;
      (enqueue as unknown as Enqueue)({
        type: 'applyPlan',
        params: {
          ...context,
          members: context.members.filter((id) => id !== agentId),
          finished: context.finished.filter((id) => id !== agentId),
          working: context.working.filter((id) => id !== agentId),
        },
      });
      enqueue.stopChild(childId(agentId));
      (enqueue as unknown as Enqueue)({ type: 'releaseChild', params: { agentId } });
    }),
    stopAll: enqueueActions(({ context, enqueue }) => {
      const p = plan({ ...context, notifyOwner: false });
      const quiet = { ...context, notifyOwner: false };
      for (const agentId of Object.keys(p.running)) abort(quiet, p, agentId, 'interrupted');
      for (const batchId of Object.keys(p.batches)) dropQueued(quiet, p, batchId, 'interrupted');
      for (const agentId of [...p.finished, ...p.members]) p.effects.push({ kind: 'stop', agentId });
      p.batches = {};
      p.finished = [];
      p.members = [];
      p.working = [];
      enact(p, enqueue as unknown as Enqueue);
    }),
  },
  guards: {
    isRunningTask: ({ context }, params: { agentId: string; taskId: string }) => {
      const entry = context.running[params.agentId];
      return entry?.phase === 'running' && entry.task.taskId === params.taskId;
    },
    isRestartDue: ({ context }, params: { agentId: string; attempt: number }) => {
      const entry = context.running[params.agentId];
      return entry?.phase === 'restarting' && entry.attempt === params.attempt;
    },
    isQuiet: ({ context }) => isEmpty(context.batches) && isEmpty(context.running) && context.working.length === 0,
    isMember: ({ context, event }) => context.members.includes((event as Ev<'MEMBER.BUSY'>).agentId),
  },
}).createMachine({
  id: 'supervisor',
  context: ({ input }) => ({
    ownerId: input.ownerId,
    notifyOwner: input.notifyOwner ?? true,
    maxRestarts: input.maxRestarts ?? 2,
    restartDelayMs: input.restartDelayMs ?? 1000,
    keepFinished: input.keepFinished ?? 8,
    batches: {},
    running: {},
    finished: [],
    members: [],
    working: [],
  }),
  initial: 'idle',
  on: {
    ADOPT: { actions: 'adopt' },
    RELEASE: { actions: 'releaseIdle' },
    CANCEL: { actions: 'cancel' },
    CANCEL_BATCH: { actions: 'cancelBatch' },
    // A member at work makes the supervisor busy, so the inspector and the tree never show an idle root over
    // working agents.
    'MEMBER.BUSY': { guard: 'isMember', target: '.busy', actions: 'memberBusy' },
    'MEMBER.IDLE': { actions: 'memberIdle' },
    // A child's failure is a task outcome, never the supervisor's own: these handlers keep it out of `error`.
    'xstate.error.actor.subagent.*': { actions: 'childCrashed' },
    'xstate.done.actor.subagent.*': { actions: 'childCrashed' },
    STOP: '.stopped',
  },
  states: {
    /** No task is running, queued or waiting to restart (finished children and members may be alive). */
    idle: {
      on: { SPAWN: { target: 'busy', actions: 'startBatch' } },
    },
    /** Tasks are running, queued, or waiting out a restart backoff. */
    busy: {
      always: { guard: 'isQuiet', target: 'idle' },
      on: {
        SPAWN: { actions: 'startBatch' },
        'CHILD.DONE': {
          guard: {
            type: 'isRunningTask',
            params: ({ event }) => ({ agentId: event.agentId, taskId: event.taskId }),
          },
          actions: 'childDone',
        },
        RESTART: {
          guard: {
            type: 'isRestartDue',
            params: ({ event }) => ({ agentId: event.agentId, attempt: event.attempt }),
          },
          actions: 'restart',
        },
      },
    },
    /** Stopped by its owner or the runtime: running tasks are interrupted and settled, every child stopped. */
    stopped: {
      type: 'final',
      entry: 'stopAll',
    },
  },
});

export type SupervisorMachine = typeof supervisorMachine;
export type SupervisorActorRef = ActorRefFrom<SupervisorMachine>;
