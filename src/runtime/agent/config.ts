import type { InspectionEvent, Observer } from 'xstate';
import type { z } from 'zod';
import type { ContextOptions, SystemPrompt } from '../../context/index.js';
import { chainPolicies, Permissions, type PermissionsConfig, type Policy } from '../../permissions/index.js';
import type { Message, Model, ReasoningEffort } from '../../protocol/index.js';
import { type AnyTool, outputSpec, ToolRegistry, type ToolResultOptions } from '../../tools/index.js';
import { type BudgetLimits, checkLimits } from '../budget/budget.js';
import type { AgentSettings } from '../env/env.js';
import { HookRunner, type Hooks } from '../env/hooks.js';
import { joinSystem, resolveProfile, type SkillsConfig, skillsFor } from '../env/profile.js';
import { type RetryOptions, retryPolicy } from '../env/retry.js';
import type { Session } from '../session/session.js';
import { positive, type SupervisionOptions } from '../tree/supervision-options.js';

/*
 * What a user gives `createAgent` (AgentConfig) and the fixed runtime settings made from it (agentSettings): apart
 * from the Agent handle (agent/agent.ts), because a supervisor builds its members' settings from the same config.
 */

/**
 * What `createAgent` takes: the model, the tools and system prompt, and optionally the limits (steps, budgets),
 * permissions, hooks, subagents, session and context settings. Only `model` is required.
 */
export interface AgentConfig<Output = unknown> {
  model: Model;
  /** Defaults to a fresh unique id. */
  id?: string;
  tools?: readonly AnyTool[];
  /**
   * The system prompt: a string, or parts (strings, and functions evaluated at the start of each turn, such as
   * `projectInstructions()` for AGENTS.md files) joined by blank lines. Re-sent with every request, never summarised.
   */
  system?: SystemPrompt;
  /** A profile this agent builds on: its system parts come first, its tools are joined, the rest is overridden. */
  extends?: AgentProfile;
  /** Skills (a list, or a folder of `<name>/SKILL.md`): an index in the system prompt and a `skill` tool to load one. */
  skills?: SkillsConfig;
  /** Model calls per turn before it ends with `max_steps` (default 25). */
  maxSteps?: number;
  /**
   * What each turn may spend (`tokens`, `costUsd`, `timeMs`), with every subagent it starts, background ones
   * included: past it the turn ends with `budget_exhausted` and what still runs below it is cancelled.
   */
  budget?: BudgetLimits;
  /**
   * What the agent may spend over its whole life (`tokens`, `costUsd`; wall time is per turn): every turn, with
   * everything each starts, and every `run()` conversation. With a session, the session's whole life, across
   * restarts. Past it the running turn ends with `budget_exhausted`, and so does every later one, before its model call.
   */
  totalBudget?: BudgetLimits;
  /** How many calls of one parallel group run at once (default 8). */
  toolConcurrency?: number;
  /**
   * Decides per tool call: allow, deny, or ask a person; a list is asked in order, and the first that answers
   * (anything but `undefined`) decides. Deny and ask rules come first, allow rules and the mode after.
   */
  policy?: Policy | readonly Policy[];
  /**
   * Permission rules (`deny`, `ask`, `allow` as strings: `bash(git *)`, `read_file(/etc/**)`, `mcp__*`) and the
   * mode (`default`, `plan`, `auto`, `bypass`). Without a mode, calls nothing refuses or holds run. Subagents
   * inherit them; a `Permissions` object can be shared.
   */
  permissions?: PermissionsConfig | Permissions;
  /**
   * A call waiting for approval longer than this is denied, with the reason "no answer within N ms" (the model
   * sees it). Unset: it waits as long as it takes, and a process that is about to exit with calls still waiting
   * says so on stderr.
   */
  approvalTimeoutMs?: number;
  /** Hooks around model and tool calls (see {@link Hooks}); subagents inherit them. */
  hooks?: Hooks;
  /** The final answer of every turn must be JSON matching this schema; `result.output` is then typed. */
  outputSchema?: z.ZodType<Output>;
  /** Tries a structured answer gets before the turn fails (default 3). */
  maxOutputAttempts?: number;
  /** Retries of failed model calls (rate limits, overload, 5xx, network); `false` for none. */
  retry?: RetryOptions | false;
  /** An idle agent takes a notification as a new turn (default true). */
  wakeOnNotification?: boolean;
  maxTokens?: number;
  temperature?: number;
  reasoning?: ReasoningEffort;
  /**
   * History to start from (e.g. a saved session's `agent.messages`). It is checked: a malformed one throws a
   * `HistoryError` naming the message and the problem; a tool call left without a result gets an "interrupted" one.
   */
  messages?: readonly Message[];
  /**
   * Adds an `_intent` argument to every tool ("why you are calling this tool, in one sentence"): stripped before the
   * tool's schema and `execute` see the arguments, and carried as `intent` on `tool_execution_start` and
   * `approval_requested`, for UIs and logs. Off by default: it costs the model a few tokens per call.
   */
  toolIntent?: boolean;
  /** Lets the agent pursue goals (`agent.pursue`): it gets the `goal_done` tool, by which the model says a goal is met. */
  goals?: boolean;
  /**
   * A durable session (`sessions().create()` / `.open(id)`): the agent journals every fact to it, and an agent
   * created on a session that holds a history resumes from it (see docs/guide/sessions.md).
   */
  session?: Session;
  /** XState's inspection observer, e.g. from `@statelyai/inspect`. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /**
   * Lets the agent start subagents: it gets the `agent`, `swarm`, `task_status` and `task_cancel` tools, and a
   * supervisor (created when first needed) with these limits and profiles.
   */
  subagents?: SupervisionOptions;
  /** Context window, compaction threshold, summary model (see src/context and docs/guide/context.md). */
  context?: ContextOptions;
  /**
   * Every tool result's size budget (`maxChars`, default 50,000: a larger one is saved to a file and the model gets a
   * preview and `read_result`) and the repetition ladder for identical calls (3 / 5 / 8 / 12; `repetition: false`).
   */
  toolResults?: ToolResultOptions;
}

