import type { z } from 'zod';
import type { SystemPrompt } from '../../context/index.js';
import type { PermissionsConfig } from '../../permissions/index.js';
import type { BudgetLimits, Model, RestartOptions, StrategyOptions } from '../../protocol/index.js';
import type { AnyTool } from '../../tools/index.js';
import type { Policy } from '../env/env.js';

/** A named subagent configuration; anything it leaves out is inherited from the parent (never its history). */
export interface SubagentProfile<Output = unknown> {
  /** Shown to the model in the tools' descriptions. */
  description?: string;
  /** A string or parts (see `AgentConfig.system`); with `extends`, the base profile's parts come first. */
  system?: SystemPrompt;
  /**
   * What this profile builds on: another profile of the same tree by name, or `'parent'`, the agent that starts the
   * child (its system parts and its tools). The base's system parts come first, tools are joined (a same-named one
   * replaces the base's), every other setting is the most derived one given. A cycle or an unknown name throws.
   */
  extends?: string;
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
  /** More rules, or a mode of its own (`plan` for a planner); the parent's rules still hold. Default: the parent's. */
  permissions?: PermissionsConfig;
  /** Whether the child wakes for its own children's notifications (default true). */
  wakeOnNotification?: boolean;
  /** What each turn of the child may spend, within what its parent has left (see the agent's `budget`). */
  budget?: BudgetLimits;
}

/**
 * The shape and limits of a tree of agents: how many children run at once, how deep they nest, how many exist, how many
 * finished ones are kept, how failed tasks restart (and the supervision strategy each batch has unless it names its
 * own), the named profiles children are made from, and what each batch may spend.
 */
export interface SupervisionOptions extends RestartOptions, StrategyOptions {
  /** Running children per swarm batch; the rest of the batch waits (default 4). */
  concurrency?: number;
  /** How deep subagents may nest: an agent at this depth cannot start more (default 3). */
  maxDepth?: number;
  /** Subagent tasks open (queued or running) at once in the whole system; more are refused (default 10,000). */
  maxAgents?: number;
  /** Finished subagents each supervisor keeps alive for a quick resume (default 8). */
  keepFinished?: number;
  /**
   * Finished task records (for `task_status`), and histories of stopped subagents kept so a resume can rebuild them,
   * each counted per parent: the most recent of the tasks and subagents it started (default 64).
   */
  keepHistory?: number;
  profiles?: Record<string, SubagentProfile>;
  /** What each batch the `agent` and `swarm` tools start may spend, all its tasks together. */
  budget?: BudgetLimits;
}

/**
 * A tree's limits, with defaults, and its restart options as given: `restartDecision` (src/protocol/strategy.ts)
 * is the one place their defaults apply.
 */
export type Limits = Required<
  Omit<SupervisionOptions, 'profiles' | 'budget' | keyof StrategyOptions | keyof RestartOptions>
> &
  RestartOptions;

/** The limits of a tree, with defaults; a nonsense value is refused with a RangeError naming it. */
export function limitsOf(options: SupervisionOptions): Limits {
  const { maxRestarts, restartDelayMs } = options;
  return {
    concurrency: positive(options.concurrency ?? 4, 'concurrency'),
    maxDepth: nonNegative(options.maxDepth ?? 3, 'maxDepth'),
    maxAgents: positive(options.maxAgents ?? 10_000, 'maxAgents'),
    keepFinished: nonNegative(options.keepFinished ?? 8, 'keepFinished'),
    keepHistory: nonNegative(options.keepHistory ?? 64, 'keepHistory'),
    ...(maxRestarts === undefined ? {} : { maxRestarts: nonNegative(maxRestarts, 'maxRestarts') }),
    ...(restartDelayMs === undefined ? {} : { restartDelayMs: nonNegative(restartDelayMs, 'restartDelayMs') }),
  };
}

export function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0)
    throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
}
