import {
  type AnyActorLogic,
  assign,
  createActor,
  enqueueActions,
  fromCallback,
  type InspectionEvent,
  setup,
  stopChild,
  toPromise,
} from 'xstate';
import type { agentShape } from './agent.js';
import { seats } from './agent-setup.js';
import type { Script } from './script.js';

/**
 * Troupe's supervision layer for a swarm (machines/supervisor: batch, pool, task) rebuilt in plain XState with
 * none of its code: a batch that starts tasks up to the concurrency cap, pools of POOL_SIZE children two levels
 * deep (a batch of 500 tasks spawns the same pools), and a task actor per subagent that spawns its agent, prompts
 * it, hears its turn's end and tells the batch. Effects that record or report do nothing.
 */
const POOL_SIZE = 16;
const TOP_SPAN = POOL_SIZE * POOL_SIZE;

type Index = { index: number };
type SwarmEvent =
  | ({ type: 'START' } & Index)
  | { type: 'FILL'; indexes: number[] }
  | { type: 'SEAL' }
  | { type: 'RELEASE' }
  | { type: 'CHILD.DONE'; taskId: string; outcome: string; text: string }
  | { type: 'TASK.SETTLED'; taskId: string; status: string }
  | { type: 'CANCEL' | 'CANCEL_ALL' | 'CANCEL_BATCH' | 'RESTART' | 'RESUME' | 'GIVE_UP' | 'QUEUE' | 'TASK.FAILED' }
  | { type: `xstate.${'done' | 'error'}.actor.${string}` };

/** What every supervision actor carries in its context in Troupe (its assigns copy these keys too). */
const settings = { ownerId: 'root', notifyOwner: false, maxRestarts: 0, restartDelayMs: 0, background: false };
type Settings = typeof settings;

/** The run in progress: what the tasks read to make their agents' scripts. */
const run = { mkScript: (): Script => undefined as never, maxSteps: 25 };

const leafId = (index: number) => `batch.pool.${Math.floor(index / POOL_SIZE)}`;
const childIndex = (event: SwarmEvent) => Number(event.type.slice(event.type.lastIndexOf('.') + 1));

interface TaskContext extends Settings {
  taskId: string;
  batchId: string;
  attempt: number;
  alive: boolean;
  result?: { status: string; text: string };
  failure?: string;
  delayMs: number;
  cause?: string;
  resume?: boolean;
}

const taskSetup = setup({
  types: { context: {} as TaskContext, events: {} as SwarmEvent, input: {} as { taskId: string } },
  actors: { agent: fromCallback(() => {}) as AnyActorLogic },
  actions: {
    startAgent: enqueueActions(({ context, enqueue, self }) => {
      const { taskId } = context;
      const seat = {
        script: run.mkScript(),
        text: '',
        done: (reason: string) =>
          self.send({
            type: 'CHILD.DONE',
            taskId,
            outcome: reason === 'completed' ? 'completed' : 'failed',
            text: seat.text,
          }),
      };
      seats.set(taskId, seat);
      enqueue.spawnChild('agent', { id: `subagent.${taskId}`, input: { agentId: taskId, maxSteps: run.maxSteps } });
      enqueue.sendTo(`subagent.${taskId}`, { type: 'PROMPT', input: { inputId: taskId, expectsOutput: false } });
    }),
    recordOutcome: assign({
      result: ({ event }) => {
        const done = event as Extract<SwarmEvent, { type: 'CHILD.DONE' }>;
        return { status: done.outcome, text: done.text };
      },
    }),
    /** The runtime tells the batch straight (registered in the system), and releases the agent later. */
    settle: ({ context, system, self }) => {
      const status = context.result?.text === 'done' ? (context.result.status as string) : 'failed';
      system.get('batch')?.send({ type: 'TASK.SETTLED', taskId: context.taskId, status });
      queueMicrotask(() => self.send({ type: 'RELEASE' }));
    },
    releaseAgent: ({ context }) => {
      seats.delete(context.taskId);
    },
  },
  guards: {
    isCurrent: ({ context, event }) => (event as { taskId?: string }).taskId === context.taskId,
    isCurrentFailure: ({ context, event }) => {
      const done = event as Extract<SwarmEvent, { type: 'CHILD.DONE' }>;
      return done.taskId === context.taskId && done.outcome === 'failed';
    },
    agentGone: ({ context }) => !context.alive,
    inBackoff: ({ context }) => context.delayMs > 0,
  },
  delays: { backoff: ({ context }) => context.delayMs },
});

