// Over 400 lines: Tree is where the supervisor machines' effects land, and each needs the registry, the task book
// and the archive together; the records themselves live in the modules it joins.
import type { AnyActorRef } from 'xstate';
import type { OwnerNotify, PrepareParams, SettleParams, SupervisorInput } from '../../../machines/supervisor/index.js';
import {
  addUsage,
  type BatchSpec,
  type BudgetLimits,
  emptyUsage,
  INTERRUPTED_TEXT,
  type JoinPolicy,
  lastAssistant,
  type Message,
  type Model,
  ModelError,
  type SerializedError,
  type TaskStatus,
  type TurnStopReason,
  textOf,
  type Usage,
  type UserMessage,
} from '../../protocol/index.js';
import type { AnyTool } from '../../tools/index.js';
import { checkLimits } from '../budget/budget.js';
import type { EventBus } from '../env/bus.js';
import { AgentEnv, type AgentSettings, type RunResult } from '../env/env.js';
import type { Journaling } from '../env/recording.js';
import { type AnyActorSystem, registerEnv, unregisterEnv } from '../env/registry.js';
import { Transcript } from '../env/transcript.js';
import { batchAccount } from '../step/turn-budget.js';
import { ApprovalRouting, type ApprovalTarget } from './approval-routing.js';
import { type BatchOptions, newId, planTasks, refusalsOf } from './batch-plan.js';
import { type FinishedAgent, HistoryArchive } from './history-archive.js';
import { KeptAgents } from './kept.js';
import { NodeRegistry, type Owner, TreeNode } from './nodes.js';
import { NotificationOutbox } from './notification-outbox.js';
import { SubagentProfiles } from './subagent-profiles.js';
import {
  SpawnRefused,
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  type TaskResult,
} from './subagent-tools.js';
import { type Limits, limitsOf, type SupervisionOptions } from './supervision-options.js';
import { TaskBook, type TaskRecord } from './tasks.js';
import { TreeUsage } from './usage.js';

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

const trees = new WeakMap<AnyActorSystem, Tree>();

/** The tree of an actor system: the supervisor machines' effects find their runtime this way. */
export function treeOf(system: AnyActorSystem): Tree {
  const tree = trees.get(system);
  if (!tree) throw new Error('No supervision tree in this actor system');
  return tree;
}

/** An agent went back to idle: its tree (an agent without subagents has none) hears it, with its last turn's end. */
export function agentIdle(
  system: AnyActorSystem,
  agentId: string,
  stopReason: TurnStopReason | undefined,
  error: SerializedError | undefined,
): void {
  trees.get(system)?.idle(agentId, stopReason, error);
}

/**
 * Where task lifecycle facts happen, for whoever must keep them (a session journal): a batch opened, a task's
 * agent about to run it (each attempt), a task settled. `resumeBatch` lets a restored tree give a tool call that
 * runs again the tasks it had started before a restart instead of new ones.
 */
export interface TreeObserver {
  /** The journal of an agent of the tree about to be built (a task's, each attempt, or a member's). */
  agentJournal(): Journaling;
  batchOpened(owner: Owner, batch: OpenedBatch): void;
  taskStarted(env: AgentEnv, task: Readonly<TaskRecord>, attempt: number): void;
  taskSettled(task: Readonly<TaskRecord>, result: TaskResult, error?: SerializedError): void;
  /**
   * Stores what it was told, and runs `then` (which resolves a promise about a fact) once it is stored; `now`: at
   * once (see JournalWriter.acknowledge).
   */
  acknowledge?(now?: boolean, then?: () => void): void;
  resumeBatch?(owner: Owner, callId: string, background: boolean): StartedBatch | undefined;
}

/** A batch as it was opened: what a journal needs to start its tasks again. */
export interface OpenedBatch {
  batchId: string;
  callId?: string;
  background: boolean;
  join?: JoinPolicy;
  budget?: BudgetLimits;
  tasks: Array<{ taskId: string; agentId: string; profile: string; prompt: string }>;
}

export interface StartedBatch {
  batchId: string;
  taskIds: string[];
  done: Promise<TaskResult[]>;
}

