import { nanoid } from 'nanoid';
import { type AnyActorLogic, type AnyActorRef, sendParent } from 'xstate';
import type { z } from 'zod';
import {
  type BatchSpec,
  childId,
  type OwnerNotify,
  type PrepareParams,
  type SettleParams,
  type SupervisorInput,
  supervisorMachine,
  type TaskSpec,
} from '../../machines/supervisor.js';
import {
  type AgentEventOf,
  addUsage,
  emptyUsage,
  lastAssistant,
  type Message,
  type Model,
  ModelError,
  type SerializedError,
  type TaskStatus,
  type TurnStopReason,
  textOf,
  type Usage,
} from '../protocol/index.js';
import { type AnyTool, outputSpec, ToolRegistry } from '../tools/index.js';
import { runtimeAgentMachine } from './agent-machine.js';
import type { EventBus, EventOrigin } from './bus.js';
import {
  AgentEnv,
  type AgentSettings,
  type AnyActorSystem,
  type Policy,
  type RunResult,
  registerEnv,
  unregisterEnv,
} from './env.js';
import {
  SpawnRefused,
  SUBAGENT_TOOL_NAMES,
  type SubagentHost,
  type SubagentRequest,
  subagentTools,
  type TaskResult,
} from './subagent-tools.js';
import { Transcript } from './transcript.js';

/** A named subagent configuration; anything it leaves out is inherited from the parent (never its history). */
export interface SubagentProfile<Output = unknown> {
  /** Shown to the model in the tools' descriptions. */
  description?: string;
  system?: string;
  /**
   * Tools: names select from the parent's tools (an allow-list), tool objects are added. Default: every tool of
   * the parent, including `agent` and `swarm` (which refuse beyond `maxDepth`).
   */
  tools?: readonly (string | AnyTool)[];
  model?: Model;
  maxSteps?: number;
  /** The child's final answer must match it; the hand-off is then the validated output. */
  outputSchema?: z.ZodType<Output>;
  policy?: Policy;
  /** Whether the child wakes for its own children's notifications (default true). */
  wakeOnNotification?: boolean;
}

export interface SupervisionOptions {
  /** Running children per swarm batch; the rest of the batch waits (default 4). */
  concurrency?: number;
  /** How deep subagents may nest: an agent at this depth cannot start more (default 3). */
  maxDepth?: number;
  /** Subagent tasks open (queued or running) at once in the whole system; more are refused (default 10,000). */
  maxAgents?: number;
  /** Finished subagents each supervisor keeps alive for a quick resume (default 8). */
  keepFinished?: number;
  /** Histories of stopped subagents kept so a resume can rebuild them, and finished task records (default 64). */
  keepHistory?: number;
  /** Restarts of a failed task, each from its original prompt with a fresh history (default 2). */
  maxRestarts?: number;
  /** Backoff before the first restart, doubled for each further one (default 1000 ms). */
  restartDelayMs?: number;
  profiles?: Record<string, SubagentProfile>;
}

type Limits = Required<Omit<SupervisionOptions, 'profiles'>>;

export interface ApprovalTarget {
  agentId: string;
  toolCallId: string;
}

interface TaskRecord {
  taskId: string;
  agentId: string;
  ownerId: string;
  batchId: string;
  index: number;
  background: boolean;
  profile: string;
  status: TaskStatus;
  attempt: number;
  /** For a resume: the history the task continues from (a restart goes back to it). */
  base?: readonly Message[];
  result?: TaskResult;
}

interface BatchRecord {
  results: TaskResult[];
  remaining: number;
  resolve(results: TaskResult[]): void;
}

/** Whoever starts subagents: an agent, or a root supervisor. */
interface Owner {
  id: string;
  depth: number;
  /** What children inherit. */
  settings: AgentSettings;
  origin: EventOrigin;
  supervisor?: AnyActorRef;
  openBackground: number;
  ensureSupervisor(): AnyActorRef;
}

interface ArchivedAgent {
  messages: readonly Message[];
  usage: Usage;
  subtreeUsage: Usage;
  ownerId: string;
  depth: number;
  profile: string;
}