const taskMachine = taskSetup.createMachine({
  id: 'task',
  context: ({ input }) => ({
    ...settings,
    taskId: input.taskId,
    batchId: 'batch',
    attempt: 0,
    alive: true,
    delayMs: 0,
  }),
  initial: 'starting',
  states: {
    starting: { always: [{ guard: 'inBackoff', target: 'restarting' }, { target: 'running' }] },
    running: {
      entry: 'startAgent',
      on: {
        'CHILD.DONE': [
          { guard: 'isCurrentFailure', target: 'failed', actions: 'recordOutcome' },
          { guard: 'isCurrent', target: 'settled', actions: 'recordOutcome' },
        ],
        'xstate.error.actor.subagent.*': { target: 'failed' },
        CANCEL: { target: 'settled' },
        RESTART: { target: 'restarting' },
      },
    },
    // A failed run waits here for its batch's verdict in Troupe; W3 has none, so a failure settles at once.
    failed: {
      always: { target: 'settled' },
      on: {
        RESTART: 'restarting',
        RESUME: 'restarting',
        GIVE_UP: 'settled',
        CANCEL: 'settled',
        'xstate.error.actor.subagent.*': {},
      },
    },
    restarting: {
      after: { backoff: { target: 'running' } },
      on: { CANCEL: 'settled', RESTART: { target: 'restarting', reenter: true } },
    },
    settled: {
      entry: 'settle',
      always: { guard: 'agentGone', target: 'released' },
      on: { RELEASE: 'released', 'xstate.error.actor.subagent.*': 'released' },
    },
    released: { type: 'final', entry: 'releaseAgent' },
  },
});

interface PoolContext extends Settings {
  batchId: string;
  depth: number;
  open: number[];
  unsealed: number[];
  sealed: boolean;
}

const spanOf = (depth: number) => POOL_SIZE ** depth;
const childOf = (context: PoolContext, index: number) => Math.floor(index / spanOf(context.depth)) % POOL_SIZE;
const isLast = (context: PoolContext, index: number) => (index + 1) % spanOf(context.depth) === 0;
const startOf = (event: SwarmEvent) => (event as Index).index;

type PoolInput = { depth: number; starts?: number[]; sealed?: boolean };
type Spawn = (src: 'task' | 'pool', options: { id: string; systemId?: string; input: unknown }) => unknown;

/**
 * Troupe's first fill (`FILL`): a pool its batch spawns gets that fill's tasks at once and spawns its children
 * with them (a child pool with its own tasks in its input, which spawns its task actors as it is created).
 */
function firstChildren(context: PoolContext, indexes: number[], spawn: Spawn) {
  const last = indexes[indexes.length - 1] as number;
  const lastChild = childOf(context, last);
  const open = [...context.open];
  const groups = new Map<number, number[]>();
  for (const index of indexes) {
    const child = childOf(context, index);
    groups.set(child, [...(groups.get(child) ?? []), index]);
  }
  for (const [child, starts] of groups) {
    open.push(child);
    if (context.depth === 0) spawn('task', { id: `task.${child}`, input: { taskId: `task ${starts[0]}` } });
    else {
      const sealed = child !== lastChild || isLast(context, last);
      spawn('pool', {
        id: `pool.${child}`,
        systemId: leafId(starts[0] as number),
        input: { depth: 0, starts, sealed },
      });
    }
  }
  const sealedLast = context.depth === 0 || isLast(context, last);
  const sealed = context.sealed || (context.depth === 0 && (last + 1) % POOL_SIZE === 0);
  return { open, unsealed: sealedLast ? [] : [lastChild], sealed };
}