/** Settings several agents share: give one as `extends`, and a profile may extend another. */
export type AgentProfile = Partial<Omit<AgentConfig<unknown>, 'id' | 'messages' | 'session' | 'inspect'>>;

const NO_TOOLS: readonly AnyTool[] = [];
const registries = new WeakMap<
  readonly AnyTool[],
  WeakMap<readonly AnyTool[], { tools: AnyTool[]; registry: ToolRegistry }>
>();

/**
 * One registry per tool list: agents made from the same list share it (a registry is read-only once built, and
 * building one converts every schema to JSON Schema). A list changed since is built again.
 */
function registryFor(tools: readonly AnyTool[], extra: readonly AnyTool[]): ToolRegistry {
  let byExtra = registries.get(tools);
  if (!byExtra) {
    byExtra = new WeakMap();
    registries.set(tools, byExtra);
  }
  const all = [...tools, ...extra];
  const cached = byExtra.get(extra);
  if (cached && cached.tools.length === all.length && cached.tools.every((tool, i) => tool === all[i])) {
    return cached.registry;
  }
  const registry = new ToolRegistry(all);
  byExtra.set(extra, { tools: all, registry });
  return registry;
}

/**
 * The fixed part of an agent's runtime, from its config. Every key is always there (undefined when unset), in one
 * order: settings of any config then share one hidden class, the one the kept specimen agent's settings hold
 * (agent/specimens.ts), instead of one per combination of options that a collection frees when no agent has it.
 */
export function agentSettings(given: AgentConfig<unknown>, extraTools: readonly AnyTool[] = NO_TOOLS): AgentSettings {
  const config = resolveProfile(given);
  const skills = skillsFor(config.skills);
  return {
    model: config.model,
    tools: registryFor(config.tools ?? NO_TOOLS, skills ? [...extraTools, skills.tool] : extraTools),
    system: skills ? joinSystem(config.system, [skills.index]) : config.system,
    toolConcurrency: positive(config.toolConcurrency ?? 8, 'toolConcurrency'),
    policy: chainPolicies(config.policy),
    permissions: config.permissions instanceof Permissions ? config.permissions : new Permissions(config.permissions),
    approvalTimeoutMs:
      config.approvalTimeoutMs === undefined ? undefined : positive(config.approvalTimeoutMs, 'approvalTimeoutMs'),
    hooks: config.hooks ? new HookRunner(config.hooks) : undefined,
    output: config.outputSchema ? outputSpec(config.outputSchema) : undefined,
    retry: retryPolicy(config.retry),
    maxTokens: config.maxTokens,
    temperature: config.temperature,
    reasoning: config.reasoning,
    toolIntent: config.toolIntent ?? false,
    context: config.context,
    toolResults: config.toolResults,
    budget: config.budget ? checkLimits(config.budget, 'budget') : undefined,
  };
}
