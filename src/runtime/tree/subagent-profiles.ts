import type { ZodType } from 'zod';
import type { SystemPrompt } from '../../context/index.js';
import { Permissions, type PermissionsConfig } from '../../permissions/index.js';
import type { BudgetLimits, Model, TaskSpec } from '../../protocol/index.js';
import { type AnyTool, outputSpec, ToolRegistry } from '../../tools/index.js';
import { checkLimits } from '../budget/budget.js';
import type { AgentSettings, Policy } from '../env/env.js';
import { joinSystem, PARENT_PROFILE, resolveNamedProfiles } from '../env/profile.js';
import { SpawnRefused, SUBAGENT_TOOL_NAMES } from './subagent-tools.js';
import { positive, type SubagentProfile } from './supervision-options.js';

/** A tree's named profiles, and the settings a child gets from its parent's and its profile's. */
export class SubagentProfiles {
  private readonly derived = new WeakMap<AgentSettings, Map<string, AgentSettings>>();

  private readonly profiles: Record<string, SubagentProfile>;

  constructor(
    profiles: Record<string, SubagentProfile>,
    /** The tree's `agent` / `swarm` / `task_status` / `task_cancel`, which a profile may name. */
    private readonly subagentTools: () => readonly AnyTool[],
  ) {
    this.profiles = resolveNamedProfiles(profiles);
  }

  get names(): string[] {
    return Object.keys(this.profiles);
  }

  description(name: string): string | undefined {
    return this.profiles[name]?.description;
  }

  /**
   * The agent machine settings a profile changes, or undefined when it changes none. A profile without `maxSteps`
   * takes its parent's: a subagent must not run longer than the agent that started it was allowed to.
   */
  machineSettings(name: string, parentMaxSteps: number | undefined): TaskSpec['agent'] {
    const profile = this.profiles[name];
    const agent: NonNullable<TaskSpec['agent']> = {};
    const maxSteps = profile?.maxSteps ?? parentMaxSteps;
    if (maxSteps !== undefined) agent.maxSteps = positive(maxSteps, 'maxSteps');
    if (profile?.wakeOnNotification !== undefined) agent.wakeOnNotification = profile.wakeOnNotification;
    return Object.keys(agent).length > 0 ? agent : undefined;
  }

  /** A child's settings: its profile over its parent's, built once per (parent settings, profile). */
  childSettings(parent: AgentSettings, name: string): AgentSettings {
    let byProfile = this.derived.get(parent);
    if (!byProfile) {
      byProfile = new Map();
      this.derived.set(parent, byProfile);
    }
    const cached = byProfile.get(name);
    if (cached) return cached;
    const profile = this.profiles[name];
    if (!profile && name !== 'default') {
      const known = ['default', ...this.names.filter((n) => n !== 'default')].join(', ');
      throw new SpawnRefused(`Unknown profile "${name}". Profiles: ${known}.`);
    }
    const onParent = profile?.extends === PARENT_PROFILE;
    let tools: ToolRegistry = parent.tools;
    if (profile?.tools) {
      // On the parent, the profile's tools are added to the parent's; otherwise they are the child's whole set.
      const list: AnyTool[] = onParent ? parent.tools.names.map((n) => parent.tools.get(n) as AnyTool) : [];
      const add = (tool: AnyTool) => putTool(list, tool);
      for (const entry of profile.tools) {
        if (typeof entry !== 'string') add(entry);
        else {
          const tool = parent.tools.get(entry) ?? this.subagentTool(entry);
          if (!tool) throw new SpawnRefused(`Profile "${name}" names an unknown tool "${entry}"`);
          add(tool);
        }
      }
      tools = new ToolRegistry(list);
    }
    const settings: AgentSettings = {
      ...parent,
      tools,
      system: onParent ? joinSystem(parent.system, profile.system) : profile?.system,
      model: profile?.model ?? parent.model,
      policy: profile?.policy ?? parent.policy,
      permissions: profile?.permissions ? parent.permissions.child(profile.permissions) : parent.permissions,
      hooks: parent.hooks?.inherited,
      output: profile?.outputSchema ? outputSpec(profile.outputSchema) : undefined,
      // A child's own limits come from its profile only; its parent's hold through the account it opens under.
      budget: profile?.budget ? checkLimits(profile.budget, `profile "${name}" budget`) : undefined,
    };
    byProfile.set(name, settings);
    return settings;
  }