const poolSetup = setup({
  types: { context: {} as PoolContext, events: {} as SwarmEvent, input: {} as PoolInput },
  actors: { task: taskMachine as AnyActorLogic, pool: fromCallback(() => {}) as AnyActorLogic },
  actions: {
    spawnTask: enqueueActions(({ context, event, enqueue }) => {
      const index = startOf(event);
      enqueue.spawnChild('task', { id: `task.${childOf(context, index)}`, input: { taskId: `task ${index}` } });
    }),
    /** A pool of depth 0 is known to the system by its place in the batch: the batch starts tasks in it directly. */
    spawnPool: enqueueActions(({ context, event, enqueue }) => {
      const index = startOf(event);
      const [id, input] = [`pool.${childOf(context, index)}`, { depth: context.depth - 1 }];
      if (input.depth === 0) enqueue.spawnChild('pool', { id, systemId: leafId(index), input });
      else enqueue.spawnChild('pool', { id, input });
    }),
    passDown: enqueueActions(({ context, event, enqueue }) => {
      const child = childOf(context, startOf(event));
      enqueue.sendTo(context.depth === 0 ? `task.${child}` : `pool.${child}`, event);
    }),
    sealPassed: enqueueActions(({ context, event, enqueue }) => {
      const index = startOf(event);
      const child = childOf(context, index);
      const passed = context.unsealed.filter((open) => open !== child);
      for (const pool of isLast(context, index) ? [...passed, child] : passed)
        enqueue.sendTo(`pool.${pool}`, { type: 'SEAL' });
    }),
    sealChildren: enqueueActions(({ context, enqueue }) => {
      for (const pool of context.unsealed) enqueue.sendTo(`pool.${pool}`, { type: 'SEAL' });
    }),
    openChild: assign(({ context, event }) => {
      const index = startOf(event);
      const child = childOf(context, index);
      return { open: [...context.open, child], unsealed: isLast(context, index) ? [] : [child] };
    }),
    clearUnsealed: assign({ unsealed: [] }),
    forgetChild: assign(({ context, event }) => ({
      open: context.open.filter((open) => open !== childIndex(event)),
      unsealed: context.unsealed.filter((open) => open !== childIndex(event)),
    })),
    seal: assign({ sealed: true, unsealed: [] }),
    spawnFirst: assign(({ context, event, spawn }) =>
      firstChildren(context, (event as Extract<SwarmEvent, { type: 'FILL' }>).indexes, spawn as Spawn),
    ),
    stopPool: stopChild(({ event }) => `pool.${childIndex(event)}`),
  },
  guards: {
    parentsTasks: ({ context }) => context.depth === 0,
    isLastSlot: ({ context, event }) => context.depth === 0 && (startOf(event) + 1) % POOL_SIZE === 0,
    isNewChild: ({ context, event }) => !context.open.includes(childOf(context, startOf(event))),
    isLastOfChild: ({ context, event }) => isLast(context, startOf(event)),
    isDrained: ({ context }) => context.sealed && context.open.length === 0,
    childAlive: ({ context, event }) => context.open.includes(childOf(context, startOf(event))),
  },
});

const poolMachine = poolSetup.createMachine({
  id: 'pool',
  context: ({ input, spawn }) => {
    const context: PoolContext = {
      ...settings,
      batchId: 'batch',
      depth: input.depth,
      open: [],
      unsealed: [],
      sealed: input.sealed ?? false,
    };
    return input.starts ? { ...context, ...firstChildren(context, input.starts, spawn as Spawn) } : context;
  },
  initial: 'open',
  states: {
    open: {
      always: { guard: 'isDrained', target: 'drained' },
      on: {
        START: [
          { guard: 'isLastSlot', actions: ['spawnTask', 'openChild', 'seal'] },
          { guard: 'parentsTasks', actions: ['spawnTask', 'openChild'] },
          { guard: 'isNewChild', actions: ['spawnPool', 'passDown', 'sealPassed', 'openChild'] },
          { guard: 'isLastOfChild', actions: ['passDown', 'sealPassed', 'clearUnsealed'] },
          { actions: 'passDown' },
        ],
        FILL: { actions: 'spawnFirst' },
        CANCEL: { guard: 'childAlive', actions: 'passDown' },
        CANCEL_ALL: [{ guard: 'parentsTasks', actions: 'passDown' }, { actions: 'passDown' }],
        SEAL: { actions: ['sealChildren', 'seal'] },
        'xstate.done.actor.pool.*': { actions: ['stopPool', 'forgetChild'] },
        'xstate.done.actor.task.*': { actions: 'forgetChild' },
        'xstate.error.actor.task.*': { actions: 'forgetChild' },
      },
    },
    drained: { type: 'final' },
  },
});

interface BatchContext extends Settings {
  batchId: string;
  join: { kind: 'all' | 'first' | 'quorum'; n: number };
  tasks: string[];
  cancelled: string[];
  unsealed: number[];
  restarts: number[];
  attempts: Record<string, number>;
  done: string[];
  total: number;
  concurrency: number;
  next: number;
  running: number;
  ended: number;
  completed: number;
  pools: number[];
}

