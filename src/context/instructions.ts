import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { SystemPartContext } from './system-prompt.js';

export interface ProjectInstructionsOptions {
  /** The working directory (default `process.cwd()`, read when the part is made). */
  cwd?: string;
  /** The user's home (default `os.homedir()`). */
  home?: string;
  /** The names looked for in each directory, the first found wins (default `['AGENTS.md']`). */
  fileNames?: readonly string[];
  /** Characters past which a warning says the instructions are large (default 40,000); they are sent whole. */
  maxChars?: number;
}

export interface InstructionFile {
  path: string;
  text: string;
}

const DEFAULT_MAX = 40_000;

/**
 * The directories whose instruction files apply to `cwd`, outer first: the user's home, then every directory from
 * the home (or, for a working directory outside the home, from the filesystem's root) down to `cwd`.
 */
export function instructionDirs(cwd: string, home: string): string[] {
  const target = resolve(cwd);
  const top = resolve(home);
  const chain: string[] = [];
  for (let dir = target; ; dir = dirname(dir)) {
    chain.push(dir);
    if (dir === top || dirname(dir) === dir) break;
  }
  chain.reverse();
  const insideHome = target === top || target.startsWith(top.endsWith(sep) ? top : top + sep);
  return insideHome ? chain : [top, ...chain.filter((dir) => dir !== top)];
}

/** The instruction files that apply to `cwd`, outer first, as they are on disk now. */
export function collectInstructions(options: ProjectInstructionsOptions = {}): InstructionFile[] {
  return new InstructionFiles(options).read().files;
}

/**
 * A system part with the project's instructions (`AGENTS.md` from the user's home down to the working directory,
 * outer first): re-read at the start of each turn, so an edited file counts from the next turn, and the same text
 * (the same string) while no file changed. Past `maxChars` a `context_warning` says so, once per change. Being part
 * of the system prompt, the instructions are re-sent with every request and never summarised by a compaction.
 */
export function projectInstructions(
  options: ProjectInstructionsOptions = {},
): (context: SystemPartContext) => string | undefined {
  const files = new InstructionFiles(options);
  return (context) => {
    const { text, changed, chars } = files.read();
    const max = options.maxChars ?? DEFAULT_MAX;
    if (changed && chars > max) {
      context.warn(
        `The project instructions are ${chars.toLocaleString('en')} characters (${files.paths().join(', ')}), more ` +
          `than the ${max.toLocaleString('en')} budget: every request carries them.`,
      );
    }
    return text;
  };
}

/** Reads the files of one working directory, again only when one changed (by modification time and size). */
class InstructionFiles {
  private readonly candidates: string[][];
  private readonly root: string;
  private stamp = '';
  private last: { files: InstructionFile[]; text: string | undefined; chars: number } = {
    files: [],
    text: undefined,
    chars: 0,
  };

  constructor(options: ProjectInstructionsOptions) {
    const cwd = options.cwd ?? process.cwd();
    const home = options.home ?? homedir();
    const names = options.fileNames ?? ['AGENTS.md'];
    this.root = resolve(cwd);
    this.candidates = instructionDirs(cwd, home).map((dir) => names.map((name) => join(dir, name)));
  }

  paths(): string[] {
    return this.last.files.map((file) => file.path);
  }

  read(): { files: InstructionFile[]; text: string | undefined; chars: number; changed: boolean } {
    const found: { path: string; stamp: string }[] = [];
    for (const names of this.candidates) {
      for (const path of names) {
        const stat = statSync(path, { throwIfNoEntry: false });
        if (stat?.isFile()) {
          found.push({ path, stamp: `${path}:${stat.mtimeMs}:${stat.size}` });
          break;
        }
      }
    }
    const stamp = found.map((file) => file.stamp).join('|');
    if (stamp === this.stamp) return { ...this.last, changed: false };
    this.stamp = stamp;
    const files: InstructionFile[] = [];
    for (const { path } of found) {
      try {
        const text = readFileSync(path, 'utf8').trim();
        if (text) files.push({ path, text });
      } catch {
        // Gone or unreadable since the stat: it is left out, and the next change of stamp reads again.
      }
    }
    const chars = files.reduce((sum, file) => sum + file.text.length, 0);
    this.last = { files, text: files.length > 0 ? this.render(files) : undefined, chars };
    return { ...this.last, changed: true };
  }

  private render(files: InstructionFile[]): string {
    const sections = files.map((file) => {
      const where = relative(this.root, file.path) || file.path;
      return `<instructions file="${where.startsWith('..') ? file.path : where}">\n${file.text}\n</instructions>`;
    });
    return (
      'Project instructions (AGENTS.md files, the outermost first; a later file refines an earlier one, and the ' +
      `user's requests come before all of them):\n\n${sections.join('\n\n')}`
    );
  }
}
