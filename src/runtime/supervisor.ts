import { nanoid } from 'nanoid';
import { type AnyActorRef, createActor, type InspectionEvent, type Observer } from 'xstate';
import type { AgentActorRef } from '../../machines/agent/index.js';
import { childId, type SupervisorActorRef } from '../../machines/supervisor/index.js';
import { Permissions, type PermissionsConfig } from '../permissions/index.js';
import type {
  AgentEventOf,
  AgentEventType,
  JoinPolicy,
  Message,
  Model,
  StrategyOptions,
  TaskSpec,
  TaskStatus,
  Usage,
} from '../protocol/index.js';
import { keepShape, specimensToTake, takeSpecimens } from '../protocol/shapes.js';
import type { AnyTool } from '../tools/index.js';
import { Agent, attachTo } from './agent/agent.js';
import { type AgentConfig, agentSettings } from './agent/config.js';
import { specimenModel, specimenTool } from './agent/specimens.js';
import { describeTree, type TreeView } from './agent/tree-view.js';
import { runtimeSupervisorMachine } from './agent/wiring.js';
import { type BudgetLimits, checkLimits } from './budget/budget.js';
import { awaitsApproval } from './env/approval-waits.js';
import { EventBus, type Listener, type ListenOptions } from './env/bus.js';
import type { Policy } from './env/env.js';
import { journalAnswer } from './env/registry.js';
import type { RetryOptions } from './env/retry.js';
import type { Session } from './session/session.js';
import { RootOwner } from './tree/nodes.js';
import './tree/specimens.js';
import { SpawnRefused, type TaskResult } from './tree/subagent-tools.js';
import { type ApprovalTarget, missingModel, type SupervisionOptions, Tree } from './tree/tree.js';

/**
 * What `createSupervisor` takes: the defaults its tasks inherit (model, tools, policy, permissions, retries), the
 * profiles and limits of its tree (`SupervisionOptions`), an inspector and a session.
 */
export interface SupervisorConfig extends SupervisionOptions {
  /** Defaults to a fresh unique id. */
  id?: string;
  /** The model top-level tasks use unless their profile names one. */
  model?: Model;
  /** Tools top-level tasks inherit (profiles narrow them with an allow-list). */
  tools?: readonly AnyTool[];
  /** The policy every agent of the tree inherits unless its profile or config says otherwise. */
  policy?: Policy;
  /** Rules and mode every agent of the tree inherits; an agent's or a profile's own add to them. */
  permissions?: PermissionsConfig;
  retry?: RetryOptions | false;
  /** XState's inspection observer: it sees the whole tree (root supervisor → agents → supervisors → …). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /**
   * A durable session (`sessions().create()` / `.open(id)`): the tree's batches, tasks and every subagent's facts
   * are journaled; a supervisor created on a crashed session starts its unsettled tasks again (see "Sessions").
   */
  session?: Session;
}

/** One task of a programmatic swarm: a prompt for a fresh agent of a profile, or a follow-up for a finished one. */
export interface SwarmTask {
  prompt: string;
  profile?: string;
  /** Resume this finished agent instead of starting a new one. */
  agentId?: string;
}

/**
 * How `supervisor.swarm` runs a batch: in the background or not, how many at once, when the batch is done (its join
 * policy) and what it may spend.
 */
export interface SwarmOptions extends StrategyOptions {
  /** Resolve at once with the task ids; results arrive as `notification` events and through `result(id)`. */
  background?: boolean;
  /** Running children for this batch (default: the supervisor's `concurrency`). */
  concurrency?: number;
  /**
   * When the batch is done (default `all`): `any` / `{ first: k }` settle once k tasks completed and cancel the
   * rest; `{ quorum: k }` also fails (and cancels the rest) as soon as k cannot be reached; `allSettled` waits for
   * every task. Every task's result is returned, each with its true status.
   */
  join?: 'all' | 'allSettled' | 'any' | { first: number } | { quorum: number };
  /**
   * What the whole batch may spend, all its tasks together (tokens, cost, wall time from its start): past it every
   * task still running ends with `budget_exhausted`, and queued ones stop at their first step.
   */
  budget?: BudgetLimits;
}

/** Where a task of the tree stands, as `supervisor.status` reports it; `text` once it has settled. */
export interface TaskInfo {
  taskId: string;
  agentId: string;
  status: TaskStatus;
  text?: string;
}

