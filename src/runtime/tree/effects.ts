import type { AnyActorRef } from 'xstate';
import type {
  BatchVerdict,
  Escalation,
  OwnerNotify,
  PrepareParams,
  SettleParams,
  SupervisorInput,
  TaskEvent,
  TaskVerdict,
} from '../../../machines/supervisor/index.js';
import {
  addUsage,
  emptyUsage,
  escalationError,
  failureClassOf,
  handOffOf,
  lastAssistant,
  type SerializedError,
  type TurnStopReason,
  taskEnd,
  textOf,
  type UserMessage,
} from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';
import { AgentEnv, type RunResult } from '../env/env.js';
import { onMicrotask } from '../env/microtask.js';
import type { AnyActorSystem } from '../env/registry.js';
import { Transcript } from '../env/transcript.js';
import type { TreeBook } from './book.js';
import { type Owner, SpawnedAgent, TreeNode } from './nodes.js';
import { NotificationOutbox } from './notification-outbox.js';
import type { TreeObserver } from './observer.js';
import type { TreeRegistry } from './registry.js';
import type { SubagentProfiles } from './subagent-profiles.js';
import type { TaskResult } from './subagent-tools.js';
import type { Limits } from './supervision-options.js';
import { escalationVerdict, type FailureInHand, verdictFact } from './verdicts.js';

type ChildDone = Extract<TaskEvent, { type: 'CHILD.DONE' }>;

const bySystem = new WeakMap<AnyActorSystem, TreeEffects>();

/** The effects of the tree an actor system runs: the supervision machines' implementations find them this way. */
export function effectsOf(system: AnyActorSystem): TreeEffects {
  const effects = bySystem.get(system);
  if (!effects) throw new Error('No supervision tree in this actor system');
  return effects;
}

/** An agent went back to idle: its tree (an agent without subagents has none) hears it, with its last turn's end. */
export function agentIdle(
  system: AnyActorSystem,
  agentId: string,
  stopReason: TurnStopReason | undefined,
  error: SerializedError | undefined,
): void {
  bySystem.get(system)?.idle(agentId, stopReason, error);
}

/**
 * What the supervision machines do to the world, for one tree: a task's agent built before its spawn (its
 * "started" fact), its settle recorded and reported (its "settled" fact), background results delivered through
 * the outbox, stopped agents released into the archive, and a finished agent's CHILD.DONE. Each reads and writes
 * the registry and the book it is given; the journal hears each fact through the observer. What runs a microtask
 * later is a bound method, never an arrow: a closure made per subagent dies with it, and a collection drops its code.
 */
export class TreeEffects {
  private readonly outbox = new NotificationOutbox();

  constructor(
    private readonly registry: TreeRegistry,
    private readonly book: TreeBook,
    private readonly bus: EventBus,
    private readonly profiles: SubagentProfiles,
    private readonly limits: Limits,
    /** Who keeps the tree's facts: its session's journal, or `unobserved`. */
    private readonly observer: TreeObserver,
  ) {
    bus.on('agent_start', (event) => {
      const node = this.registry.registered(event.agentId);
      if (node?.profile === 'member') onMicrotask(this.tellSupervisor.bind(this, node, 'MEMBER.BUSY'));
    });
  }

  /** The machines of `system` find these effects from now on. */
  attach(system: AnyActorSystem): void {
    bySystem.set(system, this);
  }

  /** Background results on their way to their owners (see NotificationOutbox): a session is idle only at 0. */
  get undelivered(): number {
    return this.outbox.undelivered;
  }

  supervisorInput(ownerId: string, notifyOwner: boolean): SupervisorInput {
    const { maxRestarts, restartDelayMs } = this.limits;
    return {
      ownerId,
      notifyOwner,
      ...(maxRestarts === undefined ? {} : { maxRestarts }),
      ...(restartDelayMs === undefined ? {} : { restartDelayMs }),
    };
  }

  /** A live agent of the tree went back to idle: a member tells its supervisor, a task's agent may be finished. */
  idle(agentId: string, stopReason: TurnStopReason | undefined, error: SerializedError | undefined): void {
    const node = this.registry.node(agentId);
    if (!node) return;
    node.lastStop = { stopReason, error };
    if (node.profile === 'member') onMicrotask(this.tellSupervisor.bind(this, node, 'MEMBER.IDLE'));
    else this.checkFinished(node);
  }

