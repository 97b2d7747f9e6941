import * as restate from '@restatedev/restate-sdk';
import { z } from 'zod';
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
import { type AnyTool, defineTool, type SupervisionOptions, type TaskResult } from '../index.js';
import { countedLimit, type SlotGrant } from './agent-slots.js';
import type { BatchOptions, HandOff, HostedBudget, HostedTask, RunAnswer, RunRequest, Spent } from './hand-off.js';
import { type JournalScope, serially } from './journal.js';
import { type Batch, runBatches, type StartedTask } from './swarm.js';
import type { BookBatch, BookedTask, BookStart } from './task-book.js';

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
  /** Calls a child object's `run` handler (a foreground task). */
  call(childId: string, request: RunRequest): restate.InvocationPromise<RunAnswer>;
  /** Cancels a foreground task whose child answered `waiting` (through the child's control object). */
  cancelWaiting(childId: string, handOffTo: string): void;
  /**
   * Starts a background batch through the parent's task book (`task-book.ts`): its own object supervises it
   * (`batches.ts`), and the book reports each task's end to `notify`.
   */
  start(batch: Omit<BookBatch, 'root' | 'budget'>): void;
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
  /** The tree's slot counter (`agent-slots.ts`), unless `maxAgents` is `Infinity`. */
  acquire(n: number, max: number): restate.RestatePromise<SlotGrant>;
  release(n: number): void;
  supervision: HostedSupervision;
  /** The tree's profiles, and the profiles this agent was built from (root first; none for a root). */
  profiles: SubagentConfigs;
  lineage: readonly string[];
  /** Checks that a child of this agent can be built from a profile (throws the refusal otherwise). */
  check(profile: string): void;
  /** The turn's accounts, which a foreground child's turn opens under (undefined: no budget covers it). */
  budgetLeft(): HostedBudget | undefined;
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
   * Takes slots for batches of these sizes from the tree's counter (unless `maxAgents` is `Infinity`: one journaled
   * call each, awaited together); a batch the tree has no room for is refused (`tooManyAgents`).
   */
  const acquire = async (sizes: number[]): Promise<(SpawnRefused | undefined)[]> => {
    if (maxAgents === undefined) return sizes.map(() => undefined);
    const grants = await tree.scope.wait(restate.RestatePromise.all(sizes.map((n) => tree.acquire(n, maxAgents))));
    return grants.map((grant, i) => (grant.granted ? undefined : tooManyAgents(sizes[i] ?? 0, maxAgents, grant.open)));
  };
  // Each attempt of a task has an awakeable of its own, for a hand-off that comes after the call has answered.
  const startChild =
    (parentId: string) =>
    (task: HostedTask, fresh: boolean): StartedTask => {
      const handOff = tree.scope.ctx.awakeable<HandOff>();
      const budget = tree.budgetLeft();
      const call = tree.call(task.agentId, {
        parentId,
        taskId: task.taskId,
        prompt: task.prompt,
        root: tree.root,
        ...(task.profiles ? { profiles: task.profiles } : {}),
        ...(fresh ? { fresh } : {}),
        ...(budget ? { budget } : {}),
        handOffTo: handOff.id,
      });
      return { call, handOff: handOff.promise, cancelWaiting: () => tree.cancelWaiting(task.agentId, handOff.id) };
    };
  // The foreground batches asked for in one tick (a step's `agent` and `swarm` calls start together) run together.
  let waiting: { batch: Batch; resumed: string[]; fail(error: unknown): void }[] | undefined;
  const runTogether = (callerId: string, batch: Omit<Batch, 'done'>, resumed: string[]) =>
    new Promise<TaskResult[]>((resolve, reject) => {
      const entry = { batch: { ...batch, done: resolve }, resumed, fail: reject };
      if (waiting) {
        waiting.push(entry);
        return;
      }
      waiting = [entry];
      queueMicrotask(() => {
        const entries = waiting ?? [];
        waiting = undefined;
        serially(tree.scope, async () => {
          const refusals = await acquire(entries.map((one) => one.batch.tasks.length));
          const accepted = entries.filter((one, i) => {
            const refused = refusals[i];
            if (refused) one.fail(refused);
            return !refused;
          });
          for (const one of accepted) for (const childId of one.resumed) tree.reopen(childId);
          const release = maxAgents === undefined ? undefined : tree.release;
          // What they settled with goes to the parent's book in one message once all are over (the turn's next
          // step cannot come sooner), so `task_status` knows a finished foreground task.
          const finished: TaskResult[] = [];
          const batches = accepted.map(({ batch }) => ({
            ...batch,
            done: (results: TaskResult[]) => {
              finished.push(...results);
              batch.done(results);
            },
          }));
          // The children are listed in the parent's state while they run (its shared `foreground` handler), so a
          // client can find them, and their questions, from the ingress alone: a child's key is in the parent's
          // journal only. One state write and one clear per step that runs foreground batches.
          const { ctx } = tree.scope;
          ctx.set(
            FOREGROUND,
            accepted.flatMap((one) => one.batch.tasks.map((task) => task.agentId)),
          );
          try {
            await runBatches(tree.scope, startChild(callerId), batches, release, tree.charge);
          } finally {
            ctx.clear(FOREGROUND);
          }
          if (finished.length > 0) tree.record(finished);
          // The tree's permissions are one: what a child was allowed "always" holds in this turn's next steps.
          await tree.relearn();
        }).catch((error) => {
          for (const one of entries) one.fail(error);
        });
      });
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
        await serially(tree.scope, async () => {
          const [refused] = await acquire([tasks.length]);
          if (refused) throw refused;
          for (const childId of resumed) tree.reopen(childId);
          tree.start({ tasks, options });
        });
        return { taskIds: tasks.map((task) => task.taskId) };
      }
      const escalate = (failure: EscalatedFailure) => tree.escalate(escalationError(failure));
      const results = await runTogether(callerId, { tasks, options, escalate }, resumed);
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

/**
 * Starts a background subagent: a message to another object of this kind (journaled, so sent exactly once). Its
 * task id is derived from the parent, the turn and the model's call id, never from a clock or a random source, so a
 * replay sends the same message to the same child.
 */
export function subagentTool(
  scope: JournalScope,
  turn: number,
  start: (request: Omit<BookStart, 'root'>) => void,
): AnyTool {
  return defineTool({
    name: 'start_subagent',
    description:
      'Starts a subagent on a task in the background. Its result arrives later as a <notification> message; ' +
      'do not wait for it in this turn.',
    schema: z.object({ prompt: z.string().describe('The task, complete and self-contained') }),
    async execute({ prompt }, toolCtx) {
      const taskId = `t${turn}.${toolCtx.toolCallId}`;
      const childId = `${toolCtx.agentId}/${taskId}`;
      // In the invocation's effect queue: the send is a journal entry too, and its position must replay.
      await serially(scope, async () => start({ taskId, agentId: childId, prompt }));
      return `Started task ${taskId} (agent ${childId}). Its result will arrive as a notification.`;
    },
  });
}
