import type { BatchSpec, BudgetLimits, JoinPolicy, Message, Model, StrategyOptions } from '../../protocol/index.js';
import { checkStrategy, ModelError, resumeRefused } from '../../protocol/index.js';
import type { AnyTool } from '../../tools/index.js';
import { checkLimits } from '../budget/budget.js';
import type { EventBus } from '../env/bus.js';
import type { AnyActorSystem } from '../env/registry.js';
import { batchAccount } from '../step/turn-budget.js';
import { type BatchOptions, newId, observedTasks, planTasks, refusalsOf } from './batch-plan.js';
import { TreeBook } from './book.js';
import { TreeEffects } from './effects.js';
import { type Owner, TreeNode } from './nodes.js';
import { type StartedBatch, type TreeObserver, unobserved } from './observer.js';
import { TreeRegistry } from './registry.js';
import { SubagentProfiles } from './subagent-profiles.js';
import {
  type CancelOutcome,
  SpawnRefused,
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  type TaskLookup,
  type TaskResult,
} from './subagent-tools.js';
import { type Limits, limitsOf, type SupervisionOptions } from './supervision-options.js';

/** A model for trees without one: every call fails with a clear error. */
export const missingModel: Model = {
  id: 'none',
  provider: 'none',
  // biome-ignore lint/correctness/useYield: it fails before its first event, by design.
  async *stream() {
    throw new ModelError({
      code: 'invalid_request',
      message: 'No model: give createSupervisor() a `model`, or the profile one',
    });
  },
};

/**
 * One supervision tree (one actor system), joined from three parts given to each other at construction: its
 * `registry` (who exists), its `book` (what it remembers: tasks, archive, kept agents, usage) and its `effects`
 * (what the supervision machines do through it), with the observer that keeps its facts (a session's journal, which
 * builds the tree: see Session.openTree). The tree itself is what its agents' subagent tools and its owners ask: it
 * checks the limits and records the tasks when a batch starts, and cancels tasks and batches.
 */
export class Tree implements SubagentHost {
  readonly limits: Limits;
  readonly tools: AnyTool[];
  readonly registry: TreeRegistry;
  readonly book: TreeBook;
  readonly effects: TreeEffects;
  private readonly profiles: SubagentProfiles;
  private readonly observer: TreeObserver;
  /** What each batch the subagent tools start may spend (`subagents.budget`). */
  private readonly batchBudget?: BudgetLimits;
  /** The supervision of batches that name none (strategy, intensity, failure actions). */
  private readonly supervision?: StrategyOptions;

  /**
   * `observe` makes the tree's observer from the tree (a journal restores into the tree's book and starts its
   * journaled batches through it); it is called once its bus, registry and book exist, before its effects, which
   * are given what it returns.
   */
  constructor(
    readonly bus: EventBus,
    options: SupervisionOptions,
    observe: (tree: Tree) => TreeObserver = () => unobserved,
  ) {
    this.limits = limitsOf(options);
    this.profiles = new SubagentProfiles(options.profiles ?? {}, () => this.tools);
    this.tools = subagentTools(this);
    this.registry = new TreeRegistry(bus);
    this.book = new TreeBook(this.registry, bus, this.limits);
    this.observer = observe(this);
    this.effects = new TreeEffects(this.registry, this.book, bus, this.profiles, this.limits, this.observer);
    if (options.budget) this.batchBudget = checkLimits(options.budget, 'subagents.budget');
    const { strategy, intensity, onFailure } = checkStrategy(options, 'subagents');
    if (strategy || intensity || onFailure) {
      this.supervision = {
        ...(strategy ? { strategy } : {}),
        ...(intensity ? { intensity } : {}),
        ...(onFailure ? { onFailure } : {}),
      };
    }
  }

  get profileNames(): string[] {
    return this.profiles.names;
  }

  profileDescription(name: string): string | undefined {
    return this.profiles.description(name);
  }

  attach(system: AnyActorSystem): void {
    this.registry.attach(system);
    this.effects.attach(system);
  }

  // ---- SubagentHost: what the tools ask ----

