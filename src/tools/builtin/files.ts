import { z } from 'zod';
import { type AnyTool, defineTool } from '../define-tool.js';
import { writeAtomically } from './atomic-write.js';
import { type ResolvedPath, type Workspace, WorkspaceError } from './workspace.js';

/** How much `read_file` returns at once, so that a large file cannot flood the model's context. */
export interface FileLimits {
  /** A file larger than this is read only by range (`offset` / `limit`). Default 1 MB. */
  maxReadBytes?: number;
  /** Characters of one read_file result. Default 50,000. */
  maxReadChars?: number;
  /** Lines of one read_file result when no `limit` is given. Default 2,000. */
  defaultLines?: number;
}

const MAX_LINE_CHARS = 2000;
/** Past this size even a ranged read is refused: the file is loaded whole to cut the range. */
const HARD_READ_BYTES = 64 * 1024 * 1024;

function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

function isBinary(buffer: Buffer): boolean {
  return buffer.subarray(0, 8000).includes(0);
}

function numbered(lines: readonly string[], first: number): string[] {
  return lines.map((line, i) => {
    const text = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… (line cut)` : line;
    return `${String(first + i).padStart(6)}\t${text}`;
  });
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

async function existingFile(workspace: Workspace, input: string, access: 'read' | 'write'): Promise<ResolvedPath> {
  const resolved = await workspace.resolve(input, access);
  if (!resolved.stats) throw new WorkspaceError('not_found', `${input} does not exist`);
  if (resolved.stats.isDirectory()) throw new WorkspaceError('not_a_file', `${input} is a folder: use list or tree`);
  return resolved;
}

/**
 * Replaces a checked file's content without ever leaving it half written (see writeAtomically). A failure is the
 * model's to read: what went wrong, and that the file is as it was.
 */
async function writeChecked(workspace: Workspace, resolved: ResolvedPath, input: string, text: string) {
  try {
    return await writeAtomically(resolved.real, text, resolved.stats, (handle) => workspace.verifyOpen(handle, input));
  } catch (error) {
    if (error instanceof WorkspaceError) throw error;
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new WorkspaceError(
      'io',
      `${input} could not be written (${reason}: ${ioReason(reason)}); ${resolved.stats ? 'the file is unchanged' : 'no file was created'}`,
    );
  }
}

function ioReason(code: string): string {
  switch (code) {
    case 'ENOSPC':
      return 'the disk is full';
    case 'EDQUOT':
      return 'the disk quota is used up';
    case 'EFBIG':
      return 'the file is larger than this system allows';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'the file system is read-only';
    default:
      return 'the write failed';
  }
}

export function readFileTool(workspace: Workspace, limits: FileLimits = {}): AnyTool {
  const maxBytes = limits.maxReadBytes ?? 1024 * 1024;
  const maxChars = limits.maxReadChars ?? 50_000;
  const defaultLines = limits.defaultLines ?? 2000;
  return defineTool({
    name: 'read_file',
    description:
      'Reads a text file of the workspace, with line numbers. Large files: pass offset (first line, from 1) and limit (lines).',
    schema: z.object({
      path: z.string().describe('File path, relative to the workspace root'),
      offset: z.number().int().min(1).optional().describe('First line to read (1-based)'),
      limit: z.number().int().min(1).optional().describe('How many lines to read'),
    }),
    readOnly: true,
    ruleArgument: { path: 'path' },
    async execute({ path: input, offset, limit }, ctx) {
      const resolved = await existingFile(workspace, input, 'read');
      const handle = await workspace.openForRead(resolved, input);
      let buffer: Buffer;
      let stats: Awaited<ReturnType<typeof handle.stat>>;
      try {
        stats = await handle.stat();
        const ranged = offset !== undefined || limit !== undefined;
        if (stats.size > HARD_READ_BYTES || (stats.size > maxBytes && !ranged)) {
          throw new WorkspaceError(
            'invalid',
            `${input} is ${formatBytes(stats.size)}, over the ${formatBytes(ranged ? HARD_READ_BYTES : maxBytes)} read_file reads at once: ${
              ranged ? 'search it with grep instead' : 'read a range with offset and limit, or search it with grep'
            }`,
          );
        }
        buffer = await handle.readFile();
      } finally {
        await handle.close();
      }
      if (isBinary(buffer)) {
        throw new WorkspaceError(
          'not_a_file',
          `${input} is a binary file (${formatBytes(buffer.length)}); read_file shows text files only`,
        );
      }
      workspace.noteSeen(ctx.agentId, resolved.real, stats);
      const text = buffer.toString('utf8');
      if (text === '') return `${input} is empty.`;
      const lines = text.split('\n');
      if (text.endsWith('\n')) lines.pop();
      const first = offset ?? 1;
      if (first > lines.length) return `${input} has ${lines.length} lines; offset ${first} is past its end.`;
      const wanted = lines.slice(first - 1, first - 1 + (limit ?? defaultLines));
      const out: string[] = [];
      let chars = 0;
      for (const line of numbered(wanted, first)) {
        if (chars + line.length + 1 > maxChars && out.length > 0) break;
        out.push(line);
        chars += line.length + 1;
      }
      const last = first + out.length - 1;
      if (last < lines.length) {
        out.push(`(lines ${first}-${last} of ${lines.length}; continue with offset ${last + 1})`);
      }
      return {
        content: out.join('\n'),
        details: { path: resolved.display, lines: [first, last], total: lines.length },
      };
    },
  });
}

export function writeFileTool(workspace: Workspace): AnyTool {
  return defineTool({
    name: 'write_file',
    description:
      'Writes a whole file (creating folders as needed). An existing file must have been read first, and unchanged since.',
    schema: z.object({
      path: z.string().describe('File path, relative to the workspace root'),
      content: z.string().describe('The complete new content'),
    }),
    destructive: true,
    ruleArgument: { path: 'path' },
    executionMode: 'sequential',
    async execute({ path: input, content }, ctx) {
      const resolved = await workspace.resolve(input, 'write');
      workspace.checkFresh(ctx.agentId, resolved, input);
      const stats = await writeChecked(workspace, resolved, input, content);
      workspace.noteSeen(ctx.agentId, resolved.real, stats);
      const verb = resolved.stats ? 'Overwrote' : 'Created';
      return {
        content: `${verb} ${resolved.display} (${lineCount(content)} lines, ${formatBytes(stats.size)}).`,
        details: { path: resolved.display, created: !resolved.stats, bytes: stats.size },
      };
    },
  });
}

/** 1-based line of a character offset. */
function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

function newlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) found.push(i);
  return found;
}

export function editTool(workspace: Workspace): AnyTool {
  return defineTool({
    name: 'edit',
    description:
      'Replaces exact text in a file read earlier: old_string must match once (or pass replace_all). Returns the changed lines.',
    schema: z.object({
      path: z.string().describe('File path, relative to the workspace root'),
      old_string: z.string().min(1).describe('The exact text to replace, including whitespace'),
      new_string: z.string().describe('The replacement'),
      replace_all: z.boolean().optional().describe('Replace every occurrence instead of exactly one'),
    }),
    ruleArgument: { path: 'path' },
    executionMode: 'sequential',
    async execute({ path: input, old_string: before, new_string: after, replace_all: all }, ctx) {
      if (before === after)
        throw new WorkspaceError('invalid', 'old_string and new_string are the same: nothing to do');
      const resolved = await existingFile(workspace, input, 'write');
      workspace.checkFresh(ctx.agentId, resolved, input);
      const handle = await workspace.openForRead(resolved, input);
      let text: string;
      try {
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
      const found = occurrences(text, before);
      if (found.length === 0) {
        throw new WorkspaceError(
          'invalid',
          `old_string was not found in ${input}: it must match exactly, whitespace and indentation included`,
        );
      }
      if (found.length > 1 && !all) {
        const lines = found.slice(0, 10).map((index) => lineAt(text, index));
        throw new WorkspaceError(
          'invalid',
          `old_string matches ${found.length} times in ${input} (lines ${lines.join(', ')}${found.length > 10 ? ', …' : ''}): add surrounding text to make it unique, or pass replace_all`,
        );
      }
      // Where each replacement lands in the new text, for the report.
      const spans: Array<[number, number]> = [];
      let shift = 0;
      const added = newlines(after);
      for (const index of found) {
        const start = lineAt(text, index) + shift;
        spans.push([start, start + added - (after.endsWith('\n') && added > 0 ? 1 : 0)]);
        shift += added - newlines(before);
      }
      const updated = found.length === 1 ? text.replace(before, () => after) : text.split(before).join(after);
      const stats = await writeChecked(workspace, resolved, input, updated);
      workspace.noteSeen(ctx.agentId, resolved.real, stats);
      const updatedLines = updated.split('\n');
      const shown = spans.slice(0, 5).flatMap(([start, end]) => {
        const last = Math.min(end, start + 19);
        return [...numbered(updatedLines.slice(start - 1, last), start), ...(last < end ? ['    …'] : [])];
      });
      const where = spans.map(([start, end]) => (start === end ? `${start}` : `${start}-${end}`)).join(', ');
      return {
        content: `Edited ${resolved.display}: ${found.length} replacement${found.length > 1 ? 's' : ''} (lines ${where}).\n${shown.join('\n')}`,
        details: { path: resolved.display, replacements: found.length, lines: spans },
      };
    },
  });
}
