import type { SystemPart, SystemPrompt } from '../context/index.js';
import { type AnyTool, checkSkills, loadSkills, type Skill, skillsIndex, skillTool } from '../tools/index.js';

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

/** Tools of a profile chain: the base's, then its own; a tool of the same name replaces the base's. */
function joinTools(
  base: readonly AnyTool[] | undefined,
  own: readonly AnyTool[] | undefined,
): readonly AnyTool[] | undefined {
  if (!base) return own;
  if (!own) return base;
  const names = new Set(own.map((tool) => tool.name));
  return [...base.filter((tool) => !names.has(tool.name)), ...own];
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
  const tools = joinTools(resolved.tools, config.tools);
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
