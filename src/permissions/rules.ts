import fs from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import type { JsonValue } from '../protocol/index.js';
import { basename, type ParsedShell, type SimpleCommand } from './commands.js';
import { parseShell } from './shell.js';
import type { ToolTraits } from './types.js';

/** A rule string that cannot be read. */
export class PermissionRuleError extends Error {
  override readonly name = 'PermissionRuleError';
}

/**
 * One rule as a user writes it: a tool-name glob, optionally with an argument pattern in parentheses —
 * `read_file`, `mcp__*`, `read_file(/etc/**)`, `bash(git *)`, `fetch(https://docs.example.com/*)`.
 */
export interface Rule {
  readonly source: string;
  readonly tool: string;
  readonly argument?: string;
  readonly matchesTool: (name: string) => boolean;
}

const RULE = /^\s*([A-Za-z0-9_*?[\]{}!,.-]+)\s*(?:\(([\s\S]*)\))?\s*$/;

export function parseRule(source: string): Rule {
  const match = RULE.exec(source);
  if (!match?.[1]) {
    throw new PermissionRuleError(
      `Permission rule ${JSON.stringify(source)} is not "tool" or "tool(pattern)", e.g. "bash(git *)" or "mcp__*"`,
    );
  }
  const tool = match[1];
  const argument = match[2]?.trim();
  const matchesTool = picomatch(tool);
  return argument === undefined || argument === '' || argument === '*' || argument === '**'
    ? { source, tool, matchesTool }
    : { source, tool, argument, matchesTool };
}

export interface MatchContext {
  cwd: string;
  /** `~` in paths; left as it is when unknown. */
  home?: string;
}

/** What a call gives rules to match: its tool's rule argument, read once per decision. */
export type CallSubject =
  | { kind: 'none' }
  /** `value` as written (resolved against the working directory), `real` with every symbolic link resolved. */
  | { kind: 'path'; value: string; real: string }
  | { kind: 'text'; value: string }
  | { kind: 'command'; value: string; parsed: ParsedShell }
  /** The tool declares no rule argument, or the argument is not a string: only name rules decide. */
  | { kind: 'unknown'; values: string[] };

export function subjectOf(args: JsonValue, tool: ToolTraits | undefined, context: MatchContext): CallSubject {
  const declared = tool?.ruleArgument;
  const record = typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {};
  if (!declared) return { kind: 'unknown', values: stringValues(record) };
  if ('path' in declared) {
    const value = record[declared.path];
    if (typeof value !== 'string') return { kind: 'none' };
    const absolute = resolvePath(value, context);
    return { kind: 'path', value: absolute, real: realPath(absolute) };
  }
  if ('command' in declared) {
    const value = record[declared.command];
    return typeof value === 'string' ? { kind: 'command', value, parsed: parseShell(value) } : { kind: 'none' };
  }
  const value = record[declared.text];
  return typeof value === 'string' ? { kind: 'text', value } : { kind: 'none' };
}

function stringValues(record: Record<string, JsonValue>): string[] {
  return Object.values(record).filter((value): value is string => typeof value === 'string');
}

function resolvePath(value: string, context: MatchContext): string {
  const expanded =
    context.home !== undefined && (value === '~' || value.startsWith('~/')) ? context.home + value.slice(1) : value;
  return path.resolve(context.cwd, expanded);
}

/**
 * The real location of a path: its deepest existing ancestor with links resolved, plus the part that does not
 * exist yet. A rule about `private/**` speaks about the files there by whatever name they are reached.
 */
function realPath(absolute: string): string {
  const rest: string[] = [];
  for (let existing = absolute; ; existing = path.dirname(existing)) {
    try {
      return path.join(fs.realpathSync.native(existing), ...rest);
    } catch {
      if (path.dirname(existing) === existing) return absolute;
      rest.unshift(path.basename(existing));
    }
  }
}

/**
 * Matchers are compiled once per (rule, working directory): a rule's pattern is relative to the directory the
 * agent works in, and the same rules serve every call.
 */
const compiled = new WeakMap<Rule, Map<string, unknown>>();