  async run(
    callerId: string,
    requests: SubagentRequest[],
    background: boolean,
    signal: AbortSignal,
    join?: JoinPolicy,
    callId?: string,
    supervision?: StrategyOptions,
  ): Promise<{ taskIds: string[]; results?: TaskResult[] }> {
    const owner = this.registry.owner(callerId);
    if (!owner) throw new SpawnRefused(`Agent ${callerId} cannot start subagents here`);
    const batch =
      (callId === undefined ? undefined : this.observer.resumeBatch(owner, callId, background)) ??
      this.startBatch(owner, requests, {
        background,
        ...(join ? { join } : {}),
        ...(callId === undefined ? {} : { callId }),
        ...(this.batchBudget ? { budget: this.batchBudget } : {}),
        ...(supervision ? { supervision } : {}),
      });
    if (background) return { taskIds: batch.taskIds };
    // The caller was interrupted (its tool call aborted): its foreground children are stopped.
    const cancel = () =>
      queueMicrotask(() => {
        if (this.registry.owner(callerId) === owner) owner.delegate({ type: 'CANCEL_BATCH', batchId: batch.batchId });
      });
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    try {
      return { taskIds: batch.taskIds, results: await batch.done };
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  status(callerId: string, taskId: string): TaskLookup {
    return this.book.status(callerId, taskId);
  }

  cancel(callerId: string, taskId: string): CancelOutcome {
    const record = this.book.tasks.get(taskId);
    if (!record || record.ownerId !== callerId) return 'unknown';
    return this.cancelTask(taskId) ? 'cancelled' : 'finished';
  }

  // ---- what a root supervisor asks ----

  /** Runs `then` once what the tree's journal was told is stored; at once without a journal. */
  stored(then: () => void): void {
    this.observer.acknowledge(false, then);
  }

  /** A task's result once its settle is stored (see TreeEffects.settleTask); undefined for a task whose record is gone. */
  result(taskId: string): Promise<TaskResult> | undefined {
    const record = this.book.tasks.get(taskId);
    if (!record) return undefined;
    const settled = record.result;
    // Settled in this tick, its record may still be buffered.
    if (settled) return new Promise((resolve) => this.stored(() => resolve(settled)));
    return this.book.waitFor(taskId);
  }

  /** Cancels an open task of any owner; false if it is unknown or has settled. */
  cancelTask(taskId: string): boolean {
    const record = this.book.tasks.get(taskId);
    if (record?.status !== 'running') return false;
    this.registry.owner(record.ownerId)?.delegate({ type: 'CANCEL', taskId, batchId: record.batchId });
    return true;
  }

  /** Cancels a batch's open tasks, queued ones first so that none starts only to be stopped; false if none is open. */
  cancelBatch(batchId: string): boolean {
    const open = this.book.tasks.openIn(batchId);
    for (const record of open.sort((a, b) => b.index - a.index)) this.cancelTask(record.taskId);
    return open.length > 0;
  }

  // ---- starting batches ----

  /** Checks the hard limits, records the tasks and hands the batch to the owner's supervisor. */
  startBatch(owner: Owner, requests: SubagentRequest[], options: BatchOptions): StartedBatch {
    const concurrency = refusalsOf(owner, requests, options, this.limits, this.book.tasks.open);
    const join = options.join;
    // A batch's own supervision overrides the tree's field by field.
    const supervision = options.supervision
      ? checkStrategy({ ...this.supervision, ...options.supervision }, 'swarm')
      : this.supervision;
    const batchId = options.ids?.batchId ?? newId('batch');
    const budget = batchAccount(
      owner instanceof TreeNode ? owner.env : undefined,
      batchId,
      options.budget,
      options.spent,
    );
    const { specs, records } = planTasks(requests, {
      owner,
      batchId,
      options,
      budget,
      profiles: this.profiles,
      parentMaxSteps: owner instanceof TreeNode ? owner.ref?.getSnapshot().context.maxSteps : undefined,
      resumable: (agentId) => this.resumable(owner, agentId),
    });
    const done = this.book.tasks.openBatch(batchId, records);
    if (options.background) owner.openBackground += records.length;
    this.observer.batchOpened(owner, {
      batchId,
      background: options.background,
      ...(options.callId === undefined ? {} : { callId: options.callId }),
      ...(join && join.kind !== 'all' ? { join } : {}),
      ...(options.budget ? { budget: options.budget } : {}),
      ...(supervision ? { supervision } : {}),
      tasks: observedTasks(specs, records),
    });
    const batch: BatchSpec = { batchId, background: options.background, concurrency, tasks: specs };
    if (join && join.kind !== 'all') batch.join = join;
    if (supervision) batch.supervision = supervision;
    // Started again from a journal: its intensity window goes on (see BatchStanding); each task's run number
    // comes with its spec.
    if (options.ids?.restarts?.length) batch.restarts = options.ids.restarts;
    owner.delegate({ type: 'SPAWN', batch });
    return { batchId, taskIds: records.map((r) => r.taskId), done };
  }

  /** Stops everything: every runtime is released and every waiting batch settles. */
  shutdown(): void {
    this.registry.clear();
    this.book.tasks.closeAll();
    this.effects.close();
  }

  /** A finished child of this owner: alive and idle, or archived. */
  private resumable(owner: Owner, agentId: string): { profile: string; messages?: readonly Message[] } {
    const node = this.registry.node(agentId);
    if (node) {
      if (node.env.parentId !== owner.id) throw new SpawnRefused(resumeRefused(agentId, 'not-own'));
      this.assertNoOpenTask(agentId, node.task !== undefined);
      return { profile: node.profile, messages: [...node.env.transcript.messages] };
    }
    const archived = this.book.archived(agentId);
    if (!archived) throw new SpawnRefused(resumeRefused(agentId, 'unknown'));
    if (archived.ownerId !== owner.id) throw new SpawnRefused(resumeRefused(agentId, 'not-own'));
    this.assertNoOpenTask(agentId, false);
    return { profile: archived.profile, messages: archived.messages };
  }

  /**
   * An agent runs one task at a time. A resume still queued (or sent to a supervisor that has not started it yet)
   * has not reached the agent: only the task book knows of it, and a second resume would rebuild the agent under
   * the first one's task.
   */
  private assertNoOpenTask(agentId: string, running: boolean): void {
    if (running || this.book.tasks.openTaskOf(agentId) !== undefined) {
      throw new SpawnRefused(resumeRefused(agentId, 'running'));
    }
  }
}

export type { ApprovalTarget } from './approval-routing.js';
export type { TreeNode } from './nodes.js';
export type { SubagentProfile, SupervisionOptions } from './supervision-options.js';
