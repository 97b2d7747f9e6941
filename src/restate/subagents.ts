import * as restate from '@restatedev/restate-sdk';
import {
  checkStrategy,
  type EscalatedFailure,
  escalationError,
  type JoinPolicy,
  type ResumeRefusal,
  resumeRefused,
  type SerializedError,
  SpawnRefused,
  type StrategyOptions,
  type SubagentConfigs,
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  tooManyAgents,
} from '../host/index.js';
import type { AnyTool, SupervisionOptions, TaskResult } from '../index.js';
import { countedLimit, type SlotGrant } from './agent-slots.js';
import type { BackgroundBatch, BatchOptions, HostedTask, Spent, StartedTask } from './hand-off.js';
import { type JournalScope, serially } from './journal.js';
import { type Batch, runBatches } from './swarm.js';
import type { BookedTask } from './task-book.js';

/** On a parent: the children of the foreground batches its turn runs now (see `foregroundHandler`). */
const FOREGROUND = 'foreground';

/** The agent object's shared `foreground` handler: the children of the batches its turn runs now. */
export const foregroundHandler = restate.handlers.object.shared(
  async (ctx: restate.ObjectSharedContext): Promise<string[]> => (await ctx.get<string[]>(FOREGROUND)) ?? [],
);

/** What of the embedded supervision options applies to agents hosted on Restate. */
export type HostedSupervision = Pick<
  SupervisionOptions,
  | 'concurrency'
  | 'maxDepth'
  | 'maxAgents'
  | 'maxRestarts'
  | 'restartDelayMs'
  | 'profiles'
  | 'keepHistory'
  | 'keepFinished'
  | 'strategy'
  | 'intensity'
  | 'onFailure'
>;

/** What the subagent tools of one hosted turn need from its object. */
export interface HostedTree {
  scope: JournalScope;
  /** The turn's number: with the tool call's id, it names the tasks (stable across replays). */
  turn: number;
  /** Starts one attempt of a foreground task's child (`startChildRun`, within what the turn has left). */
  startChild(task: HostedTask, fresh: boolean): StartedTask;
  /**
   * Starts the background batches of one step through the parent's task book (`task-book.ts`): an object of their
   * own supervises them (`batches.ts`), and the book reports each task's end to `notify`.
   */
  start(batches: BackgroundBatch[]): void;
  /** The tree's root (this agent's own id for a root), which counts the tree's `maxAgents` and its depth. */
  root: string;
  /** A child cancelled before and resumed now may start background tasks again (its book was stopped). */
  reopen(childId: string): void;
  /** Records finished foreground tasks in the parent's task book, for `task_status` (a journaled message). */
  record(results: TaskResult[]): void;
  /** The parent's task book: a task's record, and its cancel (journaled calls). */
  status(taskId: string): restate.RestatePromise<BookedTask | null>;
  cancel(taskId: string): restate.RestatePromise<'cancelled' | 'finished' | 'unknown'>;
  /** Takes finished children for a resume, each refused where the book no longer keeps it (a journaled call). */
  resume(agentIds: string[]): restate.RestatePromise<(ResumeRefusal | null)[]>;
  /** The tree's slot counter (`agent-slots.ts`), unless `maxAgents` is `Infinity`: slots for batches of these sizes. */
  acquire(sizes: number[], max: number): restate.RestatePromise<SlotGrant[]>;
  release(n: number): void;
  supervision: HostedSupervision;
  /** The tree's profiles, and the profiles this agent was built from (root first; none for a root). */
  profiles: SubagentConfigs;
  lineage: readonly string[];
  /** Checks that a child of this agent can be built from a profile (throws the refusal otherwise). */
  check(profile: string): void;
  /** Charges what a foreground child spent to the turn's account (`HostedAgent.charge`). */
  charge(spent: Spent): void;
  /** Takes up the approvals remembered in the tree meanwhile (a foreground child's, answered "always"). */
  relearn(): Promise<void>;
  /** A foreground batch escalated a failure: the turn ends with this error at its next step. */
  escalate(error: SerializedError): void;
}

/**
 * The embedded runtime's `agent`, `swarm`, `task_status` and `task_cancel` tools (the same schemas, descriptions and
 * result texts), hosted: a task is a child object keyed `<parent>/<task id>`, a foreground batch runs in the
 * parent's invocation (`runBatches`, with the other batches of its step), a background one is started, looked up
 * and cancelled through the parent's task book. Profiles are not hosted (each child is built by the object's
 * `agent(id)`).
 */
