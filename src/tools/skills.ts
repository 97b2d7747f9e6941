import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { type AnyTool, defineTool } from './define-tool.js';

/**
 * A skill: instructions the model loads when a task needs them. Only its name and one-line description are in the
 * system prompt (the index); the full text is read when the model calls the `skill` tool.
 */
export interface Skill {
  name: string;
  /** One line: when to use it. */
  description: string;
  /** Where the full text lives (a file read on each load), unless `text` is given. */
  path?: string;
  text?: string;
}

const NAME = /^[a-z0-9][a-z0-9._-]*$/i;

/**
 * The skills of a directory: each `<dir>/<name>/SKILL.md` (the layout Claude Code and others use) or `<dir>/<name>.md`,
 * described by a front matter with `name` and `description`; without one, the file's first line describes it.
 */
export function loadSkills(dir: string): Skill[] {
  const skills: Skill[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch (error) {
    throw new Error(`skills: cannot read the folder ${dir}: ${(error as Error).message}`);
  }
  for (const entry of entries) {
    const full = join(dir, entry);
    const stat = statSync(full, { throwIfNoEntry: false });
    let path: string | undefined;
    if (stat?.isDirectory()) {
      const inner = join(full, 'SKILL.md');
      if (statSync(inner, { throwIfNoEntry: false })?.isFile()) path = inner;
    } else if (stat?.isFile() && entry.endsWith('.md')) path = full;
    if (!path) continue;
    const fallbackName = stat?.isDirectory() ? entry : entry.slice(0, -3);
    const { name, description } = describeSkill(readFileSync(path, 'utf8'), fallbackName);
    skills.push({ name, description, path });
  }
  return checkSkills(skills);
}

/** The name and description a skill file gives itself (front matter), or its file name and first line. */
function describeSkill(text: string, fallbackName: string): { name: string; description: string } {
  const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  const field = (key: string) => {
    const match = front && new RegExp(`^${key}:\\s*(.+)$`, 'm').exec(front[1] as string);
    return match ? (match[1] as string).trim().replace(/^(['"])(.*)\1$/, '$2') : undefined;
  };
  const body = front ? text.slice(front[0].length) : text;
  const firstLine = body
    .split('\n')
    .map((line) => line.replace(/^#+\s*/, '').trim())
    .find((line) => line !== '');
  return { name: field('name') ?? fallbackName, description: field('description') ?? firstLine ?? '' };
}

/** Skills with usable, distinct names and one-line descriptions. */
export function checkSkills(skills: readonly Skill[]): Skill[] {
  const seen = new Set<string>();
  for (const skill of skills) {
    if (!NAME.test(skill.name))
      throw new Error(`skills: "${skill.name}" is not a usable name (letters, digits, . _ -)`);
    if (seen.has(skill.name)) throw new Error(`skills: two skills are named "${skill.name}"`);
    if (skill.path === undefined && skill.text === undefined) {
      throw new Error(`skills: "${skill.name}" needs a path or a text`);
    }
    seen.add(skill.name);
  }
  return skills.map((skill) => ({ ...skill, description: skill.description.replace(/\s+/g, ' ').trim() }));
}

/** The index the system prompt carries: one line per skill, and how to load one. */
export function skillsIndex(skills: readonly Skill[]): string | undefined {
  if (skills.length === 0) return undefined;
  const lines = skills.map((skill) => `- ${skill.name}: ${skill.description}`);
  return (
    'Skills: instructions for particular tasks, loaded on demand. When a task matches one, call ' +
    `skill({ "name": … }) first and follow what it says.\n${lines.join('\n')}`
  );
}

/** The `skill` tool: the full text of one skill (read from its file at each call, so edits count at once). */
export function skillTool(skills: readonly Skill[]): AnyTool {
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  const names = skills.map((skill) => skill.name);
  return defineTool({
    name: 'skill',
    label: 'Load skill',
    description: `Loads a skill's full instructions by name (the system prompt lists them): ${names.join(', ')}.`,
    schema: z.object({ name: z.string().describe('The skill to load') }),
    readOnly: true,
    safeToRepeat: true,
    execute({ name }) {
      const skill = byName.get(name);
      if (!skill) return { content: `There is no skill "${name}". Skills: ${names.join(', ')}.`, isError: true };
      if (skill.text !== undefined) return skill.text;
      try {
        return readFileSync(skill.path as string, 'utf8');
      } catch (error) {
        return { content: `The skill "${name}" could not be read: ${(error as Error).message}`, isError: true };
      }
    },
  });
}
