import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { JsonValue, ToolResultPart } from '../protocol/index.js';
import { type AnyTool, defineTool } from './define-tool.js';

export interface ResultBudgetOptions {
  /** Characters of text a result may carry to the model (default 50,000); `false`: no limit. */
  maxChars?: number | false;
  /** Characters of an oversized result the model still sees: its start and its end (default 4,000). */
  previewChars?: number;
  /**
   * Where full results over the budget are written. Default: the session's directory when the agent has one (a
   * JSONL store's `<dir>/<session id>/tool-results/<agent id>/`, so `read_result` works after a resume), else a
   * temporary directory made when first needed.
   */
  dir?: string;
}

const DEFAULT_MAX = 50_000;
const DEFAULT_PREVIEW = 4_000;

/**
 * Keeps one tool result from filling the context window, whatever tool made it (built-in, MCP, subagent, the
 * user's own). A result whose text passes the budget is written in full to a file, and the model gets its start and
 * end, its size, and where the rest is: it reads the part it needs instead of all of it. Images pass as they are
 * (the provider sizes them); only text counts.
 */
export class ResultBudget {
  private readonly max: number | false;
  private readonly preview: number;
  private dir?: string;
  /** The session's folder for this agent's results, the default when no `dir` is given. */
  private sessionDir?: string;

  /** Saved results by call id: `read_result` reads only these, never a path the model names. */
  private readonly saved = new Map<string, string>();
  /** The tool that reads saved results, made when the first result is saved. */
  private reader?: AnyTool;

  constructor(private readonly options: ResultBudgetOptions) {
    const max = options.maxChars ?? DEFAULT_MAX;
    if (max !== false && !(max > 0)) throw new RangeError(`toolResults.maxChars must be positive, not ${max}`);
    this.max = max;
    this.preview = Math.max(0, Math.min(options.previewChars ?? DEFAULT_PREVIEW, max === false ? Infinity : max));
  }

  /** The result as the model gets it: unchanged when within the budget (the common case costs a length sum). */
  fit(result: ToolResultPart): ToolResultPart {
    const max = this.max;
    if (max === false) return result;
    let size = 0;
    const { content } = result;
    for (let i = 0; i < content.length; i++) {
      const item = content[i] as (typeof content)[number];
      if (item.type === 'text') size += item.text.length;
    }
    if (size <= max) return result;
    let full = '';
    for (const item of result.content) if (item.type === 'text') full += full ? `\n${item.text}` : item.text;
    const path = this.save(result.toolCallId, full);
    const headChars = Math.ceil(this.preview * 0.75);
    const tailChars = this.preview - headChars;
    const head = full.slice(0, headChars);
    const tail = tailChars > 0 ? full.slice(full.length - tailChars) : '';
    const lines = countLines(full);
    const left = full.length - head.length - tail.length;
    const text =
      `${head}\n\n[… ${n(left)} characters left out …]\n\n${tail}\n\n` +
      `[This result was ${n(size)} characters (${n(lines)} lines), more than the ${n(max)} a result may send. ${this.whereIs(result.toolCallId, path)}]`;
    const details = isObject(result.details) ? result.details : {};
    const fitted: ToolResultPart = {
      type: 'tool_result',
      toolCallId: result.toolCallId,
      toolName: result.toolName,
      content: [{ type: 'text', text }, ...result.content.filter((item) => item.type !== 'text')],
      isError: result.isError,
      details: { ...details, fullResult: { path: path ?? null, chars: size, lines } },
    };
    return fitted;
  }

  /** Saves from now on in the session's folder for this agent, unless the options name a `dir`. */
  useSessionDir(dir: string): void {
    if (this.options.dir === undefined && this.dir === undefined) this.sessionDir = dir;
  }

  /**
   * Takes back a result saved before a restart (a resumed session's history, a replayed journal entry), so that
   * `read_result` reads it again: only a file of this budget's folder, found by the call's id. Whether it was.
   */
  adopt(result: ToolResultPart): boolean {
    if (!isObject(result.details) || !isObject(result.details.fullResult)) return false;
    const dir = this.options.dir ?? this.sessionDir;
    if (dir === undefined || this.saved.has(result.toolCallId)) return false;
    const path = join(dir, fileName(result.toolCallId));
    if (!existsSync(path)) return false;
    this.saved.set(result.toolCallId, path);
    return true;
  }

  /** Whether any result has been saved: from then on the agent needs {@link readerTool}. */
  get hasSaved(): boolean {
    return this.saved.size > 0;
  }