  /**
   * A task starts (or starts again after a restart): its agent's runtime is built before the task actor spawns
   * it. A kept agent of an earlier task (a resume) is released from that task first and rebuilt here from its
   * history. This is where a task's "started" fact happens.
   */
  prepareTask(ownerId: string, taskActor: AnyActorRef, params: PrepareParams): void {
    const record = this.book.tasks.get(params.task.taskId);
    const owner = this.registry.owner(ownerId);
    if (!record || !owner || !this.registry.attached) return;
    record.attempt = params.attempt;
    record.actor = taskActor;
    this.book.forgetKept(ownerId, params.task.agentId);
    const previous = this.registry.registered(params.task.agentId);
    if (previous) {
      this.finalizeRelease(previous);
      // The earlier task actor lets go of it (its release finds the agent no longer its own).
      if (previous.parent !== taskActor) onMicrotask(() => previous.parent?.send({ type: 'RELEASE' }));
    }
    const archived = this.book.archived(params.task.agentId);
    // A restart starts afresh from the task's base; a resume goes on from the history it has.
    const fresh = record.base ?? (params.attempt === 0 ? archived?.messages : undefined);
    const messages = params.resume ? (archived?.messages ?? record.history) : fresh;
    record.history = undefined;
    const spawned = new SpawnedAgent(taskActor, params.task.agentId);
    const env = new AgentEnv(
      params.task.agentId,
      owner.id,
      this.profiles.childSettings(owner.settings, record.profile),
      new Transcript(messages),
      this.bus,
      spawned,
      this.observer.agentJournal(),
      record.budget,
    );
    const node = new TreeNode(env, owner.depth + 1, record.profile, taskActor, spawned);
    if (archived && record.base) {
      addUsage(env.totalUsage, archived.usage);
      addUsage(node.subtreeUsage, archived.subtreeUsage);
    }
    this.book.unarchive(params.task.agentId);
    this.registry.register(node);
    node.task = record;
    this.observer.taskStarted(node.env, record, params.attempt);
    node.env.pending.set(params.task.taskId, {
      resolve: (result: RunResult) => {
        node.lastOutput = result.output;
      },
      outputOnly: true,
    });
    this.bus.publish(owner.origin, {
      type: 'subagent_start',
      taskId: record.taskId,
      childId: record.agentId,
      batchId: record.batchId,
      profile: record.profile,
      background: record.background,
      ...(params.attempt > 0 ? { attempt: params.attempt } : {}),
      ...(params.cause === undefined ? {} : { restartedBy: params.cause }),
    });
  }

  /** A batch's verdict on a failed run, journaled before its tasks are told. */
  verdict(decided: FailureInHand | undefined, verdict: BatchVerdict): void {
    if (decided) this.observer.verdict(verdictFact(decided, verdict));
  }

  /** A batch's verdict on one of its started tasks, to its task actor (its mailbox takes it after this transition). */
  tellTask(taskId: string, event: TaskVerdict): void {
    const record = this.book.tasks.get(taskId);
    if (record?.status === 'running') record.actor?.send(event);
  }

  /**
   * A batch escalated a failure: its owner's turn ends with it at its next step (its foreground call has its
   * results by then), as a failed turn whose error names the cause. A root supervisor's caller reads it in the
   * batch's results.
   */
  escalate(ownerId: string, escalation: Escalation, decided?: FailureInHand): void {
    if (decided) this.observer.verdict(escalationVerdict(decided, escalation));
    const owner = this.registry.node(ownerId);
    if (!owner) return;
    owner.env.escalation = escalationError(escalation);
  }

  /** A member of the root supervisor is about to be spawned: its runtime is built from its config. */
  prepareMember(agentId: string, supervisor: AnyActorRef): void {
    const owner = this.registry.rootOwner;
    if (!owner || !this.registry.attached) return;
    const pending = this.registry.takeMember(agentId);
    if (!pending) return;
    const transcript = new Transcript(pending.messages);
    const spawned = new SpawnedAgent(supervisor, agentId);
    const journal = this.observer.agentJournal();
    const env = new AgentEnv(agentId, owner.id, pending.settings, transcript, this.bus, spawned, journal);
    this.registry.register(new TreeNode(env, 0, 'member', supervisor, spawned));
  }