function compile<M>(rule: Rule, key: string, make: () => M): M {
  let byKey = compiled.get(rule);
  if (!byKey) {
    byKey = new Map();
    compiled.set(rule, byKey);
  }
  let matcher = byKey.get(key) as M | undefined;
  if (matcher === undefined) {
    matcher = make();
    byKey.set(key, matcher);
  }
  return matcher;
}

/**
 * A path rule's pattern as written and with its fixed part (`/ws/private` of `/ws/private/**`) resolved to its
 * real location, so that a rule written through a link, or from a working directory reached through one, still
 * speaks about the real files. The real location is read once, when the rule is first used.
 */
function pathMatcher(rule: Rule, context: MatchContext): (value: string) => boolean {
  return compile<(value: string) => boolean>(rule, `path:${context.cwd}`, () => {
    const pattern = resolvePath(rule.argument as string, context);
    const { base } = picomatch.scan(pattern);
    const real = realPath(base);
    const patterns = real === base ? [pattern] : [pattern, escapeGlob(real) + pattern.slice(base.length)];
    const matcher = picomatch(patterns, { dot: true });
    // `/etc/**` speaks about `/etc` itself too; a directory pattern written with a trailing slash the same.
    return (value) => matcher(value) || matcher(`${value}/`);
  });
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]{}()!+@\\]/g, '\\$&');
}

function textMatcher(rule: Rule): (value: string) => boolean {
  return compile(rule, 'text', () => picomatch(rule.argument as string, { bash: true, dot: true }));
}

/**
 * A rule used to refuse or to ask: it matches when it could speak about the call. A command rule matches when any
 * command the line runs (wrappers included) matches it loosely: flags in any order, split or joined (`rm -fr x`,
 * `rm -r -f x`, `rm x --recursive --force` all match `rm -rf *`), the command by its base name (`/bin/rm`). A
 * rule with a pattern matches a tool without a declared rule argument when any of its string arguments does.
 */
export function restrictiveMatch(rule: Rule, subject: CallSubject, context: MatchContext): boolean {
  if (rule.argument === undefined) return true;
  switch (subject.kind) {
    case 'none':
      return false;
    case 'path': {
      const matches = pathMatcher(rule, context);
      return matches(subject.value) || matches(subject.real);
    }
    case 'text':
      return textMatcher(rule)(subject.value);
    case 'unknown': {
      const text = textMatcher(rule);
      return subject.values.some((value) => text(value));
    }
    case 'command': {
      const pattern = loosePattern(rule);
      return subject.parsed.commands.some((command) => pattern(command));
    }
  }
}

/**
 * A rule used to allow: it matches only what it plainly says. Command lines are allowed by a set of rules
 * together, see {@link allowsCommandLine}; a tool without a declared rule argument is allowed by name rules only.
 */
export function permissiveMatch(rule: Rule, subject: CallSubject, context: MatchContext): boolean {
  if (rule.argument === undefined) return true;
  // The file that would really be used: an allowed name that is a link elsewhere allows nothing there.
  if (subject.kind === 'path') return pathMatcher(rule, context)(subject.real);
  if (subject.kind === 'text') return textMatcher(rule)(subject.value);
  return false;
}

/**
 * Whether a set of allow rules covers a whole command line: every command it runs (wrappers aside: what they run
 * is checked instead) matches one of the rules exactly (flags in their written order, only the letters of a
 * cluster sorted), it writes no file by redirection and holds nothing only known when it runs. `doubt` says why a
 * line whose commands are all allowed is still not.
 */
export function allowsCommandLine(
  rules: readonly Rule[],
  subject: Extract<CallSubject, { kind: 'command' }>,
): { allowed: boolean; doubt?: string } {
  const { parsed } = subject;
  const commands = parsed.commands.filter((command) => !command.wrapper);
  const patterns = rules.map((rule) => (rule.argument === undefined ? () => true : strictPattern(rule)));
  const covered = commands.every((command) => patterns.some((matches) => matches(command)));
  if (!covered) return { allowed: false };
  if (parsed.doubts.length > 0) return { allowed: false, doubt: parsed.doubts.join('; ') };
  const writes = commands.flatMap((command) => command.writes);
  if (writes.length > 0) return { allowed: false, doubt: `it writes to ${writes.join(', ')}` };
  return { allowed: commands.length > 0 };
}

