import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import { type AnyTool, defineTool, type ToolContext } from '../define-tool.js';
import { walk } from './walk.js';
import { type Workspace, WorkspaceError } from './workspace.js';

/** How many entries one `list`, `tree` or `glob` result holds. */
export interface SearchLimits {
  /** Entries of one list / tree / glob result. Default 500. */
  maxEntries?: number;
}

/** A folder to walk: checked like any path, and the root it belongs to (where .gitignore files start). */
async function folder(workspace: Workspace, input: string | undefined) {
  const resolved = await workspace.resolve(input ?? '.', 'read');
  if (!resolved.stats) throw new WorkspaceError('not_found', `${input} does not exist`);
  if (!resolved.stats.isDirectory()) throw new WorkspaceError('not_a_file', `${input} is not a folder`);
  const root = workspace.rootPaths.find((r) => resolved.real === r || resolved.real.startsWith(r + path.sep));
  return { ...resolved, root: root ?? resolved.real };
}

/** Entries a deny rule keeps this tool out of are left out, folders with all they hold. */
function notDenied(ctx: ToolContext): ((real: string) => boolean) | undefined {
  const denied = ctx.denied?.bind(ctx);
  return denied && ((real) => !denied(real));
}

function cutNote(truncated: boolean, limit: number): string[] {
  return truncated ? [`(cut at ${limit} entries: narrow the path or the depth)`] : [];
}

async function linkTarget(real: string): Promise<string> {
  try {
    return await fs.readlink(real);
  } catch {
    return '?';
  }
}

export function listTool(workspace: Workspace, limits: SearchLimits = {}): AnyTool {
  const limit = limits.maxEntries ?? 500;
  return defineTool({
    name: 'list',
    description: "Lists one folder's entries (folders end in /, files show their size), honouring .gitignore.",
    schema: z.object({
      path: z.string().optional().describe('Folder, relative to the workspace root (default: the root)'),
    }),
    readOnly: true,
    ruleArgument: { path: 'path' },
    async execute({ path: input }, ctx) {
      const dir = await folder(workspace, input);
      const visible = notDenied(ctx);
      const { entries, truncated } = await walk(dir.root, dir.real, { maxDepth: 1, limit, visible });
      const lines = await Promise.all(
        entries.map(async (entry) => {
          if (entry.kind === 'dir') return `${entry.name}/`;
          if (entry.kind === 'link') return `${entry.name} -> ${await linkTarget(entry.real)}`;
          const stats = await fs.lstat(entry.real).catch(() => undefined);
          return stats ? `${entry.name}  (${stats.size} bytes)` : entry.name;
        }),
      );
      if (lines.length === 0) return `${dir.display} is empty.`;
      return [...lines, ...cutNote(truncated, limit)].join('\n');
    },
  });
}

export function treeTool(workspace: Workspace, limits: SearchLimits = {}): AnyTool {
  const limit = limits.maxEntries ?? 500;
  return defineTool({
    name: 'tree',
    description: 'Shows the folder tree to a depth (default 3), honouring .gitignore; folders end in /.',
    schema: z.object({
      path: z.string().optional().describe('Folder, relative to the workspace root (default: the root)'),
      depth: z.number().int().min(1).max(20).optional().describe('Folder levels to show (default 3)'),
    }),
    readOnly: true,
    ruleArgument: { path: 'path' },
    async execute({ path: input, depth }, ctx) {
      const dir = await folder(workspace, input);
      const visible = notDenied(ctx);
      const { entries, truncated } = await walk(dir.root, dir.real, { maxDepth: depth ?? 3, limit, visible });
      const lines = [`${dir.display}/`];
      for (const entry of entries) {
        const indent = '  '.repeat(entry.depth);
        if (entry.kind === 'dir') lines.push(`${indent}${entry.name}/`);
        else if (entry.kind === 'link') lines.push(`${indent}${entry.name} -> ${await linkTarget(entry.real)}`);
        else lines.push(`${indent}${entry.name}`);
      }
      return [...lines, ...cutNote(truncated, limit)].join('\n');
    },
  });
}

export function globTool(workspace: Workspace, limits: SearchLimits = {}): AnyTool {
  const limit = limits.maxEntries ?? 500;
  return defineTool({
    name: 'glob',
    description:
      'Finds files by glob pattern (e.g. "**/*.ts", "src/**/test-*.js"), honouring .gitignore; sorted by path.',
    schema: z.object({
      pattern: z.string().min(1).describe('Glob, relative to path'),
      path: z.string().optional().describe('Folder to search from (default: the workspace root)'),
    }),
    readOnly: true,
    ruleArgument: { path: 'path' },
    async execute({ pattern, path: input }, ctx) {
      const dir = await folder(workspace, input);
      const visible = notDenied(ctx);
      const matches = picomatch(pattern, { dot: true });
      const found: string[] = [];
      // Walk with a generous cap; the cap the model sees is on matches.
      const { entries, truncated } = await walk(dir.root, dir.real, { maxDepth: 64, limit: 100_000, visible });
      for (const entry of entries) {
        if (entry.kind === 'dir') continue;
        if (!matches(path.relative(dir.real, entry.real))) continue;
        found.push(workspace.display(entry.real));
      }
      if (found.length === 0) return `No files match ${pattern} under ${dir.display}.`;
      const shown = found.slice(0, limit);
      const notes = found.length > limit ? [`(${found.length} files; the first ${limit} are shown)`] : [];
      if (truncated) notes.push('(the folder is very large: only its first 100,000 entries were searched)');
      return [...shown, ...notes].join('\n');
    },
  });
}