/**
 * The runtime of one supervision tree (one actor system): it checks the limits and records tasks when a batch
 * starts, builds each child's runtime before its supervisor spawns it, settles tasks, and releases stopped
 * agents into the archive. The records live in the modules it joins (nodes, task book, archive, approvals,
 * usage); the supervisor machines reach it through the actor system, like agents reach their AgentEnv.
 */
export class Tree implements SubagentHost {
  readonly limits: Limits;
  readonly tools: AnyTool[];
  private readonly profiles: SubagentProfiles;
  private readonly nodes = new NodeRegistry();
  private readonly tasks: TaskBook;
  private readonly archive: HistoryArchive;
  private readonly approvals: ApprovalRouting;
  private readonly usageAccounts: TreeUsage;
  private readonly kept: KeptAgents;
  private readonly outbox = new NotificationOutbox();
  /** Configs of members (`supervisor.agent()`) waiting to be spawned. */
  private readonly pendingMembers = new Map<string, { settings: AgentSettings; messages?: readonly Message[] }>();
  private rootOwnerId?: string;
  private system?: AnyActorSystem;
  /** What each batch the subagent tools start may spend (`subagents.budget`). */
  private readonly batchBudget?: BudgetLimits;
  /** A session journal's recorder, when the tree is durable. */
  observer?: TreeObserver;
  /** Who waits for a task's result (`supervisor.result`): told once its settle is stored. */
  private readonly awaited = new Map<string, Array<(result: TaskResult) => void>>();

  constructor(
    readonly bus: EventBus,
    options: SupervisionOptions,
  ) {
    this.limits = limitsOf(options);
    this.profiles = new SubagentProfiles(options.profiles ?? {}, () => this.tools);
    this.tools = subagentTools(this);
    this.tasks = new TaskBook(this.limits.keepHistory);
    this.archive = new HistoryArchive(this.limits.keepHistory);
    this.kept = new KeptAgents(this.limits.keepFinished);
    this.approvals = new ApprovalRouting(bus);
    this.usageAccounts = new TreeUsage(bus, this.nodes);
    if (options.budget) this.batchBudget = checkLimits(options.budget, 'subagents.budget');
    bus.on('agent_start', (event) => {
      const node = this.nodes.node(event.agentId);
      if (node?.profile === 'member') this.tellSupervisor(node, 'MEMBER.BUSY');
    });
  }

  /** Background results on their way to their owners (see NotificationOutbox): a session is idle only at 0. */
  get undelivered(): number {
    return this.outbox.undelivered;
  }

  get profileNames(): string[] {
    return this.profiles.names;
  }

  profileDescription(name: string): string | undefined {
    return this.profiles.description(name);
  }

  attach(system: AnyActorSystem): void {
    this.system = system;
    trees.set(system, this);
  }

  supervisorInput(ownerId: string, notifyOwner: boolean): SupervisorInput {
    return {
      ownerId,
      notifyOwner,
      maxRestarts: this.limits.maxRestarts,
      restartDelayMs: this.limits.restartDelayMs,
    };
  }

  /** A root agent (`createAgent` with subagents): depth 0, its own actor. */
  addRoot(env: AgentEnv, actor: AnyActorRef): TreeNode {
    const node = new TreeNode(env, 0, 'root', undefined, actor);
    this.addNode(node);
    return node;
  }

  /** The owner of a `createSupervisor()` tree's top-level tasks and members. */
  setRootOwner(owner: Owner): void {
    this.rootOwnerId = owner.id;
    this.nodes.addOwner(owner);
  }

  /** A live agent of the tree (running, kept alive or a member), not yet released. */
  node(agentId: string): TreeNode | undefined {
    const node = this.nodes.node(agentId);
    return node?.released ? undefined : node;
  }

  private addNode(node: TreeNode): void {
    this.nodes.add(node);
  }

  /** A live agent of the tree went back to idle: a member tells its supervisor, a task's agent may be finished. */
  idle(agentId: string, stopReason: TurnStopReason | undefined, error: SerializedError | undefined): void {
    const node = this.node(agentId);
    if (!node) return;
    node.lastStop = { stopReason, error };
    if (node.profile === 'member') this.tellSupervisor(node, 'MEMBER.IDLE');
    else this.checkFinished(node);
  }

  /** A member's run starts or ends: its supervisor hears it after the member's transition has settled. */
  private tellSupervisor(node: TreeNode, type: 'MEMBER.BUSY' | 'MEMBER.IDLE'): void {
    queueMicrotask(() => {
      const supervisor = node.parent;
      if (!node.released && supervisor?.getSnapshot().status === 'active') supervisor.send({ type, agentId: node.id });
    });
  }