/** The programmatic root of a tree: starts top-level agents and swarms, and sees every event below. */
export class Supervisor {
  readonly id: string;
  readonly actor: SupervisorActorRef;
  private readonly bus = new EventBus();
  private readonly runtime: Tree;
  private readonly owner: RootOwner;
  private stopped = false;
  private readonly session?: Session;

  constructor(config: SupervisorConfig = {}) {
    takeSpecimens();
    this.id = config.session?.bindSupervisor(config.id) ?? config.id ?? `supervisor_${nanoid(10)}`;
    this.runtime = config.session?.openTree(this.bus, config) ?? new Tree(this.bus, config);
    const settings = agentSettings(
      {
        model: config.model ?? missingModel,
        tools: config.tools ?? [],
        policy: config.policy,
        retry: config.retry,
        ...(config.permissions ? { permissions: config.permissions } : {}),
      },
      this.runtime.tools,
    );
    const inspect = config.inspect;
    this.actor = createActor(runtimeSupervisorMachine, {
      id: this.id,
      input: this.runtime.effects.supervisorInput(this.id, false),
      ...(inspect ? { inspect } : {}),
    }) as SupervisorActorRef;
    this.runtime.attach(this.actor.system);
    this.owner = new RootOwner(this.id, settings, this.actor as AnyActorRef);
    this.runtime.registry.setRootOwner(this.owner);
    this.actor.subscribe({ error: (error) => console.error(`[troupe] supervisor ${this.id} failed:`, error) });
    this.actor.start();
    if (config.session) {
      this.session = config.session;
      config.session.attachSupervisor(this.owner);
    }
  }

  /** A long-lived top-level agent of this tree (a child of this supervisor), with the subagent tools. */
  agent<Output = unknown>(
    config: Omit<AgentConfig<Output>, 'inspect' | 'subagents' | 'model'> & { model?: Model },
  ): Agent<Output> {
    this.assertRunning();
    const id = config.id ?? `agent_${nanoid(10)}`;
    const full: AgentConfig<Output> = {
      ...config,
      model: config.model ?? this.owner.settings.model,
      policy: config.policy ?? this.owner.settings.policy,
      permissions: permissionsUnder(this.owner.settings.permissions, config.permissions),
    };
    const settings = agentSettings(full as AgentConfig<unknown>, this.runtime.tools);
    this.runtime.registry.addMember(id, settings, config.messages);
    const agent: NonNullable<TaskSpec['agent']> = {};
    if (config.maxSteps !== undefined) agent.maxSteps = config.maxSteps;
    if (config.maxOutputAttempts !== undefined) agent.maxOutputAttempts = config.maxOutputAttempts;
    if (config.wakeOnNotification !== undefined) agent.wakeOnNotification = config.wakeOnNotification;
    this.actor.send({ type: 'ADOPT', agentId: id, agent });
    const node = this.runtime.registry.node(id);
    const actor = this.actor.getSnapshot().children[childId(id)] as AgentActorRef | undefined;
    if (!node || !actor) throw new Error(`Agent ${id} could not be started`);
    // Journaled on the session; a member the journal knows (the same id after a restart) replays its turns.
    this.session?.attachMember(node.env, actor);
    return new Agent<Output>(full, {
      env: node.env,
      actor,
      tree: this.runtime,
      detach: () => this.actor.send({ type: 'RELEASE', agentId: id }),
    });
  }

  /**
   * Runs tasks as one swarm batch, at most `concurrency` at once. Foreground: the results in task order.
   * Background: the task ids at once. maxAgents / maxDepth / unknown profiles reject at once, never wait.
   */
  swarm(tasks: readonly (SwarmTask | string)[], options: SwarmOptions & { background: true }): Promise<string[]>;
  swarm(tasks: readonly (SwarmTask | string)[], options?: SwarmOptions): Promise<TaskResult[]>;
  async swarm(tasks: readonly (SwarmTask | string)[], options: SwarmOptions = {}): Promise<TaskResult[] | string[]> {
    this.assertRunning();
    const requests = tasks.map(asRequest);
    const batch = this.runtime.startBatch(this.owner, requests, {
      background: options.background === true,
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      ...(options.join === undefined ? {} : { join: joinOption(options.join) }),
      ...(options.budget === undefined ? {} : { budget: checkLimits(options.budget, 'swarm budget') }),
      ...supervisionOf(options),
    });
    if (options.background) return batch.taskIds;
    return this.stored(batch.done);
  }

