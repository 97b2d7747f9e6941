import { nanoid } from 'nanoid';
import type { BudgetLimits, JoinPolicy, Message, StrategyOptions, TaskSpec } from '../../protocol/index.js';
import type { Budget } from '../budget/budget.js';
import type { RestoredSpend } from '../budget/ledger.js';
import type { Owner } from './nodes.js';
import type { OpenedBatch } from './observer.js';
import type { SubagentProfiles } from './subagent-profiles.js';
import { SpawnRefused, type SubagentRequest, tooManyAgents } from './subagent-tools.js';
import { type Limits, positive } from './supervision-options.js';
import type { TaskRecord } from './tasks.js';

/**
 * A batch before it exists: the refusals a batch gets before anything is recorded, and the task specs (for the
 * supervisor machine) and records (for the task book) its requests become. The tree records and starts them.
 */

export interface BatchOptions {
  background: boolean;
  concurrency?: number;
  join?: JoinPolicy;
  callId?: string;
  /**
   * The ids a restored tree gives its tasks again (fresh agents, in request order), and their batch's; with the run
   * each goes on with, the sibling that restarted it, what is left of the backoff before it, whether that run is a
   * resume and the history it goes on from, the history a restart goes back to, and the batch's earlier restarts
   * (see BatchStanding).
   */
  ids?: {
    batchId: string;
    tasks: ReadonlyArray<{
      taskId: string;
      agentId: string;
      attempt?: number;
      cause?: string;
      resume?: boolean;
      backoffMs?: number;
      history?: readonly Message[];
      base?: readonly Message[];
    }>;
    restarts?: number[];
  };
  /** What the batch may spend, all its tasks together (within what the starting turn has left). */
  budget?: BudgetLimits;
  /** What a batch started again after a restart had spent (its settled tasks): see SpendLedger. */
  spent?: RestoredSpend;
  /** How the batch answers a failed task; the tree's own (`SupervisionOptions`) where it names none. */
  supervision?: StrategyOptions;
}

let nextId = 0;
export function newId(prefix: string): string {
  return `${prefix}_${nanoid(8)}${(nextId++).toString(36)}`;
}

/**
 * Every refusal a batch can get from the tree's limits, checked before anything is recorded (a refused batch must
 * leave no open task behind). Answers the batch's concurrency.
 */
export function refusalsOf(
  owner: Owner,
  requests: readonly SubagentRequest[],
  options: BatchOptions,
  limits: Limits,
  openTasks: number,
): number {
  if (requests.length === 0) throw new SpawnRefused('No tasks given');
  const join = options.join;
  if (join && (join.kind === 'first' || join.kind === 'quorum')) {
    if (!Number.isInteger(join.k) || join.k < 1 || join.k > requests.length) {
      throw new SpawnRefused(`Refused: ${join.kind}(${join.k}) needs k between 1 and the ${requests.length} task(s)`);
    }
  }
  const concurrency = positive(options.concurrency ?? limits.concurrency, 'concurrency');
  const depth = owner.depth + 1;
  if (depth > limits.maxDepth) {
    throw new SpawnRefused(
      `Refused: subagents may nest at most ${limits.maxDepth} deep (maxDepth), and this one would be at ` +
        `depth ${depth}. Do the work yourself.`,
    );
  }
  if (openTasks + requests.length > limits.maxAgents) {
    throw tooManyAgents(requests.length, limits.maxAgents, openTasks);
  }
  return concurrency;
}

/** What a batch's tasks are built from, besides its requests. */
export interface PlanContext {
  owner: Owner;
  batchId: string;
  options: BatchOptions;
  budget: Budget | undefined;
  profiles: SubagentProfiles;
  /** The starting agent's step limit, which a profile without its own takes (a root supervisor has none). */
  parentMaxSteps: number | undefined;
  /** A finished child the request names, to resume: its profile and history (refuses one that is not). */
  resumable(agentId: string): { profile: string; messages?: readonly Message[] };
}

/** The batch's tasks, in request order: their specs for the supervisor machine and their records for the book. */
export function planTasks(
  requests: readonly SubagentRequest[],
  plan: PlanContext,
): { specs: TaskSpec[]; records: TaskRecord[] } {
  const { owner, batchId, options, budget, profiles } = plan;
  const specs: TaskSpec[] = [];
  const records: TaskRecord[] = [];
  const resuming = new Set<string>();
  for (const [index, request] of requests.entries()) {
    const given = options.ids?.tasks[index];
    const taskId = given?.taskId ?? newId('task');
    let agentId: string;
    let profile: string;
    let base: readonly Message[] | undefined;
    if (given) {
      agentId = given.agentId;
      profile = request.profile ?? 'default';
      base = given.base;
    } else if (request.agentId !== undefined) {
      agentId = request.agentId;
      const found = plan.resumable(agentId);
      if (resuming.has(agentId)) throw new SpawnRefused(`Agent ${agentId} is resumed twice in one batch`);
      resuming.add(agentId);
      profile = found.profile;
      base = found.messages;
    } else {
      profile = request.profile ?? 'default';
      agentId = newId(profile.replace(/[^a-zA-Z0-9_-]/g, '') || 'agent');
    }
    const settings = profiles.childSettings(owner.settings, profile);
    const spec: TaskSpec = { taskId, agentId, prompt: request.prompt, expectsOutput: Boolean(settings.output) };
    const agent = profiles.machineSettings(profile, plan.parentMaxSteps);
    if (agent) spec.agent = agent;
    if (given?.attempt) spec.attempt = given.attempt;
    if (given?.cause !== undefined) spec.cause = given.cause;
    if (given?.resume) spec.resume = true;
    if (given?.backoffMs !== undefined) spec.backoffMs = given.backoffMs;
    specs.push(spec);
    const record: TaskRecord = {
      taskId,
      agentId,
      ownerId: owner.id,
      batchId,
      index,
      background: options.background,
      profile,
      status: 'running',
      attempt: given?.attempt ?? 0,
    };
    if (base) record.base = base;
    if (given?.history) record.history = given.history;
    if (budget) record.budget = budget;
    records.push(record);
  }
  return { specs, records };
}

/**
 * A planned batch's tasks as its observers see them (OpenedBatch's `tasks`). A loop, not map's callback: a closure
 * made per batch dies with it, and a collection drops its optimised code.
 */
export function observedTasks(specs: readonly TaskSpec[], records: readonly TaskRecord[]): OpenedBatch['tasks'] {
  const tasks: OpenedBatch['tasks'] = [];
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i] as TaskSpec;
    tasks.push({
      taskId: spec.taskId,
      agentId: spec.agentId,
      profile: records[i]?.profile ?? 'default',
      prompt: spec.prompt,
    });
  }
  return tasks;
}
