import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import picomatch from 'picomatch';
import type { RE2JS } from 're2js';
import { z } from 'zod';
import { type AnyTool, defineTool, type ToolContext } from '../define-tool.js';
import { re2 } from '../re2.js';
import { withoutSecrets } from './environ.js';
import { walk } from './walk.js';
import { type Workspace, WorkspaceError } from './workspace.js';

/** How the `grep` tool searches: how many matches one result holds, and whether it uses ripgrep. */
export interface GrepOptions {
  /** Matching lines in one result. Default 200. */
  maxMatches?: number;
  /**
   * Where ripgrep is: a path, `true` to look it up on the PATH (the default), or `false` for the built-in search.
   * Both give the same output; ripgrep is much faster on large trees.
   */
  ripgrep?: string | boolean;
}

interface Match {
  real: string;
  line: number;
  text: string;
}

interface Search {
  pattern: string;
  start: string;
  root: string;
  ignoreCase: boolean;
  /** Which matching files count: visible (no secrets), inside the glob, if any, and not denied to grep. */
  keep: (real: string) => boolean;
  /** Folders and files a deny rule keeps grep out of. */
  denied: (real: string) => boolean;
  /** Stop after this many matches (the caller asks for one more than it shows, to know there were more). */
  stopAfter: number;
  signal: AbortSignal;
}

const MAX_LINE = 300;
const MAX_FILE_BYTES = 10 * 1024 * 1024;

/** Finds `rg` on the PATH once. */
let onPath: Promise<string | undefined> | undefined;
export function findRipgrep(): Promise<string | undefined> {
  onPath ??= (async () => {
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
      if (!dir) continue;
      const candidate = path.join(dir, 'rg');
      try {
        await fs.access(candidate, constants.X_OK);
        return candidate;
      } catch {}
    }
    return undefined;
  })();
  return onPath;
}

async function withRipgrep(rg: string, search: Search): Promise<Match[]> {
  const args = [
    '--json',
    '--no-config',
    '--hidden',
    '--no-require-git',
    '--no-ignore-global',
    '--no-ignore-dot',
    '--no-ignore-exclude',
    '--sort',
    'path',
    '--max-filesize',
    String(MAX_FILE_BYTES),
    '--glob',
    '!.git',
  ];
  // The file glob is applied to results, not passed as --glob: ripgrep lets a --glob match override .gitignore.
  if (search.ignoreCase) args.push('--ignore-case');
  args.push('--regexp', search.pattern, '--', search.start);
  // Without the secrets: a command of the bash tool can read the environment of any process of the same user.
  const child = spawn(rg, args, { env: withoutSecrets(), stdio: ['ignore', 'pipe', 'pipe'], signal: search.signal });
  const matches: Match[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    const event = JSON.parse(line) as {
      type: string;
      data?: { path?: { text?: string }; line_number?: number; lines?: { text?: string } };
    };
    const file = event.data?.path?.text;
    const text = event.data?.lines?.text;
    if (event.type !== 'match' || file === undefined || text === undefined) continue;
    const real = path.resolve(file);
    if (!search.keep(real)) continue;
    matches.push({ real, line: event.data?.line_number ?? 0, text: text.replace(/\r?\n$/, '') });
    if (matches.length >= search.stopAfter) {
      child.kill();
      break;
    }
  }
  const code = await exited;
  // 0: matches, 1: none, null: we stopped it. 2 is an error (a bad pattern) unless some files merely failed.
  if (code === 2 && matches.length === 0 && stderr.trim()) {
    throw new WorkspaceError('invalid', `grep: ${stderr.replace(/\s+/g, ' ').trim()}`);
  }
  return matches;
}