  /** A batch's results once their settles are stored (later only while the store waits for its medium). */
  private async stored(done: Promise<TaskResult[]>): Promise<TaskResult[]> {
    const results = await done;
    await this.acknowledged();
    return results;
  }

  /** Runs one task in the foreground and returns its result. */
  async run(prompt: string, options: { profile?: string } = {}): Promise<TaskResult> {
    const [result] = await this.swarm([{ prompt, ...options }]);
    return result as TaskResult;
  }

  /**
   * Gives a finished task agent of the tree a follow-up: kept alive, or rebuilt from its history. It runs as a task
   * of the agent's own owner, so a subagent's follow-up is its parent's task: in the background (the task id at
   * once), the result reaches that parent as a notification, as any background result does.
   */
  resume(agentId: string, prompt: string, options: { background: true }): Promise<string>;
  resume(agentId: string, prompt: string, options?: { background?: false }): Promise<TaskResult>;
  async resume(agentId: string, prompt: string, options: { background?: boolean } = {}): Promise<TaskResult | string> {
    this.assertRunning();
    const owner = this.runtime.book.ownerOf(agentId) ?? this.owner;
    const batch = this.runtime.startBatch(owner, [{ prompt, agentId }], { background: options.background === true });
    if (options.background) return batch.taskIds[0] as string;
    const [result] = await this.stored(batch.done);
    return result as TaskResult;
  }

  /** The result of a task, when it settles (at once if it has), once its settle is stored. */
  result(taskId: string): Promise<TaskResult> {
    const journaled = this.runtime.book.tasks.get(taskId)?.result ? undefined : this.session?.taskResult(taskId);
    if (journaled) return Promise.resolve(journaled);
    return this.runtime.result(taskId) ?? Promise.reject(new Error(`No task "${taskId}" is known`));
  }

  /** Settles once what the tree's session was told is stored (see JournalWriter.acknowledge); at once without one. */
  private acknowledged(): Promise<void> {
    return new Promise((resolve) => this.runtime.stored(resolve));
  }

  /** Where a task stands now (any task of the tree), or `undefined` for an unknown id. */
  status(taskId: string): TaskInfo | undefined {
    const record = this.runtime.book.tasks.get(taskId);
    if (!record) return undefined;
    return {
      taskId,
      agentId: record.agentId,
      status: record.status,
      ...(record.result ? { text: record.result.text } : {}),
    };
  }

  /** Cancels a task by id (any task of the tree): queued ones never start, running ones are stopped. */
  cancel(taskId: string): boolean {
    return this.runtime.cancelTask(taskId);
  }

  /**
   * Cancels every unfinished task of a swarm batch (of any agent of the tree), queued ones first so that none
   * starts only to be stopped. False when the batch has no open task (finished, or unknown).
   */
  cancelBatch(batchId: string): boolean {
    return this.runtime.cancelBatch(batchId);
  }

  /**
   * Every event of the tree, from every agent (each carries `agentId` and `parentId`): a supervisor's subtree is
   * its whole tree, so `{ subtree: true }` changes nothing here (it is accepted, so that the same listener code
   * takes an agent or a supervisor).
   */
  on<T extends AgentEventType>(type: T, listener: Listener<AgentEventOf<T>>, options?: ListenOptions): () => void;
  on(type: '*', listener: Listener, options?: ListenOptions): () => void;
  on(type: string, listener: Listener<never>): () => void {
    return this.bus.on(type as '*', listener as Listener);
  }

  /** Answers a tool call waiting for approval anywhere in the tree (pass the `approval_requested` event). */
  approve(call: ApprovalTarget | string): void {
    const target = this.approvalTarget(call);
    const toolCallId = typeof call === 'string' ? call : call.toolCallId;
    // Journaled only for a call that waits: an answer the agent will ignore (a closed call) is no fact.
    if (target && awaitsApproval(target, toolCallId)) journalAnswer(target, call, true);
    target?.send({ type: 'APPROVE', toolCallId });
  }

  /**
   * Refuses a tool call waiting for approval anywhere in the tree (pass the `approval_requested` event or the call's
   * id); the model sees the refusal, with `reason` when given.
   */
  deny(call: ApprovalTarget | string, reason?: string): void {
    const target = this.approvalTarget(call);
    const toolCallId = typeof call === 'string' ? call : call.toolCallId;
    if (target && awaitsApproval(target, toolCallId)) journalAnswer(target, call, false, reason);
    target?.send({ type: 'DENY', toolCallId, ...(reason === undefined ? {} : { reason }) });
  }