export function hostedSubagentTools(tree: HostedTree): AnyTool[] {
  const concurrency = tree.supervision.concurrency ?? 4;
  const maxDepth = tree.supervision.maxDepth ?? 3;
  const maxAgents = countedLimit(tree.supervision.maxAgents);
  const { strategy, intensity, onFailure } = tree.supervision;
  const treeStrategy: StrategyOptions = {
    ...(strategy ? { strategy } : {}),
    ...(intensity ? { intensity } : {}),
    ...(onFailure ? { onFailure } : {}),
  };
  /**
   * Takes slots for the batches asked for together from the tree's counter (unless `maxAgents` is `Infinity`: one
   * journaled call for all of them); a batch the tree has no room for is refused (`tooManyAgents`). The accepted
   * ones, in order; the resumed children among them may start background tasks again.
   */
  const accept = async <T, R>(asked: Asked<Together<T>, R>[]): Promise<Asked<Together<T>, R>[]> => {
    const sizes = asked.map(({ value }) => value.tasks.length);
    const grants = maxAgents === undefined ? undefined : await tree.scope.wait(tree.acquire(sizes, maxAgents));
    const accepted = asked.filter((one, i) => {
      const grant = grants?.[i];
      if (maxAgents === undefined || grant?.granted) return true;
      one.reject(tooManyAgents(sizes[i] ?? 0, maxAgents, grant?.open ?? 0));
      return false;
    });
    for (const one of accepted) for (const childId of one.value.resumed) tree.reopen(childId);
    return accepted;
  };
  // The foreground batches asked for in one tick (a step's `agent` and `swarm` calls start together) run together.
  const runTogether = perTick<Together<Omit<Batch, 'done'>>, TaskResult[]>((asked) => {
    serially(tree.scope, async () => {
      const accepted = await accept(asked);
      const release = maxAgents === undefined ? undefined : tree.release;
      // What they settled with goes to the parent's book in one message once all are over (the turn's next
      // step cannot come sooner), so `task_status` knows a finished foreground task.
      const finished: TaskResult[] = [];
      const batches = accepted.map(({ value: { resumed: _resumed, ...batch }, resolve }) => ({
        ...batch,
        done: (results: TaskResult[]) => {
          finished.push(...results);
          resolve(results);
        },
      }));
      // The children are listed in the parent's state while they run (its shared `foreground` handler), so a
      // client can find them, and their questions, from the ingress alone: a child's key is in the parent's
      // journal only. One state write and one clear per step that runs foreground batches.
      const { ctx } = tree.scope;
      ctx.set(
        FOREGROUND,
        accepted.flatMap((one) => one.value.tasks.map((task) => task.agentId)),
      );
      try {
        await runBatches(tree.scope, tree.startChild, batches, release, tree.charge);
      } finally {
        ctx.clear(FOREGROUND);
      }
      if (finished.length > 0) tree.record(finished);
      // The tree's permissions are one: what a child was allowed "always" holds in this turn's next steps.
      await tree.relearn();
    }).catch((error) => {
      for (const one of asked) one.reject(error);
    });
  });
  // The background batches asked for together (a step's calls) start together: one slot call, one message to the
  // parent's book, one invocation of the batch object for all of them.
  const startTogether = inOneEffect<Together<BackgroundBatch>>(tree.scope, async (asked) => {
    const accepted = await accept(asked);
    if (accepted.length > 0) tree.start(accepted.map(({ value: { tasks, options } }) => ({ tasks, options })));
    for (const one of accepted) one.resolve();
  });
  const host: SubagentHost = {
    profileNames: tree.profiles.names,
    profileDescription: (name) => tree.profiles.description(name),
    async run(callerId, requests, background, _signal, join, callId, supervision) {
      // A batch's own supervision overrides the tree's field by field.
      const strategy = checkStrategy({ ...treeStrategy, ...supervision }, 'swarm');
      const tasks = tasksOf(callerId, requests, tree, callId ?? 'call', maxDepth, join);
      const resumed = requests.flatMap((request) => (request.agentId === undefined ? [] : [request.agentId]));
      if (resumed.length > 0) {
        const refusals = await serially(tree.scope, () => tree.scope.wait(tree.resume(resumed)));
        refusals.forEach((why, i) => {
          if (why) throw new SpawnRefused(resumeRefused(resumed[i] as string, why));
        });
      }
      const { maxRestarts, restartDelayMs } = tree.supervision;
      const options: BatchOptions = {
        concurrency,
        ...(join ? { join } : {}),
        ...(maxRestarts === undefined ? {} : { maxRestarts }),
        ...(restartDelayMs === undefined ? {} : { restartDelayMs }),
        supervision: strategy,
      };
      if (background) {
        await startTogether({ tasks, options, resumed });
        return { taskIds: tasks.map((task) => task.taskId) };
      }
      const escalate = (failure: EscalatedFailure) => tree.escalate(escalationError(failure));
      const results = await runTogether({ tasks, options, escalate, resumed });
      return { taskIds: tasks.map((task) => task.taskId), results };
    },
    // The caller is the turn's own agent: its book holds its tasks only.
    async status(_callerId, taskId) {
      const found = await serially(tree.scope, () => tree.scope.wait(tree.status(taskId)));
      if (!found) return undefined;
      return {
        status: found.status,
        agentId: found.agentId,
        ...(found.text === undefined ? {} : { text: found.text }),
      };
    },
    cancel: (_callerId, taskId) => serially(tree.scope, () => tree.scope.wait(tree.cancel(taskId))),
  };
  return subagentTools(host);
}