/** One agent of the tree. */
export class TreeNode implements Owner {
  supervisor?: AnyActorRef;
  openBackground = 0;
  /** Live child agents, made with the first one (most agents never have any). */
  children?: Set<string>;
  readonly subtreeUsage: Usage = emptyUsage();
  /** The task it is running, until settled. */
  task?: TaskRecord;
  lastStop?: { stopReason: TurnStopReason | undefined; error: SerializedError | undefined };
  lastOutput?: unknown;
  released = false;

  constructor(
    readonly tree: Tree,
    readonly env: AgentEnv,
    readonly depth: number,
    readonly profile: string,
    /** The supervisor it lives under; undefined for a root agent. */
    readonly parentSupervisor: AnyActorRef | undefined,
    private actorRef: AnyActorRef | undefined,
  ) {}

  get id(): string {
    return this.env.agentId;
  }
  get settings(): AgentSettings {
    return this.env.settings;
  }
  get origin(): EventOrigin {
    return this.env;
  }

  /** Its actor: given for a root agent, found among its supervisor's children for a spawned one. */
  get ref(): AnyActorRef | undefined {
    if (!this.actorRef && this.parentSupervisor) {
      this.actorRef = this.parentSupervisor.getSnapshot().children[childId(this.id)] as AnyActorRef | undefined;
    }
    return this.actorRef;
  }

  ensureSupervisor(): AnyActorRef {
    if (this.supervisor) return this.supervisor;
    const ref = this.ref;
    if (!ref) throw new Error(`Agent ${this.id} is not running`);
    ref.send({ type: 'SUPERVISE', input: this.tree.supervisorInput(this.id, true) });
    const supervisor = ref.getSnapshot().children.supervisor as AnyActorRef | undefined;
    if (!supervisor) throw new Error(`Agent ${this.id} could not start its supervisor`);
    this.supervisor = supervisor;
    return supervisor;
  }
}

/** The root of a `createSupervisor()` tree, as an owner of top-level tasks and agents. */
export class RootOwner implements Owner {
  readonly depth = -1;
  openBackground = 0;
  supervisor?: AnyActorRef;

  constructor(
    readonly id: string,
    readonly settings: AgentSettings,
  ) {}

  get origin(): EventOrigin {
    return { agentId: this.id, turn: 0, step: 0 };
  }

  ensureSupervisor(): AnyActorRef {
    if (!this.supervisor) throw new Error('The supervisor is stopped');
    return this.supervisor;
  }
}

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

function treeOf(system: AnyActorSystem): Tree {
  const tree = trees.get(system);
  if (!tree) throw new Error('No supervision tree in this actor system');
  return tree;
}

let nextId = 0;
function newId(prefix: string): string {
  return `${prefix}_${nanoid(8)}${(nextId++).toString(36)}`;
}

/**
 * The runtime of one supervision tree (one actor system): nodes, task records, limits, the event bus, the
 * archive of stopped agents' histories and the usage accounts. The supervisor machines reach it through the
 * actor system, like agents reach their AgentEnv.
 */
export class Tree implements SubagentHost {
  readonly limits: Limits;
  readonly profiles: Record<string, SubagentProfile>;
  readonly nodes = new Map<string, TreeNode>();
  readonly owners = new Map<string, Owner>();
  readonly tasks = new Map<string, TaskRecord>();
  private readonly finishedTasks: string[] = [];
  private finishedHead = 0;
  readonly batches = new Map<string, BatchRecord>();
  readonly archive = new Map<string, ArchivedAgent>();
  /** Configs of members (`supervisor.agent()`) waiting to be spawned. */
  readonly pendingMembers = new Map<string, { settings: AgentSettings; messages?: readonly Message[] }>();
  readonly usage: Usage = emptyUsage();
  /** Tool calls announced as waiting for approval, by id: which agents asked (ids may repeat across agents). */
  private readonly awaiting = new Map<string, string[]>();
  private watchCloses?: () => void;
  readonly tools: AnyTool[];
  openTasks = 0;
  system?: AnyActorSystem;
  private readonly derived = new WeakMap<AgentSettings, Map<string, AgentSettings>>();