function strictPattern(rule: Rule): (command: SimpleCommand) => boolean {
  const matcher = compile<(line: string) => boolean>(rule, 'strict', () => {
    const argument = rule.argument as string;
    const pattern = canonical(parseShell(argument).commands[0]?.argv ?? [argument]);
    const glob = picomatch(pattern, { bash: true, dot: true });
    // `git *` allows `git` alone too.
    const bare = pattern.endsWith(' *') ? pattern.slice(0, -2) : undefined;
    return (line: string) => glob(line) || line === bare;
  });
  return (command) => matcher(canonical(command.argv));
}

/** The words of a command with each short-flag cluster's letters sorted: `-fr` and `-rf` are one spelling. */
function canonical(argv: readonly string[]): string {
  return argv.map((word) => (/^-[A-Za-z]{2,}$/.test(word) ? `-${[...word.slice(1)].sort().join('')}` : word)).join(' ');
}

interface Shape {
  name: string;
  flags: Set<string>;
  positional: string;
}

function loosePattern(rule: Rule): (command: SimpleCommand) => boolean {
  return compile(rule, 'loose', () => {
    const argument = rule.argument as string;
    const shape = shapeOf(parseShell(argument).commands[0]?.argv ?? [argument]);
    const name = picomatch(shape.name, { bash: true, dot: true });
    // A lone `*` means any arguments, `.` and `..` included (which a glob's `*` never matches).
    const positional =
      shape.positional === ''
        ? (value: string) => value === ''
        : shape.positional === '*'
          ? () => true
          : picomatch(shape.positional, { bash: true, dot: true });
    // `rm *` speaks about a bare `rm` too.
    const bare = shape.positional === '*' ? '' : shape.positional.endsWith(' *') ? shape.positional.slice(0, -2) : null;
    return (command: SimpleCommand): boolean => {
      const its = shapeOf(command.argv, true);
      if (!name(its.name)) return false;
      for (const flag of shape.flags) if (!its.flags.has(flag)) return false;
      return its.positional === shape.positional || its.positional === bare || positional(its.positional);
    };
  });
}

// Long options that mean a short one, for the commands whose deny rules people write most.
const LONG_FLAGS: Record<string, Record<string, string>> = {
  rm: { recursive: 'r', force: 'f', dir: 'd' },
  cp: { recursive: 'r', force: 'f' },
  mv: { force: 'f' },
  git: { force: 'f' },
  chmod: { recursive: 'R' },
  chown: { recursive: 'R' },
};
const SAME_LETTER: Record<string, Record<string, string>> = { rm: { R: 'r' }, cp: { R: 'r' } };

/** `running`: the shape of a command about to run (not of a rule's pattern). */
function shapeOf(argv: readonly string[], running = false): Shape {
  const name = basename(argv[0] ?? '');
  const longs = LONG_FLAGS[name];
  const same = SAME_LETTER[name];
  const flags = new Set<string>();
  const positional: string[] = [];
  let options = true;
  for (const word of argv.slice(1)) {
    if (!options || word === '--') {
      if (word === '--' && options) options = false;
      else positional.push(word);
    } else if (/^--[A-Za-z]/.test(word)) {
      const long = word.slice(2).split('=')[0] as string;
      const short = longs?.[long];
      flags.add(short ? `-${short}` : `--${long}`);
    } else if (/^-[A-Za-z]+$/.test(word)) {
      for (const letter of word.slice(1)) flags.add(`-${same?.[letter] ?? letter}`);
    } else positional.push(word);
  }
  // Commands run without a terminal: `rm` never prompts, so `rm -r` is `rm -rf` (unless told to ask, and then
  // nothing answers yes).
  if (running && name === 'rm' && !flags.has('-i') && !flags.has('-I') && !flags.has('--interactive')) flags.add('-f');
  return { name, flags, positional: positional.join(' ') };
}