/** A batch asked for, with the finished children it resumes. */
type Together<T> = T & { tasks: HostedTask[]; resumed: string[] };

/** One request gathered by `perTick`, settled by its flush. */
interface Asked<T, R> {
  value: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * Gathers what is asked for in one tick (a step's tool calls start together) and hands it to `flush` at once, in
 * the order asked: the same order on every replay.
 */
function perTick<T, R>(flush: (asked: Asked<T, R>[]) => void): (value: T) => Promise<R> {
  let waiting: Asked<T, R>[] | undefined;
  return (value) =>
    new Promise<R>((resolve, reject) => {
      const asked = { value, resolve, reject };
      if (waiting) {
        waiting.push(asked);
        return;
      }
      waiting = [asked];
      queueMicrotask(() => {
        const all = waiting ?? [];
        waiting = undefined;
        flush(all);
      });
    });
}

/**
 * Runs the requests asked for while its effect waits for its place in the invocation's queue as one effect: the
 * place is taken by the first request, where it asks (so the effect keeps the place a lone request's had, before
 * the step's journaled tool calls), and the effect takes every request asked for by the time it runs.
 */
function inOneEffect<T>(
  scope: JournalScope,
  run: (asked: Asked<T, void>[]) => Promise<void>,
): (value: T) => Promise<void> {
  let open: Asked<T, void>[] | undefined;
  return (value) =>
    new Promise<void>((resolve, reject) => {
      const asked = { value, resolve, reject };
      if (open) {
        open.push(asked);
        return;
      }
      const group = [asked];
      open = group;
      serially(scope, () => {
        open = undefined;
        return run(group);
      }).catch((error) => {
        for (const one of group) one.reject(error);
      });
    });
}

/**
 * A batch's tasks, named from the turn and the call (`t<turn>.<call>`, and `.<i>` in a swarm), or refused: no
 * tasks, a join that cannot be met, a depth past `maxDepth`, a profile that cannot be built, a resumed agent that is
 * not this agent's. A new child carries the profiles it is built from (this agent's,
 * then its own); a resumed one keeps its own.
 */
function tasksOf(
  callerId: string,
  requests: readonly SubagentRequest[],
  tree: HostedTree,
  callId: string,
  maxDepth: number,
  join: JoinPolicy | undefined,
): HostedTask[] {
  if (requests.length === 0) throw new SpawnRefused('No tasks given');
  if (join && (join.kind === 'first' || join.kind === 'quorum')) {
    if (!Number.isInteger(join.k) || join.k < 1 || join.k > requests.length) {
      throw new SpawnRefused(`Refused: ${join.kind}(${join.k}) needs k between 1 and the ${requests.length} task(s)`);
    }
  }
  // A child's key is its parent's and `/<task>`; the root's own id may contain `/` too.
  const depth = callerId.split('/').length - tree.root.split('/').length + 1;
  if (depth > maxDepth) {
    throw new SpawnRefused(
      `Refused: subagents may nest at most ${maxDepth} deep (maxDepth), and this one would be at ` +
        `depth ${depth}. Do the work yourself.`,
    );
  }
  const single = requests.length === 1;
  const { turn } = tree;
  return requests.map((request, index) => {
    const taskId = single ? `t${turn}.${callId}` : `t${turn}.${callId}.${index}`;
    if (request.agentId === undefined) {
      const profile = request.profile ?? 'default';
      tree.check(profile);
      const profiles = [...tree.lineage, profile];
      return { taskId, agentId: `${callerId}/${taskId}`, prompt: request.prompt, profiles };
    }
    // A resume continues the child object's history: only a child of this agent.
    const own = request.agentId.startsWith(`${callerId}/`) && !request.agentId.slice(callerId.length + 1).includes('/');
    if (!own) throw new SpawnRefused(resumeRefused(request.agentId, 'not-own'));
    return { taskId, agentId: request.agentId, prompt: request.prompt };
  });
}