  constructor(
    readonly bus: EventBus,
    options: SupervisionOptions,
  ) {
    this.limits = {
      concurrency: positive(options.concurrency ?? 4, 'concurrency'),
      maxDepth: nonNegative(options.maxDepth ?? 3, 'maxDepth'),
      maxAgents: positive(options.maxAgents ?? 10_000, 'maxAgents'),
      keepFinished: nonNegative(options.keepFinished ?? 8, 'keepFinished'),
      keepHistory: nonNegative(options.keepHistory ?? 64, 'keepHistory'),
      maxRestarts: nonNegative(options.maxRestarts ?? 2, 'maxRestarts'),
      restartDelayMs: nonNegative(options.restartDelayMs ?? 1000, 'restartDelayMs'),
    };
    this.profiles = options.profiles ?? {};
    this.tools = subagentTools(this);
    bus.on('approval_requested', (event) => {
      const waiting = this.awaiting.get(event.toolCallId);
      if (waiting) waiting.push(event.agentId);
      else this.awaiting.set(event.toolCallId, [event.agentId]);
      this.watchCloses ??= bus.on('message_end', (end) => this.closed(end));
    });
    bus.on('usage', (event) => {
      addUsage(this.usage, event.usage);
      for (let node = this.nodes.get(event.agentId); node; node = this.parentOf(node)) {
        addUsage(node.subtreeUsage, event.usage);
      }
    });
  }

  profileDescription(name: string): string | undefined {
    return this.profiles[name]?.description;
  }

