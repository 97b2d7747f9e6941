import type { SystemPart, SystemPrompt } from '../../context/index.js';
import { type AnyTool, checkSkills, loadSkills, type Skill, skillsIndex, skillTool } from '../../tools/index.js';

/** What a profile may set: anything an agent's config holds, and another profile it builds on. */
export interface ProfileFields {
  system?: SystemPrompt;
  tools?: readonly AnyTool[];
  /** The profile this one builds on. */
  extends?: ProfileFields;
}

/** System prompts of a profile chain, the base's first. */
export function joinSystem(base: SystemPrompt | undefined, own: SystemPrompt | undefined): SystemPrompt | undefined {
  if (base === undefined) return own;
  if (own === undefined) return base;
  const parts: SystemPart[] = [];
  for (const prompt of [base, own]) {
    if (typeof prompt === 'string') parts.push(prompt);
    else parts.push(...prompt);
  }
  return parts;
}

/**
 * A config with its `extends` chain folded in: the system prompts are joined (the base's parts first), the tools
 * joined (a same-named tool replaces the base's), and every other setting is the most derived one given.
 */
export function resolveProfile<C extends ProfileFields>(config: C, seen = new Set<ProfileFields>()): C {
  const base = config.extends;
  if (!base) return config;
  if (seen.has(config)) throw new TypeError('extends: a profile extends itself (a cycle)');
  seen.add(config);
  const resolved = resolveProfile(base, seen) as ProfileFields;
  const { extends: _, ...own } = config;
  const merged = { ...resolved, ...own } as C & ProfileFields;
  delete merged.extends;
  const system = joinSystem(resolved.system, config.system);
  const tools = joinNamedTools(resolved.tools, config.tools) as readonly AnyTool[] | undefined;
  if (system !== undefined) merged.system = system;
  if (tools !== undefined) merged.tools = tools;
  return merged;
}

/** Skills as an agent takes them: a list, or a folder to load them from. */
export type SkillsConfig = readonly Skill[] | string;

/** The skills index (a system part) and the `skill` tool, for agents that have skills. */
export function skillsFor(config: SkillsConfig | undefined): { index: string; tool: AnyTool } | undefined {
  if (config === undefined) return undefined;
  const skills = typeof config === 'string' ? loadSkills(config) : checkSkills(config);
  const index = skillsIndex(skills);
  return index === undefined ? undefined : { index, tool: skillTool(skills) };
}

/** What a subagent profile's `extends` names to build on the agent that starts the child, not on another profile. */
export const PARENT_PROFILE = 'parent';

/** A named profile that may build on another of the same set by name, or on the parent (`'parent'`). */
interface NamedProfile {
  extends?: string;
  system?: SystemPrompt;
  tools?: readonly (string | AnyTool)[];
}

/**
 * Named profiles (a supervision tree's subagent profiles) with their `extends` chains folded in, as for an agent:
 * system parts base first, tools joined (a same-named one replaces the base's), the rest the most derived one given.
 * A chain that ends in `extends: 'parent'` keeps it: the parent is known only when a child starts. Throws a
 * TypeError for a name that is no profile, a cycle, or a profile named `parent`.
 */
export function resolveNamedProfiles<P extends NamedProfile>(profiles: Record<string, P>): Record<string, P> {
  if (Object.hasOwn(profiles, PARENT_PROFILE)) {
    throw new TypeError(`A profile cannot be named "${PARENT_PROFILE}": extends: "${PARENT_PROFILE}" means the parent`);
  }
  const resolved: Record<string, P> = {};
  const resolve = (name: string, chain: string[]): P => {
    const done = resolved[name];
    if (done) return done;
    if (chain.includes(name))
      throw new TypeError(`Profiles extend each other in a cycle: ${[...chain, name].join(' → ')}`);
    const profile = Object.hasOwn(profiles, name) ? profiles[name] : undefined;
    if (!profile) throw new TypeError(`Profile "${chain.at(-1)}" extends "${name}", which is not a profile`);
    let result = profile;
    if (profile.extends !== undefined && profile.extends !== PARENT_PROFILE) {
      const base = resolve(profile.extends, [...chain, name]);
      const { extends: _, ...own } = profile;
      // The base's own `extends` (only ever 'parent' once resolved) carries over.
      const merged = { ...base, ...own } as P;
      const system = joinSystem(base.system, profile.system);
      if (system !== undefined) merged.system = system;
      const tools = joinNamedTools(base.tools, profile.tools);
      if (tools !== undefined) merged.tools = tools;
      result = merged;
    }
    resolved[name] = result;
    return result;
  };
  for (const name of Object.keys(profiles)) resolve(name, []);
  return resolved;
}

/** Tools of a profile chain given as names or tools: the base's, then its own; a same-named entry replaces the base's. */
function joinNamedTools(
  base: readonly (string | AnyTool)[] | undefined,
  own: readonly (string | AnyTool)[] | undefined,
): readonly (string | AnyTool)[] | undefined {
  if (!base) return own;
  if (!own) return base;
  const nameOf = (entry: string | AnyTool) => (typeof entry === 'string' ? entry : entry.name);
  const names = new Set(own.map(nameOf));
  return [...base.filter((entry) => !names.has(nameOf(entry))), ...own];
}