const batchSetup = setup({
  types: {
    context: {} as BatchContext,
    events: {} as SwarmEvent,
    input: {} as { total: number; concurrency: number },
    output: {} as { completed: number },
  },
  actors: { pool: poolMachine as AnyActorLogic },
  actions: {
    /** Starts queued tasks up to the cap: a top pool is spawned with its first task, sealed with its last. */
    fill: enqueueActions(({ context, enqueue, system }) => {
      let { next, running } = context;
      const pools = [...context.pools];
      // A top pool spawned in this fill gets its tasks of the fill in one FILL (Troupe's fillFrom), then its SEAL.
      let spawned = -1;
      let indexes: number[] = [];
      const flush = () => {
        if (!indexes.length) return;
        enqueue.sendTo(`pool.${spawned}`, { type: 'FILL', indexes });
        const last = indexes[indexes.length - 1] as number;
        if ((last + 1) % TOP_SPAN === 0 || last + 1 === context.total)
          enqueue.sendTo(`pool.${spawned}`, { type: 'SEAL' });
        indexes = [];
      };
      while (running < context.concurrency && next < context.total) {
        const top = Math.floor(next / TOP_SPAN);
        if (top === spawned) indexes.push(next);
        else if (!pools.includes(top)) {
          flush();
          enqueue.spawnChild('pool', { id: `pool.${top}`, input: { depth: 1 } });
          pools.push(top);
          spawned = top;
          indexes = [next];
        } else {
          // A pool of depth 0 the cursor entered in an earlier macrostep exists: the task starts in it directly.
          const start = { type: 'START' as const, index: next };
          if (Math.floor(next / POOL_SIZE) * POOL_SIZE < context.next) enqueue.sendTo(system.get(leafId(next)), start);
          else enqueue.sendTo(`pool.${top}`, start);
          if ((next + 1) % TOP_SPAN === 0 || next + 1 === context.total)
            enqueue.sendTo(`pool.${top}`, { type: 'SEAL' });
        }
        next++;
        running++;
      }
      flush();
      if (next !== context.next) enqueue.assign({ next, running, pools });
    }),
    count: assign(({ context, event }) => ({
      running: context.running - 1,
      ended: context.ended + 1,
      completed: context.completed + ((event as { status?: string }).status === 'completed' ? 1 : 0),
    })),
    stopPool: stopChild(({ event }) => `pool.${childIndex(event)}`),
    forgetPool: assign({ pools: ({ context, event }) => context.pools.filter((pool) => pool !== childIndex(event)) }),
  },
  guards: {
    allEnded: ({ context }) => context.ended === context.total,
    // The join policy's decisions (W3 joins `all`: none of them is ever met).
    firstCompleted: ({ context, event }) =>
      context.join.kind === 'first' && (event as { status?: string }).status === 'completed',
    quorumReached: ({ context }) => context.join.kind === 'quorum' && context.completed + 1 >= context.join.n,
    quorumOutOfReach: ({ context }) =>
      context.join.kind === 'quorum' && context.total - context.ended + context.completed < context.join.n,
    noPools: ({ context }) => context.pools.length === 0,
  },
});

const batchMachine = batchSetup.createMachine({
  id: 'batch',
  context: ({ input }) => ({
    ...settings,
    ...input,
    batchId: 'batch',
    join: { kind: 'all', n: input.total },
    tasks: [],
    next: 0,
    running: 0,
    ended: 0,
    completed: 0,
    cancelled: [],
    pools: [],
    unsealed: [],
    restarts: [],
    attempts: {},
    done: [],
  }),
  initial: 'running',
  on: { 'xstate.done.actor.pool.*': { actions: ['stopPool', 'forgetPool'] } },
  states: {
    running: {
      entry: 'fill',
      always: { guard: 'allEnded', target: 'settled' },
      on: {
        QUEUE: { actions: 'fill' },
        'TASK.SETTLED': [
          { guard: 'firstCompleted', target: 'joined', actions: 'count' },
          { guard: 'quorumReached', target: 'joined', actions: 'count' },
          { guard: 'quorumOutOfReach', target: 'joined', actions: 'count' },
          { actions: ['count', 'fill'] },
        ],
        CANCEL: { actions: 'fill' },
        CANCEL_BATCH: 'joined',
        'TASK.FAILED': { target: 'joined' },
      },
    },
    joined: { always: { guard: 'allEnded', target: 'settled' }, on: { 'TASK.SETTLED': { actions: 'count' } } },
    settled: { always: { guard: 'noPools', target: 'released' } },
    released: { type: 'final' },
  },
  output: ({ context }) => ({ completed: context.completed }),
});

/** The batch with the given agent machine in its tasks (the runtime's composition, once per variant). */
export function swarmShape(agent: ReturnType<typeof agentShape>) {
  const task = taskMachine.provide({ actors: { agent } });
  const leaf = poolMachine.provide({ actors: { task } });
  const top = leaf.provide({ actors: { pool: leaf } });
  return batchMachine.provide({ actors: { pool: top } });
}

/** One swarm: `runs` subagents, `concurrency` at once; how many completed with the final text. */
export async function shapeSwarm(
  batch: ReturnType<typeof swarmShape>,
  runs: number,
  concurrency: number,
  mkScript: () => Script,
  maxSteps: number,
  inspect?: (event: InspectionEvent) => void,
): Promise<number> {
  run.mkScript = mkScript;
  run.maxSteps = maxSteps;
  const actor = createActor(batch, {
    systemId: 'batch',
    input: { total: runs, concurrency },
    ...(inspect ? { inspect } : {}),
  });
  actor.start();
  return (await toPromise(actor)).completed;
}