  /** `read_result`: a range of lines of a saved result, or the lines that match a pattern. */
  readerTool(): AnyTool {
    this.reader ??= readResultTool(this.saved);
    return this.reader;
  }

  private whereIs(toolCallId: string, path: string | undefined): string {
    if (!path) return 'The full text could not be saved.';
    return (
      `The full text is saved at ${path}. Read the part you need with ` +
      `read_result({ "id": ${JSON.stringify(toolCallId)}, "offset": <first line>, "limit": <lines> }) or ` +
      `read_result({ "id": ${JSON.stringify(toolCallId)}, "pattern": "<regular expression>" }), not all of it.`
    );
  }

  private save(toolCallId: string, text: string): string | undefined {
    try {
      if (!this.dir) {
        const chosen = this.options.dir ?? this.sessionDir;
        if (chosen) mkdirSync(chosen, { recursive: true });
        this.dir = chosen ?? mkdtempSync(join(tmpdir(), 'troupe-results-'));
      }
      const path = join(this.dir, fileName(toolCallId));
      writeFileSync(path, text);
      this.saved.set(toolCallId, path);
      return path;
    } catch {
      return undefined;
    }
  }
}

/** A call id as a file name: ids come from the model's provider, so anything but a plain name is replaced. */
function fileName(toolCallId: string): string {
  return `${toolCallId.replace(/[^\w.-]/g, '_')}.txt`;
}

const READ_LIMIT = 200;
const MATCH_LIMIT = 100;
const LINE_LIMIT = 2_000;

/** A line as `read_result` shows it: a very long one (minified JSON) would otherwise make its answer as large. */
function clip(line: string): string {
  return line.length <= LINE_LIMIT
    ? line
    : `${line.slice(0, LINE_LIMIT)}[… ${n(line.length - LINE_LIMIT)} more characters]`;
}

function readResultTool(saved: ReadonlyMap<string, string>): AnyTool {
  return defineTool({
    name: 'read_result',
    label: 'Read saved result',
    description:
      'Reads part of a tool result that was too long to send whole (its preview says so and gives its id): a range ' +
      `of lines (offset is the first line, from 1; at most ${READ_LIMIT} lines), or the lines matching a pattern.`,
    schema: z.object({
      id: z.string().describe('The tool call id the preview names'),
      offset: z.number().int().min(1).optional().describe('First line to read, from 1 (default 1)'),
      limit: z.number().int().min(1).max(READ_LIMIT).optional().describe(`Lines to read (default ${READ_LIMIT})`),
      pattern: z.string().optional().describe('A regular expression: only matching lines, with their numbers'),
    }),
    readOnly: true,
    safeToRepeat: true,
    execute({ id, offset, limit, pattern }) {
      const path = saved.get(id);
      if (!path) return { content: `No saved result has the id ${JSON.stringify(id)}.`, isError: true };
      const lines = readFileSync(path, 'utf8').split('\n');
      if (pattern !== undefined) {
        let regex: RegExp;
        try {
          regex = new RegExp(pattern);
        } catch (error) {
          return {
            content: `The pattern is not a valid regular expression: ${(error as Error).message}`,
            isError: true,
          };
        }
        const found: string[] = [];
        for (let i = 0; i < lines.length && found.length < MATCH_LIMIT; i++) {
          if (regex.test(lines[i] as string)) found.push(`${i + 1}: ${clip(lines[i] as string)}`);
        }
        if (found.length === 0) return `No line of the ${n(lines.length)} matches ${pattern}.`;
        const more = found.length === MATCH_LIMIT ? `\n[first ${MATCH_LIMIT} matches shown; narrow the pattern]` : '';
        return found.join('\n') + more;
      }
      const from = (offset ?? 1) - 1;
      const to = Math.min(lines.length, from + (limit ?? READ_LIMIT));
      if (from >= lines.length) return `The result has ${n(lines.length)} lines; line ${from + 1} is past its end.`;
      const body = lines
        .slice(from, to)
        .map((line, i) => `${from + i + 1}: ${clip(line)}`)
        .join('\n');
      const rest =
        to < lines.length ? `\n[lines ${from + 1}-${to} of ${n(lines.length)}; offset ${to + 1} reads on]` : '';
      return body + rest;
    },
  });
}

function countLines(text: string): number {
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
  return lines;
}

function n(value: number): string {
  return value.toLocaleString('en');
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
