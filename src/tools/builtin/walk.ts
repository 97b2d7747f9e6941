import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';

/** One rule of a `.gitignore`, relative to the folder that holds it. */
interface IgnoreRule {
  base: string;
  negate: boolean;
  dirOnly: boolean;
  match: (relative: string) => boolean;
}

/** Parses a `.gitignore` the way git reads it: last matching rule wins, `!` re-includes, `/` anchors, `dir/` is folders only. */
function parseGitignore(text: string, base: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    if (line.startsWith('\\#') || line.startsWith('\\!')) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.replace(/\/+$/, '');
    if (line === '') continue;
    // A slash anywhere but at the end anchors the pattern to this folder; otherwise it matches at any depth.
    const anchored = line.includes('/');
    const glob = anchored ? line.replace(/^\//, '') : `**/${line}`;
    rules.push({ base, negate, dirOnly, match: picomatch(glob, { dot: true }) });
  }
  return rules;
}

function isIgnored(rules: readonly IgnoreRule[], real: string, isDir: boolean): boolean {
  let ignored = false;
  for (const rule of rules) {
    if (rule.dirOnly && !isDir) continue;
    const relative = path.relative(rule.base, real);
    if (relative === '' || relative.startsWith('..')) continue;
    if (rule.match(relative)) ignored = !rule.negate;
  }
  return ignored;
}

async function readRules(dir: string): Promise<IgnoreRule[]> {
  try {
    return parseGitignore(await fs.readFile(path.join(dir, '.gitignore'), 'utf8'), dir);
  } catch {
    return [];
  }
}

/** The rules that apply inside `dir`: every `.gitignore` from `root` down to it, outer first. */
async function rulesFor(root: string, dir: string): Promise<IgnoreRule[]> {
  const chain: string[] = [];
  for (let current = dir; ; current = path.dirname(current)) {
    chain.unshift(current);
    if (current === root || path.dirname(current) === current) break;
  }
  return (await Promise.all(chain.map(readRules))).flat();
}

export interface WalkEntry {
  real: string;
  name: string;
  depth: number;
  kind: 'file' | 'dir' | 'link' | 'other';
}

export interface WalkOptions {
  /** Folder levels below the start to descend into (1: the start's own entries only). */
  maxDepth: number;
  /** Stops after this many entries; the walk then reports itself truncated. */
  limit: number;
  /** Whether an entry may be shown at all; a folder that may not is skipped with everything below it. */
  visible?: (real: string) => boolean;
}

function kindOf(entry: Dirent): WalkEntry['kind'] {
  if (entry.isSymbolicLink()) return 'link';
  if (entry.isDirectory()) return 'dir';
  if (entry.isFile()) return 'file';
  return 'other';
}

/** A link is as visible as what it leads to: a link into a hidden folder is another name for it. */
async function isVisible(visible: (real: string) => boolean, real: string, kind: WalkEntry['kind']): Promise<boolean> {
  if (!visible(real)) return false;
  if (kind !== 'link') return true;
  try {
    return visible(await fs.realpath(real));
  } catch {
    return true; // dangling: it leads nowhere
  }
}

/**
 * Walks a folder depth first in name order, honouring `.gitignore` files (from the workspace root down) and
 * skipping `.git`. Links are reported, never followed: a link may point anywhere, and the path checks apply only
 * when a tool opens something by name.
 */
export async function walk(
  root: string,
  start: string,
  options: WalkOptions,
): Promise<{ entries: WalkEntry[]; truncated: boolean }> {
  const entries: WalkEntry[] = [];
  let truncated = false;
  const visit = async (dir: string, depth: number, inherited: IgnoreRule[]): Promise<void> => {
    let children: Dirent[];
    try {
      children = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    const rules = depth === 1 ? inherited : [...inherited, ...(await readRules(dir))];
    children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      if (truncated) return;
      const real = path.join(dir, child.name);
      const kind = kindOf(child);
      if (child.name === '.git' && kind === 'dir') continue;
      if (isIgnored(rules, real, kind === 'dir')) continue;
      if (options.visible && !(await isVisible(options.visible, real, kind))) continue;
      if (entries.length >= options.limit) {
        truncated = true;
        return;
      }
      entries.push({ real, name: child.name, depth, kind });
      if (kind === 'dir' && depth < options.maxDepth) await visit(real, depth + 1, rules);
    }
  };
  await visit(start, 1, await rulesFor(root, start));
  return { entries, truncated };
}