  /**
   * Records a task's end: its result, the events, a background owner's count, the waiting batch; a kept agent
   * joins its owner's keep-finished window, and the oldest beyond it are released. This is where a task's
   * "settled" fact happens, once per task.
   */
  settleTask(ownerId: string, params: SettleParams): void {
    const record = this.book.tasks.get(params.taskId);
    if (record?.status !== 'running') return;
    const node = this.registry.registered(params.agentId);
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
    const batchDone = this.book.tasks.settle(record, result);
    const error = params.status === 'failed' ? node?.lastStop?.error : undefined;
    this.observer.taskSettled(record, result, error);
    // The settle is stored before anybody hears of it, with one acknowledgement: a listener of `subagent_end` at
    // once, a swarm's caller before its results reach it, a caller of `result()` once it is stored (the settles of
    // one tick in one write).
    const awaited = this.book.takeWaiters(record.taskId);
    const now = this.bus.wants('subagent_end');
    if (now || batchDone || awaited) {
      const then =
        awaited &&
        (() => {
          for (const resolve of awaited) resolve(result);
        });
      this.observer.acknowledge(now, then);
    }
    const owner = this.registry.owner(ownerId);
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

  /**
   * A background result that settled before a restart and never reached its owner, a subagent rebuilt from the
   * journal: it is open again until delivered, and goes through the outbox as a settle does (so it waits while
   * the owner's notifications are held, and joins the other results due to it in one NOTIFY).
   */
  owe(ownerId: string, batchId: string, result: TaskResult, message: UserMessage): void {
    const owner = this.registry.node(ownerId);
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
    const node = this.registry.registered(agentId);
    // A task actor releasing an agent that a resume has since rebuilt under another task: not its own any more.
    if (!node || node.released || (parent && node.parent !== parent)) return;
    this.book.forgetKept(node.env.parentId ?? '', agentId);
    node.released = true;
    node.stopSubagents();
    onMicrotask(this.finalizeRelease.bind(this, node));
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
    for (const record of this.book.tasks.openOf(ownerId)) {
      const node = this.registry.registered(record.agentId);
      if (node?.task === record && !node.released) node.ref?.send({ type: 'INTERRUPT' });
      this.settleTask(ownerId, {
        taskId: record.taskId,
        agentId: record.agentId,
        batchId: record.batchId,
        background: record.background,
        ...taskEnd('stopped'),
        kept: false,
      });
    }
    for (const node of this.registry.all()) {
      if (node.env.parentId === ownerId && node.profile !== 'member') this.releaseChild(node.id);
    }
  }

  /** The tree shuts down: no result is delivered any more. */
  close(): void {
    this.outbox.close();
  }

  /** A member's run started or ended: its supervisor hears it (a microtask later, the member's transition settled). */
  private tellSupervisor(node: TreeNode, type: 'MEMBER.BUSY' | 'MEMBER.IDLE'): void {
    const supervisor = node.parent;
    if (!node.released && supervisor?.getSnapshot().status === 'active') supervisor.send({ type, agentId: node.id });
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

  private finalizeRelease(node: TreeNode): void {
    if (this.registry.registered(node.id) !== node) return;
    node.released = true;
    for (const child of node.children ?? []) {
      const childNode = this.registry.registered(child);
      if (childNode) this.finalizeRelease(childNode);
    }
    this.registry.unregister(node);
    this.book.archiveNode(node);
  }

  /** A finished agent stays alive for a quick resume; the oldest beyond `keepFinished` are let go. */
  private keepFinished(ownerId: string, agentId: string): void {
    for (const evicted of this.book.keep(ownerId, agentId)) {
      const node = this.registry.registered(evicted);
      if (!node || node.released || node.task) continue;
      // Its task actor takes the release after the transition in progress (its mailbox queues it).
      node.parent?.send({ type: 'RELEASE' });
    }
  }

  /**
   * A child's task is finished once it is idle with no background children of its own pending: its parent
   * supervisor then gets CHILD.DONE with the hand-off. Checked after the current transition has settled.
   */
  private checkFinished(node: TreeNode): void {
    if (!node.task || !node.parent) return;
    onMicrotask(this.finishIfDone.bind(this, node));
  }

  private finishIfDone(node: TreeNode): void {
    const task = node.task;
    if (node.released || !task || task.status !== 'running' || node.openBackground > 0) return;
    const snapshot = node.ref?.getSnapshot();
    if (snapshot?.status !== 'active' || !snapshot.matches('idle')) return;
    const taskActor = node.parent;
    if (taskActor?.getSnapshot().status !== 'active') return;
    // Built as literals, without spreads: on this V8 a spread takes a slow path, here once per subagent.
    const { stopReason, error } = node.lastStop ?? {};
    const { status: outcome, text } = handOffOf({
      stopReason,
      error,
      text: textOf(lastAssistant(node.env.transcript.messages)),
      output: node.lastOutput,
    });
    const failure = failureClassOf(stopReason, error);
    const done: ChildDone = { type: 'CHILD.DONE', agentId: node.id, taskId: task.taskId, outcome, text };
    if (failure !== undefined) done.failure = failure;
    taskActor.send(done);
  }
}