  get profileNames(): string[] {
    return Object.keys(this.profiles);
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
      keepFinished: this.limits.keepFinished,
    };
  }

  /** A root agent (`createAgent` with profiles): depth 0, its own actor. */
  addRoot(env: AgentEnv, actor: AnyActorRef): TreeNode {
    const node = new TreeNode(this, env, 0, 'root', undefined, actor);
    this.addNode(node);
    return node;
  }

  addOwner(owner: Owner): void {
    this.owners.set(owner.id, owner);
  }

  private addNode(node: TreeNode): void {
    this.nodes.set(node.id, node);
    this.owners.set(node.id, node);
    const parentId = node.env.parentId;
    const parent = parentId === undefined ? undefined : this.nodes.get(parentId);
    if (parent) {
      parent.children ??= new Set();
      parent.children.add(node.id);
    }
    node.env.onIdle = (stopReason, error) => {
      node.lastStop = { stopReason, error };
      this.checkFinished(node);
    };
  }

  private parentOf(node: TreeNode): TreeNode | undefined {
    const parentId = node.env.parentId;
    return parentId === undefined ? undefined : this.nodes.get(parentId);
  }

  // ---- SubagentHost: what the tools ask ----

  async run(
    callerId: string,
    requests: SubagentRequest[],
    background: boolean,
    signal: AbortSignal,
  ): Promise<{ taskIds: string[]; results?: TaskResult[] }> {
    const owner = this.owners.get(callerId);
    if (!owner) throw new SpawnRefused(`Agent ${callerId} cannot start subagents here`);
    const batch = this.startBatch(owner, requests, { background });
    if (background) return { taskIds: batch.taskIds };
    // The caller was interrupted (its tool call aborted): its foreground children are stopped.
    const cancel = () =>
      queueMicrotask(() => {
        const supervisor = owner.supervisor;
        if (supervisor?.getSnapshot().status === 'active')
          supervisor.send({ type: 'CANCEL_BATCH', batchId: batch.batchId });
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
    return {
      status: record.status === 'running' ? 'running' : record.status,
      agentId: record.agentId,
      ...(record.result ? { text: record.result.text } : {}),
    };
  }

  cancel(callerId: string, taskId: string): 'cancelled' | 'finished' | 'unknown' {
    const record = this.tasks.get(taskId);
    if (!record || record.ownerId !== callerId) return 'unknown';
    if (record.status !== 'running') return 'finished';
    this.owners.get(callerId)?.supervisor?.send({ type: 'CANCEL', taskId });
    return 'cancelled';
  }

  // ---- starting batches ----

  /** Checks the hard limits, records the tasks and hands the batch to the owner's supervisor. */
  startBatch(
    owner: Owner,
    requests: SubagentRequest[],
    options: { background: boolean; concurrency?: number },
  ): { batchId: string; taskIds: string[]; done: Promise<TaskResult[]> } {
    if (requests.length === 0) throw new SpawnRefused('No tasks given');
    // Every refusal comes before anything is recorded: a refused batch must leave no open task behind.
    const concurrency = positive(options.concurrency ?? this.limits.concurrency, 'concurrency');
    const depth = owner.depth + 1;
    if (depth > this.limits.maxDepth) {
      throw new SpawnRefused(
        `Refused: subagents may nest at most ${this.limits.maxDepth} deep (maxDepth), and this one would be at ` +
          `depth ${depth}. Do the work yourself.`,
      );
    }
    if (this.openTasks + requests.length > this.limits.maxAgents) {
      throw new SpawnRefused(
        `Refused: ${requests.length} more subagent(s) would exceed the limit of ${this.limits.maxAgents} ` +
          `running at once (maxAgents; ${this.openTasks} open now). Try fewer, or do the work yourself.`,
      );
    }
    const batchId = newId('batch');
    const specs: TaskSpec[] = [];
    const records: TaskRecord[] = [];
    const resuming = new Set<string>();
    for (const [index, request] of requests.entries()) {
      const taskId = newId('task');
      let agentId: string;
      let profileName: string;
      let base: readonly Message[] | undefined;
      if (request.agentId !== undefined) {
        agentId = request.agentId;
        const found = this.resumable(owner, agentId);
        if (resuming.has(agentId)) throw new SpawnRefused(`Agent ${agentId} is resumed twice in one batch`);
        resuming.add(agentId);
        profileName = found.profile;
        base = found.messages;
      } else {
        profileName = request.profile ?? 'default';
        agentId = newId(profileName.replace(/[^a-zA-Z0-9_-]/g, '') || 'agent');
      }
      const settings = this.childSettings(owner.settings, profileName);
      const profile = this.profiles[profileName];
      const agent: TaskSpec['agent'] = {};
      if (profile?.maxSteps !== undefined) agent.maxSteps = positive(profile.maxSteps, 'maxSteps');
      if (profile?.wakeOnNotification !== undefined) agent.wakeOnNotification = profile.wakeOnNotification;
      const spec: TaskSpec = { taskId, agentId, prompt: request.prompt, expectsOutput: Boolean(settings.output) };
      if (Object.keys(agent).length > 0) spec.agent = agent;
      specs.push(spec);
      const record: TaskRecord = {
        taskId,
        agentId,
        ownerId: owner.id,
        batchId,
        index,
        background: options.background,
        profile: profileName,
        status: 'running',
        attempt: 0,
      };
      if (base) record.base = base;
      records.push(record);
    }
    const supervisor = owner.ensureSupervisor();
    let resolve!: (results: TaskResult[]) => void;
    const done = new Promise<TaskResult[]>((r) => {
      resolve = r;
    });
    this.batches.set(batchId, { results: new Array(records.length), remaining: records.length, resolve });
    for (const record of records) this.tasks.set(record.taskId, record);
    this.openTasks += records.length;
    if (options.background) owner.openBackground += records.length;
    const batch: BatchSpec = { batchId, background: options.background, concurrency, tasks: specs };
    supervisor.send({ type: 'SPAWN', batch });
    return { batchId, taskIds: records.map((r) => r.taskId), done };
  }

  /** A finished child of this owner: alive and idle, or archived. */
  private resumable(owner: Owner, agentId: string): { profile: string; messages?: readonly Message[] } {
    const node = this.nodes.get(agentId);
    if (node && !node.released) {
      if (node.env.parentId !== owner.id) throw new SpawnRefused(`Agent ${agentId} is not one of your subagents`);
      if (node.task) throw new SpawnRefused(`Agent ${agentId} is still running a task; wait for its result`);
      return { profile: node.profile, messages: [...node.env.transcript.messages] };
    }
    const archived = this.archive.get(agentId);
    if (!archived) throw new SpawnRefused(`No finished subagent "${agentId}" is known (it may be too old to resume)`);
    if (archived.ownerId !== owner.id) throw new SpawnRefused(`Agent ${agentId} is not one of your subagents`);
    return { profile: archived.profile, messages: archived.messages };
  }

  /** A child's settings: its profile over its parent's, built once per (parent settings, profile). */
  childSettings(parent: AgentSettings, profileName: string): AgentSettings {
    let byProfile = this.derived.get(parent);
    if (!byProfile) {
      byProfile = new Map();
      this.derived.set(parent, byProfile);
    }
    const cached = byProfile.get(profileName);
    if (cached) return cached;
    const profile = this.profiles[profileName];
    if (!profile && profileName !== 'default') {
      const known = ['default', ...this.profileNames.filter((n) => n !== 'default')].join(', ');
      throw new SpawnRefused(`Unknown profile "${profileName}". Profiles: ${known}.`);
    }
    let tools: ToolRegistry = parent.tools;
    if (profile?.tools) {
      const list: AnyTool[] = [];
      for (const entry of profile.tools) {
        if (typeof entry !== 'string') list.push(entry);
        else {
          const tool =
            parent.tools.get(entry) ?? (SUBAGENT_TOOL_NAMES.includes(entry) ? this.toolNamed(entry) : undefined);
          if (!tool) throw new SpawnRefused(`Profile "${profileName}" names an unknown tool "${entry}"`);
          list.push(tool);
        }
      }
      tools = new ToolRegistry(list);
    }
    const settings: AgentSettings = {
      ...parent,
      tools,
      system: profile?.system,
      model: profile?.model ?? parent.model,
      policy: profile?.policy ?? parent.policy,
      output: profile?.outputSchema ? outputSpec(profile.outputSchema) : undefined,
    };
    byProfile.set(profileName, settings);
    return settings;
  }

  private toolNamed(name: string): AnyTool | undefined {
    return this.tools.find((tool) => tool.name === name);
  }

  // ---- the supervisor machine's effects ----

  prepareTask(ownerId: string, supervisor: AnyActorRef, params: PrepareParams): void {
    const record = this.tasks.get(params.task.taskId);
    const owner = this.owners.get(ownerId);
    if (!record || !owner || !this.system) return;
    record.attempt = params.attempt;
    let node = this.nodes.get(params.task.agentId);
    if (node && (node.released || params.attempt > 0)) {
      this.finalizeRelease(node);
      node = undefined;
    }
    if (!node) {
      const archived = this.archive.get(params.task.agentId);
      const messages = record.base ?? (params.attempt === 0 ? archived?.messages : undefined);
      const env = new AgentEnv(
        params.task.agentId,
        owner.id,
        this.childSettings(owner.settings, record.profile),
        new Transcript(messages),
        this.bus,
      );
      if (archived && record.base) {
        addUsage(env.totalUsage, archived.usage);
      }
      node = new TreeNode(this, env, owner.depth + 1, record.profile, supervisor, undefined);
      if (archived && record.base) addUsage(node.subtreeUsage, archived.subtreeUsage);
      this.archive.delete(params.task.agentId);
      registerEnv(this.system, env);
      this.addNode(node);
    }
    node.task = record;
    node.lastStop = undefined;
    node.lastOutput = undefined;
    const target = node;
    node.env.pending.set(params.task.taskId, {
      startIndex: node.env.transcript.length,
      resolve: (result: RunResult) => {
        target.lastOutput = result.output;
      },
    });
    this.emitFrom(owner, {
      type: 'subagent_start',
      taskId: record.taskId,
      childId: record.agentId,
      batchId: record.batchId,
      profile: record.profile,
      background: record.background,
      ...(params.attempt > 0 ? { attempt: params.attempt } : {}),
    });
  }

  prepareMember(agentId: string, supervisor: AnyActorRef): void {
    const pending = this.pendingMembers.get(agentId);
    const owner = this.owners.get(this.rootOwnerId ?? '');
    if (!pending || !owner || !this.system) return;
    this.pendingMembers.delete(agentId);
    const env = new AgentEnv(agentId, owner.id, pending.settings, new Transcript(pending.messages), this.bus);
    registerEnv(this.system, env);
    this.addNode(new TreeNode(this, env, 0, 'member', supervisor, undefined));
  }

  rootOwnerId?: string;

  settleTask(ownerId: string, params: SettleParams): void {
    const record = this.tasks.get(params.taskId);
    if (record?.status !== 'running') return;
    const node = this.nodes.get(params.agentId);
    const result: TaskResult = {
      taskId: params.taskId,
      agentId: params.agentId,
      status: params.status,
      text: params.text,
    };
    if (node?.task === record) {
      if (params.status === 'completed' && node.lastOutput !== undefined) result.output = node.lastOutput;
      node.task = undefined;
    }
    record.status = params.status;
    record.result = result;
    this.openTasks--;
    const owner = this.owners.get(ownerId);
    if (owner) {
      const usage = node ? { ...node.env.totalUsage } : emptyUsage();
      const error = params.status === 'failed' ? node?.lastStop?.error : undefined;
      this.emitFrom(owner, {
        type: 'subagent_end',
        taskId: record.taskId,
        childId: record.agentId,
        batchId: record.batchId,
        status: params.status,
        usage,
        ...(error ? { error } : {}),
      });
      if (record.background) {
        this.emitFrom(owner, {
          type: 'notification',
          taskId: record.taskId,
          childId: record.agentId,
          batchId: record.batchId,
          status: params.status,
          text: params.text,
        });
        owner.openBackground--;
        if (owner instanceof TreeNode) this.checkFinished(owner);
      }
    }
    const batch = this.batches.get(record.batchId);
    if (batch) {
      batch.results[record.index] = result;
      if (--batch.remaining === 0) {
        this.batches.delete(record.batchId);
        batch.resolve(batch.results);
      }
    }
    this.retire(record);
  }

  /** Finished task records are kept for task_status, the most recent `keepHistory` of them. */
  private retire(record: TaskRecord): void {
    this.finishedTasks.push(record.taskId);
    while (this.finishedTasks.length - this.finishedHead > this.limits.keepHistory) {
      const old = this.finishedTasks[this.finishedHead++] as string;
      this.tasks.delete(old);
    }
    if (this.finishedHead > 256 && this.finishedHead * 2 > this.finishedTasks.length) {
      this.finishedTasks.splice(0, this.finishedHead);
      this.finishedHead = 0;
    }
  }

  /**
   * The supervisor stopped a child (the stop itself runs right after this transition). Its own supervisor is
   * stopped first, so grandchildren's tasks settle; its runtime is released once the stop has run.
   */
  releaseChild(agentId: string): void {
    const node = this.nodes.get(agentId);
    if (!node || node.released) return;
    node.released = true;
    node.supervisor?.send({ type: 'STOP' });
    queueMicrotask(() => this.finalizeRelease(node));
  }

  private finalizeRelease(node: TreeNode): void {
    if (this.nodes.get(node.id) !== node) return;
    node.released = true;
    for (const child of node.children ?? []) {
      const childNode = this.nodes.get(child);
      if (childNode) this.finalizeRelease(childNode);
    }
    node.env.stopped = true;
    node.env.onIdle = undefined;
    if (this.system) unregisterEnv(this.system, node.id);
    this.nodes.delete(node.id);
    this.owners.delete(node.id);
    const parentId = node.env.parentId;
    if (parentId !== undefined) this.nodes.get(parentId)?.children?.delete(node.id);
    if (this.limits.keepHistory > 0 && node.profile !== 'member') {
      this.archive.delete(node.id);
      this.archive.set(node.id, {
        messages: node.env.transcript.messages,
        usage: node.env.totalUsage,
        subtreeUsage: node.subtreeUsage,
        ownerId: parentId ?? '',
        depth: node.depth,
        profile: node.profile,
      });
      while (this.archive.size > this.limits.keepHistory) {
        const oldest = this.archive.keys().next().value as string;
        this.archive.delete(oldest);
      }
    }
  }

  /** Stops everything: every agent is interrupted, so histories stay valid, and every runtime is released. */
  shutdown(): void {
    for (const node of this.nodes.values()) {
      node.env.stopped = true;
      node.env.onIdle = undefined;
      if (this.system) unregisterEnv(this.system, node.id);
    }
    this.nodes.clear();
    for (const [batchId, batch] of this.batches) {
      this.batches.delete(batchId);
      batch.resolve(batch.results);
    }
  }

  /**
   * A child's task is finished once it is idle with no background children of its own pending: its parent
   * supervisor then gets CHILD.DONE with the hand-off. Checked after the current transition has settled.
   */
  checkFinished(node: TreeNode): void {
    if (!node.task || !node.parentSupervisor) return;
    queueMicrotask(() => {
      const task = node.task;
      if (node.released || !task || task.status !== 'running' || node.openBackground > 0) return;
      const snapshot = node.ref?.getSnapshot();
      if (snapshot?.status !== 'active' || !snapshot.matches('idle')) return;
      const supervisor = node.parentSupervisor;
      if (supervisor?.getSnapshot().status !== 'active') return;
      const { outcome, text } = this.handOff(node);
      supervisor.send({ type: 'CHILD.DONE', agentId: node.id, taskId: task.taskId, outcome, text });
    });
  }

  private handOff(node: TreeNode): { outcome: 'completed' | 'failed' | 'interrupted'; text: string } {
    const stop = node.lastStop?.stopReason;
    const last = textOf(lastAssistant(node.env.transcript.messages));
    if (stop === 'error') {
      const why = node.lastStop?.error?.message ?? 'unknown error';
      return { outcome: 'failed', text: `The subagent failed: ${why}` };
    }
    if (stop === 'interrupted') return { outcome: 'interrupted', text: last || 'The subagent was interrupted.' };
    if (node.lastOutput !== undefined) return { outcome: 'completed', text: JSON.stringify(node.lastOutput) };
    return { outcome: 'completed', text: last };
  }

  emitFrom(owner: Owner, body: Parameters<EventBus['publish']>[1]): void {
    this.bus.publish(owner.origin, body);
  }

  // ---- reading the tree ----

  /** Usage of one agent, or of its whole subtree (released descendants included). */
  usageOf(agentId: string, scope: 'agent' | 'subtree' = 'agent'): Usage | undefined {
    const node = this.nodes.get(agentId);
    if (node) return { ...(scope === 'agent' ? node.env.totalUsage : node.subtreeUsage) };
    const archived = this.archive.get(agentId);
    if (archived) return { ...(scope === 'agent' ? archived.usage : archived.subtreeUsage) };
    return undefined;
  }

  /** Finds the agent whose tool call waits for approval, for routing approve / deny by id. */
  route(target: ApprovalTarget): AnyActorRef | undefined {
    this.forget(target.toolCallId, target.agentId);
    return this.nodes.get(target.agentId)?.ref;
  }

  findAwaiting(toolCallId: string): AnyActorRef | undefined {
    const agentId = this.awaiting.get(toolCallId)?.[0];
    if (agentId === undefined) return undefined;
    this.forget(toolCallId, agentId);
    return this.nodes.get(agentId)?.ref;
  }

  /**
   * A waiting call closes with exactly one result in a tool message, however it ends (approved and run, denied,
   * or closed by an interrupt, a cancel or a stop), so that is where its entry goes: otherwise entries of calls
   * never answered through the tree would pile up, and a later call reusing the id would be routed to the stale
   * agent. The tree listens to messages only while some call waits, so agents publish no message events for it
   * otherwise.
   */
  private closed(event: AgentEventOf<'message_end'>): void {
    if (event.discarded || event.message.role !== 'tool') return;
    for (const result of event.message.content) this.forget(result.toolCallId, event.agentId);
  }

  private forget(toolCallId: string, agentId: string): void {
    const waiting = this.awaiting.get(toolCallId);
    if (!waiting) return;
    const at = waiting.indexOf(agentId);
    if (at >= 0) waiting.splice(at, 1);
    if (waiting.length === 0) this.awaiting.delete(toolCallId);
    if (this.awaiting.size === 0 && this.watchCloses) {
      this.watchCloses();
      this.watchCloses = undefined;
    }
  }
}

/** The supervisor machine joined to the runtime: provided once; every effect finds its tree by actor system. */
export const runtimeSupervisorMachine = supervisorMachine.provide({
  actors: { subagent: runtimeAgentMachine as unknown as AnyActorLogic },
  // Each effect is guarded: a bug here must fail one task, never put the supervisor (and its subtree) in error.
  actions: {
    prepareTask: ({ context, system, self }, params) =>
      guarded(() => treeOf(system).prepareTask(context.ownerId, self, params)),
    settleTask: ({ context, system }, params) => guarded(() => treeOf(system).settleTask(context.ownerId, params)),
    releaseChild: ({ system }, params) => guarded(() => treeOf(system).releaseChild(params.agentId)),
    prepareMember: ({ system, self }, params) => guarded(() => treeOf(system).prepareMember(params.agentId, self)),
    notifyOwner: sendParent((_, params: OwnerNotify) => params),
    announceRestart: () => {},
  },
});

function guarded(effect: () => void): void {
  try {
    effect();
  } catch (error) {
    console.error('[troupe] a supervisor effect failed:', error);
  }
}

// The two machines name each other: an agent spawns its supervisor, a supervisor spawns agents. Both are provided
// once; the agent's `supervisor` is set here, after both exist, so that spawns stay by name.
(runtimeAgentMachine.implementations.actors as Record<string, AnyActorLogic>).supervisor = runtimeSupervisorMachine;

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0)
    throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
}