  private subagentTool(name: string): AnyTool | undefined {
    if (!SUBAGENT_TOOL_NAMES.includes(name)) return undefined;
    return this.subagentTools().find((tool) => tool.name === name);
  }
}

/** What of an agent's config a subagent profile changes (`AgentConfig`'s fields of those names). */
export interface ProfiledConfig {
  model: Model;
  tools?: readonly AnyTool[];
  system?: SystemPrompt;
  maxSteps?: number;
  policy?: Policy | readonly Policy[];
  permissions?: PermissionsConfig | Permissions;
  outputSchema?: ZodType;
  budget?: BudgetLimits;
  wakeOnNotification?: boolean;
}

/**
 * A tree's profiles for a host that builds every agent from a config (`troupe/restate`): a child's config from its
 * parent's by the rules of `SubagentProfiles.childSettings`, with the same refusals. `subagentTools` names the
 * tree tools (`agent`, `swarm`, `task_status`, `task_cancel`) the child keeps: all of its parent's, unless the
 * profile lists its tools.
 */
export class SubagentConfigs {
  private readonly profiles: Record<string, SubagentProfile>;

  constructor(profiles: Record<string, SubagentProfile>) {
    this.profiles = resolveNamedProfiles(profiles);
  }

  get names(): string[] {
    return Object.keys(this.profiles);
  }

  /** What the profile `name` is for, as the model sees it beside the name; `undefined` when it says nothing. */
  description(name: string): string | undefined {
    return this.profiles[name]?.description;
  }

  /**
   * The config of a child of profile `name` made from its `parent`'s, and the tree tools it keeps; throws
   * `SpawnRefused` for an unknown profile or tool.
   */
  child<C extends ProfiledConfig>(
    parent: C,
    name: string,
    parentSubagentTools: readonly string[] = SUBAGENT_TOOL_NAMES,
  ): { config: C; subagentTools: readonly string[] } {
    const profile = this.profiles[name];
    if (!profile && name !== 'default') {
      const known = ['default', ...this.names.filter((n) => n !== 'default')].join(', ');
      throw new SpawnRefused(`Unknown profile "${name}". Profiles: ${known}.`);
    }
    const onParent = profile?.extends === PARENT_PROFILE;
    let tools = parent.tools;
    let subagentTools = parentSubagentTools;
    if (profile?.tools) {
      const list: AnyTool[] = onParent ? [...(parent.tools ?? [])] : [];
      const kept = new Set(onParent ? parentSubagentTools : []);
      const add = (tool: AnyTool) => putTool(list, tool);
      for (const entry of profile.tools) {
        if (typeof entry !== 'string') add(entry);
        else {
          const tool = parent.tools?.find((known) => known.name === entry);
          if (tool) add(tool);
          else if (parentSubagentTools.includes(entry)) kept.add(entry);
          else throw new SpawnRefused(`Profile "${name}" names an unknown tool "${entry}"`);
        }
      }
      tools = list;
      subagentTools = [...kept];
    }
    const config: C = { ...parent, tools };
    const system = onParent ? joinSystem(parent.system, profile.system) : profile?.system;
    if (system === undefined) delete config.system;
    else config.system = system;
    if (profile?.model) config.model = profile.model;
    if (profile?.maxSteps !== undefined) config.maxSteps = positive(profile.maxSteps, 'maxSteps');
    if (profile?.policy) config.policy = profile.policy;
    if (profile?.permissions) {
      const base = parent.permissions instanceof Permissions ? parent.permissions : new Permissions(parent.permissions);
      config.permissions = base.child(profile.permissions);
    }
    // The output and the limits are the profile's own, never the parent's (as embedded).
    if (profile?.outputSchema) config.outputSchema = profile.outputSchema;
    else delete config.outputSchema;
    if (profile?.budget) config.budget = checkLimits(profile.budget, `profile "${name}" budget`);
    else delete config.budget;
    if (profile?.wakeOnNotification !== undefined) config.wakeOnNotification = profile.wakeOnNotification;
    return { config, subagentTools };
  }
}

/** Adds a profile's tool to a child's list; a same-named one of the parent's is replaced. */
function putTool(list: AnyTool[], tool: AnyTool): void {
  const same = list.findIndex((known) => known.name === tool.name);
  if (same === -1) list.push(tool);
  else list[same] = tool;
}