  // ---- SubagentHost: what the tools ask ----

  async run(
    callerId: string,
    requests: SubagentRequest[],
    background: boolean,
    signal: AbortSignal,
    join?: JoinPolicy,
    callId?: string,
  ): Promise<{ taskIds: string[]; results?: TaskResult[] }> {
    const owner = this.nodes.owner(callerId);
    if (!owner) throw new SpawnRefused(`Agent ${callerId} cannot start subagents here`);
    const batch =
      (callId === undefined ? undefined : this.observer?.resumeBatch?.(owner, callId, background)) ??
      this.startBatch(owner, requests, {
        background,
        ...(join ? { join } : {}),
        ...(callId === undefined ? {} : { callId }),
        ...(this.batchBudget ? { budget: this.batchBudget } : {}),
      });
    if (background) return { taskIds: batch.taskIds };
    // The caller was interrupted (its tool call aborted): its foreground children are stopped.
    const cancel = () =>
      queueMicrotask(() => {
        if (this.nodes.owner(callerId) === owner) owner.delegate({ type: 'CANCEL_BATCH', batchId: batch.batchId });
      });
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    try {
      return { taskIds: batch.taskIds, results: await batch.done };
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  status(callerId: string, taskId: string): { status: TaskStatus; agentId: string; text?: string } | undefined {
    const record = this.tasks.get(taskId);
    if (!record || record.ownerId !== callerId) return undefined;
    return { status: record.status, agentId: record.agentId, ...(record.result ? { text: record.result.text } : {}) };
  }

  cancel(callerId: string, taskId: string): 'cancelled' | 'finished' | 'unknown' {
    const record = this.tasks.get(taskId);
    if (!record || record.ownerId !== callerId) return 'unknown';
    return this.cancelTask(taskId) ? 'cancelled' : 'finished';
  }

  // ---- what a root supervisor asks ----

  /** A task of the tree by id, while its record is kept. */
  task(taskId: string): Readonly<TaskRecord> | undefined {
    return this.tasks.get(taskId);
  }

  /** Runs `then` once what the tree's journal was told is stored; at once without a journal. */
  stored(then: () => void): void {
    if (this.observer?.acknowledge) this.observer.acknowledge(false, then);
    else then();
  }

  /** A task's result once its settle is stored (see settleTask); undefined for a task whose record is gone. */
  result(taskId: string): Promise<TaskResult> | undefined {
    const record = this.tasks.get(taskId);
    if (!record) return undefined;
    const settled = record.result;
    // Settled in this tick, its record may still be buffered.
    if (settled) return new Promise((resolve) => this.stored(() => resolve(settled)));
    return new Promise((resolve) => {
      const awaited = this.awaited.get(taskId);
      if (awaited) awaited.push(resolve);
      else this.awaited.set(taskId, [resolve]);
    });
  }

  /** Cancels an open task of any owner; false if it is unknown or has settled. */
  cancelTask(taskId: string): boolean {
    const record = this.tasks.get(taskId);
    if (record?.status !== 'running') return false;
    this.nodes.owner(record.ownerId)?.delegate({ type: 'CANCEL', taskId, batchId: record.batchId });
    return true;
  }

  /** Cancels a batch's open tasks, queued ones first so that none starts only to be stopped; false if none is open. */
  cancelBatch(batchId: string): boolean {
    const open = this.tasks.openIn(batchId);
    for (const record of open.sort((a, b) => b.index - a.index)) this.cancelTask(record.taskId);
    return open.length > 0;
  }

  /** Whom a task agent answers to: the owner that started it (alive, or recorded with its archived history). */
  ownerOf(agentId: string): Owner | undefined {
    const ownerId = this.node(agentId)?.env.parentId ?? this.archive.get(agentId)?.ownerId;
    return ownerId === undefined ? undefined : this.nodes.owner(ownerId);
  }

  /** Registers a member (`supervisor.agent()`) that the root supervisor is about to adopt. */
  addMember(agentId: string, settings: AgentSettings, messages: readonly Message[] | undefined): void {
    if (this.nodes.node(agentId)) throw new Error(`An agent with id "${agentId}" already exists in this tree`);
    this.pendingMembers.set(agentId, { settings, ...(messages ? { messages } : {}) });
  }

  /** The history of an agent: alive, or archived after it was stopped. */
  messagesOf(agentId: string): Message[] | undefined {
    const node = this.nodes.node(agentId);
    if (node) return [...node.env.transcript.messages];
    const archived = this.archive.get(agentId);
    return archived ? [...archived.messages] : undefined;
  }

  /** A restored kept agent is alive: it is in its owner's `keepFinished` window, as it was before the restart. */
  whereIs(agentId: string): 'alive' | 'archived' | 'unknown' {
    if (this.nodes.node(agentId) || this.archive.isKept(agentId)) return 'alive';
    return this.archive.has(agentId) ? 'archived' : 'unknown';
  }

  // ---- starting batches ----

  /** Checks the hard limits, records the tasks and hands the batch to the owner's supervisor. */
  startBatch(owner: Owner, requests: SubagentRequest[], options: BatchOptions): StartedBatch {
    const concurrency = refusalsOf(owner, requests, options, this.limits, this.tasks.open);
    const join = options.join;
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
    const done = this.tasks.openBatch(batchId, records);
    if (options.background) owner.openBackground += records.length;
    this.observer?.batchOpened(owner, {
      batchId,
      background: options.background,
      ...(options.callId === undefined ? {} : { callId: options.callId }),
      ...(join && join.kind !== 'all' ? { join } : {}),
      ...(options.budget ? { budget: options.budget } : {}),
      tasks: specs.map((spec, i) => ({
        taskId: spec.taskId,
        agentId: spec.agentId,
        profile: records[i]?.profile ?? 'default',
        prompt: spec.prompt,
      })),
    });
    const batch: BatchSpec = { batchId, background: options.background, concurrency, tasks: specs };
    if (join && join.kind !== 'all') batch.join = join;
    owner.delegate({ type: 'SPAWN', batch });
    return { batchId, taskIds: records.map((r) => r.taskId), done };
  }

  /** A finished child of this owner: alive and idle, or archived. */
  private resumable(owner: Owner, agentId: string): { profile: string; messages?: readonly Message[] } {
    const node = this.node(agentId);
    if (node) {
      if (node.env.parentId !== owner.id) throw new SpawnRefused(`Agent ${agentId} is not one of your subagents`);
      this.assertNoOpenTask(agentId, node.task !== undefined);
      return { profile: node.profile, messages: [...node.env.transcript.messages] };
    }
    const archived = this.archive.get(agentId);
    if (!archived) throw new SpawnRefused(`No finished subagent "${agentId}" is known (it may be too old to resume)`);
    if (archived.ownerId !== owner.id) throw new SpawnRefused(`Agent ${agentId} is not one of your subagents`);
    this.assertNoOpenTask(agentId, false);
    return { profile: archived.profile, messages: archived.messages };
  }

  /**
   * An agent runs one task at a time. A resume still queued (or sent to a supervisor that has not started it yet)
   * has not reached the agent: only the task book knows of it, and a second resume would rebuild the agent under
   * the first one's task.
   */
  private assertNoOpenTask(agentId: string, running: boolean): void {
    if (running || this.tasks.openTaskOf(agentId) !== undefined) {
      throw new SpawnRefused(`Agent ${agentId} is still running a task; wait for its result`);
    }
  }

  // ---- the supervisor machine's effects ----

  /**
   * A task starts (or starts again after a restart): its agent's runtime is built before the task actor spawns
   * it. A kept agent of an earlier task (a resume) is released from that task first and rebuilt here from its
   * history. This is where a task's "started" fact happens.
   */
  prepareTask(ownerId: string, taskActor: AnyActorRef, params: PrepareParams): void {
    const record = this.tasks.get(params.task.taskId);
    const owner = this.nodes.owner(ownerId);
    if (!record || !owner || !this.system) return;
    record.attempt = params.attempt;
    this.kept.forget(ownerId, params.task.agentId);
    let node = this.nodes.node(params.task.agentId);
    if (node) {
      const previous = node;
      this.finalizeRelease(previous);
      // The earlier task actor lets go of it (its release finds the agent no longer its own).
      if (previous.parent !== taskActor) queueMicrotask(() => previous.parent?.send({ type: 'RELEASE' }));
      node = undefined;
    }
    if (!node) {
      const archived = this.archive.get(params.task.agentId);
      const messages = record.base ?? (params.attempt === 0 ? archived?.messages : undefined);
      const env = new AgentEnv(
        params.task.agentId,
        owner.id,
        this.profiles.childSettings(owner.settings, record.profile),
        new Transcript(messages),
        this.bus,
        this.observer?.agentJournal(),
        record.budget,
      );
      node = new TreeNode(env, owner.depth + 1, record.profile, taskActor, undefined);
      if (archived && record.base) {
        addUsage(env.totalUsage, archived.usage);
        addUsage(node.subtreeUsage, archived.subtreeUsage);
      }
      this.archive.delete(params.task.agentId);
      registerEnv(this.system, env);
      this.addNode(node);
    }
    node.task = record;
    node.lastStop = undefined;
    node.lastOutput = undefined;
    const target = node;
    this.observer?.taskStarted(node.env, record, params.attempt);
    node.env.pending.set(params.task.taskId, {
      startIndex: node.env.transcript.length,
      resolve: (result: RunResult) => {
        target.lastOutput = result.output;
      },
    });
    this.bus.publish(owner.origin, {
      type: 'subagent_start',
      taskId: record.taskId,
      childId: record.agentId,
      batchId: record.batchId,
      profile: record.profile,
      background: record.background,
      ...(params.attempt > 0 ? { attempt: params.attempt } : {}),
    });
  }

  /** A member of the root supervisor is about to be spawned: its runtime is built from its config. */
  prepareMember(agentId: string, supervisor: AnyActorRef): void {
    const pending = this.pendingMembers.get(agentId);
    const owner = this.nodes.owner(this.rootOwnerId ?? '');
    if (!pending || !owner || !this.system) return;
    this.pendingMembers.delete(agentId);
    const transcript = new Transcript(pending.messages);
    const env = new AgentEnv(agentId, owner.id, pending.settings, transcript, this.bus, this.observer?.agentJournal());
    registerEnv(this.system, env);
    this.addNode(new TreeNode(env, 0, 'member', supervisor, undefined));
  }

  /**
   * Records a task's end: its result, the events, a background owner's count, the waiting batch; a kept agent
   * joins its owner's keep-finished window, and the oldest beyond it are released. This is where a task's
   * "settled" fact happens, once per task.
   */
  settleTask(ownerId: string, params: SettleParams): void {
    const record = this.tasks.get(params.taskId);
    if (record?.status !== 'running') return;
    const node = this.nodes.node(params.agentId);
    const result: TaskResult = {
      taskId: params.taskId,
      agentId: params.agentId,
      status: params.status,
      text: params.text,
    };
    if (node?.task === record) {
      if (params.status === 'completed' && node.lastOutput !== undefined) result.output = node.lastOutput;
      node.task = undefined;
      if (params.kept) this.keepFinished(ownerId, node.id);
    }
    const batchDone = this.tasks.settle(record, result);
    const error = params.status === 'failed' ? node?.lastStop?.error : undefined;
    this.observer?.taskSettled(record, result, error);
    // The settle is stored before anybody hears of it, with one acknowledgement: a listener of `subagent_end` at
    // once, a swarm's caller before its results reach it, a caller of `result()` once it is stored (the settles of
    // one tick in one write).
    const awaited = this.awaited.get(record.taskId);
    this.awaited.delete(record.taskId);
    const now = this.bus.wants('subagent_end');
    if (now || batchDone || awaited) {
      const then =
        awaited &&
        (() => {
          for (const resolve of awaited) resolve(result);
        });
      if (this.observer?.acknowledge) this.observer.acknowledge(now, then);
      else then?.();
    }
    const owner = this.nodes.owner(ownerId);
    if (!owner) return;
    const usage = node ? { ...node.env.totalUsage } : emptyUsage();
    this.bus.publish(owner.origin, {
      type: 'subagent_end',
      taskId: record.taskId,
      childId: record.agentId,
      batchId: record.batchId,
      status: params.status,
      usage,
      ...(error ? { error } : {}),
    });
    if (!record.background) return;
    const delivered = () => this.delivered(owner, record.batchId, result);
    // An agent has its results when its NOTIFY arrives (see NotificationOutbox); a root supervisor's caller at once.
    if (owner instanceof TreeNode) this.toOutbox(owner, record.taskId, delivered);
    else delivered();
  }

  private toOutbox(owner: TreeNode, taskId: string, delivered: () => void): void {
    this.outbox.settled(owner.id, () => (owner.released ? undefined : owner.ref), `notify.${taskId}`, delivered);
  }

  private delivered(owner: Owner, batchId: string, result: TaskResult): void {
    const { taskId, agentId: childId, status, text } = result;
    this.bus.publish(owner.origin, { type: 'notification', taskId, childId, batchId, status, text });
    owner.openBackground--;
    if (owner instanceof TreeNode) this.checkFinished(owner);
  }

  /**
   * A background result that settled before a restart and never reached its owner, a subagent rebuilt from the
   * journal: it is open again until delivered, and goes through the outbox as a settle does (so it waits while
   * the owner's notifications are held, and joins the other results due to it in one NOTIFY).
   */
  owe(ownerId: string, batchId: string, result: TaskResult, message: UserMessage): void {
    const owner = this.node(ownerId);
    if (!owner) return;
    owner.openBackground++;
    this.toOutbox(owner, result.taskId, () => this.delivered(owner, batchId, result));
    this.outbox.notify(`notify.${result.taskId}`, message);
  }

  /**
   * The supervisor stopped a child (the stop itself runs right after this transition). Its own supervisor is
   * stopped first, so grandchildren's tasks settle; its runtime is released once the stop has run.
   */
  releaseChild(agentId: string, parent?: AnyActorRef): void {
    const node = this.nodes.node(agentId);
    // A task actor releasing an agent that a resume has since rebuilt under another task: not its own any more.
    if (!node || node.released || (parent && node.parent !== parent)) return;
    this.kept.forget(node.env.parentId ?? '', agentId);
    node.released = true;
    node.stopSubagents();
    queueMicrotask(() => this.finalizeRelease(node));
  }

  private finalizeRelease(node: TreeNode): void {
    if (this.nodes.node(node.id) !== node) return;
    node.released = true;
    for (const child of node.children ?? []) {
      const childNode = this.nodes.node(child);
      if (childNode) this.finalizeRelease(childNode);
    }
    node.env.stopped = true;
    if (this.system) unregisterEnv(this.system, node.id);
    this.nodes.remove(node);
    if (node.profile !== 'member') {
      this.archive.add(node.id, {
        messages: node.env.transcript.messages,
        usage: node.env.totalUsage,
        subtreeUsage: node.subtreeUsage,
        ownerId: node.env.parentId ?? '',
        profile: node.profile,
      });
    }
  }

  /** Keeps the background results of `ownerId` until the returned release is called (see NotificationOutbox.hold). */
  holdNotifications(ownerId: string): () => void {
    return this.outbox.hold(ownerId);
  }

  /** Delivers a background result to its owner, an agent (a root supervisor's tasks notify nobody). */
  notifyOwner(_ownerId: string, notify: OwnerNotify): void {
    // It joins the owner's next NOTIFY, with the other results due (NotificationOutbox).
    this.outbox.notify(notify.inputId, notify.message);
  }

  /**
   * A supervisor stops: every open task of its owner settles as interrupted (no notification: the owner is going
   * too), running agents are interrupted (their histories stay valid), and every agent under the owner is
   * released with its own subtree. XState stops the actors themselves right after.
   */
  stopTasks(ownerId: string): void {
    for (const record of this.tasks.openOf(ownerId)) {
      const node = this.nodes.node(record.agentId);
      if (node?.task === record && !node.released) node.ref?.send({ type: 'INTERRUPT' });
      this.settleTask(ownerId, {
        taskId: record.taskId,
        agentId: record.agentId,
        batchId: record.batchId,
        background: record.background,
        status: 'interrupted',
        text: INTERRUPTED_TEXT,
        kept: false,
      });
    }
    for (const node of [...this.nodes.values()]) {
      if (node.env.parentId === ownerId && node.profile !== 'member') this.releaseChild(node.id);
    }
  }

  /** A finished agent stays alive for a quick resume; the oldest beyond `keepFinished` are let go. */
  private keepFinished(ownerId: string, agentId: string): void {
    for (const evicted of this.kept.keep(ownerId, agentId)) {
      this.archive.retire(evicted);
      const node = this.nodes.node(evicted);
      if (!node || node.released || node.task) continue;
      // Its task actor takes the release after the transition in progress (its mailbox queues it).
      node.parent?.send({ type: 'RELEASE' });
    }
  }

  /**
   * A reopened session's finished subagents, in the order their tasks settled: each goes through its owner's
   * `keepFinished` window and the archive as it did before the restart, so the same ones are readable and
   * resumable by id (a kept one is rebuilt from its history on resume, as an archived one is).
   */
  restoreFinished(agents: readonly FinishedAgent[]): void {
    for (const { agentId, kept, archived } of agents) {
      this.kept.forget(archived.ownerId, agentId);
      if (!kept) {
        this.archive.add(agentId, archived);
        continue;
      }
      this.archive.restoreKept(agentId, archived);
      for (const evicted of this.kept.keep(archived.ownerId, agentId)) this.archive.retire(evicted);
    }
  }

  /** Stops everything: every runtime is released and every waiting batch settles. */
  shutdown(): void {
    for (const node of this.nodes.values()) {
      node.env.stopped = true;
      if (this.system) unregisterEnv(this.system, node.id);
    }
    this.nodes.clear();
    this.tasks.closeAll();
    this.outbox.close();
  }

  /**
   * A child's task is finished once it is idle with no background children of its own pending: its parent
   * supervisor then gets CHILD.DONE with the hand-off. Checked after the current transition has settled.
   */
  private checkFinished(node: TreeNode): void {
    if (!node.task || !node.parent) return;
    queueMicrotask(() => {
      const task = node.task;
      if (node.released || !task || task.status !== 'running' || node.openBackground > 0) return;
      const snapshot = node.ref?.getSnapshot();
      if (snapshot?.status !== 'active' || !snapshot.matches('idle')) return;
      const taskActor = node.parent;
      if (taskActor?.getSnapshot().status !== 'active') return;
      const { outcome, text } = handOff(node);
      taskActor.send({ type: 'CHILD.DONE', agentId: node.id, taskId: task.taskId, outcome, text });
    });
  }

  // ---- reading the tree ----

  get usage(): Usage {
    return { ...this.usageAccounts.total };
  }

  /** Usage of one agent, or of its whole subtree (released descendants included). */
  usageOf(agentId: string, scope: 'agent' | 'subtree' = 'agent'): Usage | undefined {
    const node = this.nodes.node(agentId);
    if (node) return { ...(scope === 'agent' ? node.env.totalUsage : node.subtreeUsage) };
    const archived = this.archive.get(agentId);
    if (archived) return { ...(scope === 'agent' ? archived.usage : archived.subtreeUsage) };
    return undefined;
  }

  /** The agent whose tool call waits for this answer, for routing approve / deny. */
  route(target: ApprovalTarget): AnyActorRef | undefined {
    return this.nodes.node(this.approvals.take(target))?.ref;
  }

  findAwaiting(toolCallId: string): AnyActorRef | undefined {
    const agentId = this.approvals.takeById(toolCallId);
    return agentId === undefined ? undefined : this.nodes.node(agentId)?.ref;
  }
}

/** What a finished child hands its parent: its last answer (or validated output), or why it did not finish. */
function handOff(node: TreeNode): { outcome: 'completed' | 'failed' | 'interrupted'; text: string } {
  const stop = node.lastStop?.stopReason;
  const last = textOf(lastAssistant(node.env.transcript.messages));
  if (stop === 'error') {
    const why = node.lastStop?.error?.message ?? 'unknown error';
    return { outcome: 'failed', text: `The subagent failed: ${why}` };
  }
  if (stop === 'interrupted') return { outcome: 'interrupted', text: last || 'The subagent was interrupted.' };
  if (stop === 'budget_exhausted') {
    return { outcome: 'interrupted', text: `The subagent stopped: ${node.lastStop?.error?.message ?? 'budget spent'}` };
  }
  if (node.lastOutput !== undefined) return { outcome: 'completed', text: JSON.stringify(node.lastOutput) };
  return { outcome: 'completed', text: last };
}

export type { ApprovalTarget } from './approval-routing.js';
export type { TreeNode } from './nodes.js';
export type { SubagentProfile, SupervisionOptions } from './supervision-options.js';