  private approvalTarget(call: ApprovalTarget | string): AnyActorRef | undefined {
    return typeof call === 'string' ? this.runtime.registry.findAwaiting(call) : this.runtime.registry.route(call);
  }

  /** Tokens used by the whole tree, stopped agents included. */
  get usage(): Usage {
    return this.runtime.book.usage;
  }

  /** Tokens of one agent, or of its subtree. */
  usageOf(agentId: string, scope: 'agent' | 'subtree' = 'agent'): Usage | undefined {
    return this.runtime.book.usageOf(agentId, scope);
  }

  /** A handle on a live agent of the tree (a member, or a subagent running or kept alive), or undefined. */
  get(agentId: string): Agent | undefined {
    return attachTo(this.runtime, agentId);
  }

  /** The history of an agent of the tree: alive, or archived after it was stopped. */
  messagesOf(agentId: string): Message[] | undefined {
    return this.runtime.book.messagesOf(agentId);
  }

  /**
   * Whether an agent is alive (running, or finished and kept in its owner's `keepFinished` window: after a reopen, a
   * kept one is rebuilt from the journal when it is resumed), archived (stopped, resumable) or unknown.
   */
  whereIs(agentId: string): 'alive' | 'archived' | 'unknown' {
    return this.runtime.book.whereIs(agentId);
  }

  /** The live tree of actors: supervisors and agents with their states and usage. */
  tree(): TreeView {
    return describeTree(this.actor as AnyActorRef, this.id, (id) => this.runtime.book.usageOf(id));
  }

  /** Interrupts every running agent (histories stay valid), settles every task, and stops the tree. */
  stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.actor.send({ type: 'STOP' });
      this.actor.stop();
      this.runtime.shutdown();
    }
    return Promise.resolve();
  }

  private assertRunning(): void {
    if (this.stopped) throw new Error(`Supervisor ${this.id} is stopped`);
  }
}

/** The batch's own supervision, where the swarm names any (else the tree's applies). */
/** A swarm's task as given: a prompt alone, or the whole task. */
function asRequest(task: SwarmTask | string): SwarmTask {
  return typeof task === 'string' ? { prompt: task } : task;
}

function supervisionOf({ strategy, intensity, onFailure }: StrategyOptions): { supervision?: StrategyOptions } {
  if (!strategy && !intensity && !onFailure) return {};
  return {
    supervision: {
      ...(strategy ? { strategy } : {}),
      ...(intensity ? { intensity } : {}),
      ...(onFailure ? { onFailure } : {}),
    },
  };
}

function joinOption(join: NonNullable<SwarmOptions['join']>): JoinPolicy {
  if (join === 'all' || join === 'allSettled') return { kind: join };
  if (join === 'any') return { kind: 'first', k: 1 };
  return 'first' in join ? { kind: 'first', k: join.first } : { kind: 'quorum', k: join.quorum };
}

/**
 * Starts a supervisor: the root of a tree of agents. It runs tasks and swarms of agents made from its profiles, routes
 * approvals, and sees every event of the tree.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor({ model: scriptedModel([{ text: 'Done.' }]) });
 * const [result] = await supervisor.swarm(['Summarise the README']);
 * console.log(result?.status, result?.text); // completed Done.
 * await supervisor.stop();
 * ```
 */
export function createSupervisor(config: SupervisorConfig = {}): Supervisor {
  return new Supervisor(config);
}

export { SpawnRefused };

/** A top-level agent's permissions: the tree's, with the agent's own rules or mode (or its own object) over them. */
function permissionsUnder(tree: Permissions, own: PermissionsConfig | Permissions | undefined): Permissions {
  if (own instanceof Permissions) return own;
  return own ? tree.child(own) : tree;
}

// A real swarm of two subagents, run once with the first agent or supervisor and kept, as agent/specimens.ts keeps an
// agent's turn: what a root supervisor and its tree make per swarm keep their hidden classes through a collection.
specimensToTake(() => {
  const specimen = new Supervisor({ id: 'specimen', model: specimenModel(false), tools: [specimenTool], retry: false });
  keepShape(specimen);
  void specimen.swarm(['specimen task', 'specimen task']).catch(() => {});
});