// Lookaround and backreferences need a backtracking engine, whose time can grow exponentially with the line.
const BACKTRACKING_ONLY = /\\[1-9]|\\k<|\(\?<?[=!]/;

/**
 * The model's pattern in RE2 syntax, as ripgrep reads it: matched in time linear in the line, so no pattern can
 * stall the process (JavaScript's backtracking engine takes seconds on `(a+)+$` over 28 `a`s, and minutes on 36).
 */
function compilePattern(pattern: string, ignoreCase: boolean): RE2JS {
  try {
    const engine = re2();
    return engine.compile(pattern, ignoreCase ? engine.CASE_INSENSITIVE : 0);
  } catch (error) {
    const why = BACKTRACKING_ONLY.test(pattern)
      ? 'backreferences (\\1) and lookaround ((?=, (?!, (?<=, (?<!) are not supported: grep patterns use RE2 syntax, as ripgrep does'
      : (error as Error).message;
    throw new WorkspaceError('invalid', `grep: ${why}`);
  }
}

/** Lines matched between two turns of the event loop, so that timers, aborts and other agents keep running. */
const LINES_PER_TURN = 2000;

async function withNode(search: Search): Promise<Match[]> {
  const regex = compilePattern(search.pattern, search.ignoreCase);
  const stats = await fs.stat(search.start);
  const files: string[] = [];
  if (stats.isDirectory()) {
    const { entries } = await walk(search.root, search.start, {
      maxDepth: 64,
      limit: 200_000,
      visible: (real) => !search.denied(real),
    });
    for (const entry of entries) if (entry.kind === 'file' && search.keep(entry.real)) files.push(entry.real);
    files.sort();
  } else {
    files.push(search.start);
  }
  const matches: Match[] = [];
  for (const file of files) {
    if (search.signal.aborted) break;
    let buffer: Buffer;
    try {
      if ((await fs.stat(file)).size > MAX_FILE_BYTES) continue;
      buffer = await fs.readFile(file);
    } catch {
      continue;
    }
    if (buffer.subarray(0, 8000).includes(0)) continue;
    const lines = buffer.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (i % LINES_PER_TURN === LINES_PER_TURN - 1) {
        await new Promise((resolve) => setImmediate(resolve));
        if (search.signal.aborted) return matches;
      }
      const text = (lines[i] as string).replace(/\r$/, '');
      if (i === lines.length - 1 && text === '') break;
      if (!regex.test(text)) continue;
      matches.push({ real: file, line: i + 1, text });
      if (matches.length >= search.stopAfter) return matches;
    }
  }
  return matches;
}

/**
 * What a deny rule keeps a walking tool out of: a path is denied when it or a folder above it (up to where the walk
 * started) is. Ripgrep reports files only, so their folders are checked here too.
 */
function deniedBelow(ctx: ToolContext, start: string): (real: string) => boolean {
  const check = ctx.denied?.bind(ctx);
  if (!check) return () => false;
  return (real) => {
    for (let at = real; at.length > start.length; at = path.dirname(at)) if (check(at)) return true;
    return false;
  };
}

export function grepTool(workspace: Workspace, options: GrepOptions = {}): AnyTool {
  const maxMatches = options.maxMatches ?? 200;
  const ripgrep =
    options.ripgrep === false
      ? Promise.resolve(undefined)
      : typeof options.ripgrep === 'string'
        ? Promise.resolve(options.ripgrep)
        : findRipgrep();
  return defineTool({
    name: 'grep',
    description:
      'Searches file contents with a regular expression, honouring .gitignore. Prints path:line:text, sorted by path.',
    schema: z.object({
      pattern: z.string().min(1).describe('Regular expression'),
      path: z.string().optional().describe('File or folder to search (default: the workspace root)'),
      glob: z.string().optional().describe('Only files matching this glob, e.g. "*.ts"'),
      ignore_case: z.boolean().optional(),
    }),
    readOnly: true,
    ruleArgument: { path: 'path' },
    async execute({ pattern, path: input, glob, ignore_case }, ctx) {
      const resolved = await workspace.resolve(input ?? '.', 'read');
      if (!resolved.stats) throw new WorkspaceError('not_found', `${input} does not exist`);
      const root =
        workspace.rootPaths.find((r) => resolved.real === r || resolved.real.startsWith(r + path.sep)) ?? resolved.real;
      // A glob without a slash matches the file name at any depth, as in ripgrep and .gitignore.
      const globbed = glob ? picomatch(glob, { dot: true, basename: true }) : undefined;
      const base = resolved.stats.isDirectory() ? resolved.real : path.dirname(resolved.real);
      const denied = deniedBelow(ctx, resolved.real);
      const search: Search = {
        pattern,
        start: resolved.real,
        root,
        ignoreCase: ignore_case === true,
        keep: (real) => workspace.isVisible(real) && !denied(real) && (!globbed || globbed(path.relative(base, real))),
        denied,
        stopAfter: maxMatches + 1,
        signal: ctx.signal,
      };
      const rg = await ripgrep;
      const found = rg ? await withRipgrep(rg, search) : await withNode(search);
      if (found.length === 0) return `No matches for ${pattern} in ${resolved.display}.`;
      const lines = found.slice(0, maxMatches).map((match) => {
        const text = match.text.length > MAX_LINE ? `${match.text.slice(0, MAX_LINE)}…` : match.text;
        return `${workspace.display(match.real)}:${match.line}:${text}`;
      });
      if (found.length > maxMatches) lines.push(`(more than ${maxMatches} matches: narrow the pattern or the path)`);
      return lines.join('\n');
    },
  });
}
