import type { TaskSpec } from '../protocol/index.js';
import { type AnyTool, outputSpec, ToolRegistry } from '../tools/index.js';
import { joinSystem, PARENT_PROFILE, resolveNamedProfiles } from './agent-profile.js';
import { checkLimits } from './budget.js';
import type { AgentSettings } from './env.js';
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
      const add = (tool: AnyTool) => {
        const same = list.findIndex((known) => known.name === tool.name);
        if (same === -1) list.push(tool);
        else list[same] = tool;
      };
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
