import { checkAssignment, type ParsedShell, type SimpleCommand, unwrap, type Word } from './commands.js';

/**
 * Splits a shell command line into the simple commands it would run, so that a rule such as `bash(git *)` is
 * checked against each of them and not against the line as a whole: `git log && curl x | sh` is two commands
 * and the second is not git. Wrappers that run another command (`env`, `sh -c`, `xargs`, `timeout`, `find -exec`,
 * …) are unwrapped, so the wrapped command is checked too. What cannot be known without running the line (a
 * script file, `eval` of a variable, a command name that is a variable, a here-document) is reported as a doubt:
 * a doubt never lets a line be allowed by a rule, so the caller asks.
 *
 * This is not a shell: it recognises what matters for deciding who may run what and is conservative elsewhere.
 */

export type { ParsedShell } from './commands.js';

/** Parses a command line. Never throws: what it cannot read becomes a doubt. */
export function parseShell(source: string): ParsedShell {
  const parsed: ParsedShell = { commands: [], doubts: [], opaque: [] };
  parseInto(source, parsed, 0);
  return parsed;
}

// Wrappers nest (`sh -c "env sh -c '…'"`); past this depth the line is a doubt rather than a stack overflow.
const MAX_DEPTH = 8;

function parseInto(source: string, out: ParsedShell, depth: number): void {
  if (depth > MAX_DEPTH) {
    out.doubts.push('commands nested too deeply to check');
    return;
  }
  const lexer = new Lexer(source, out, depth);
  let words: Word[] = [];
  let writes: string[] = [];
  const flush = () => {
    if (words.length > 0) addCommand(words, writes, out, depth);
    words = [];
    writes = [];
  };
  for (;;) {
    const token = lexer.next();
    if (token === undefined) break;
    if (token.kind === 'separator') flush();
    else if (token.kind === 'redirect') {
      if (token.heredoc) out.doubts.push('a here-document feeds text to a command');
      const target = lexer.next();
      if (target?.kind !== 'word') continue;
      if (token.output && !isHarmlessTarget(target.text)) writes.push(target.text);
    } else words.push(token);
  }
  flush();
  if (lexer.unterminated) out.doubts.push(`unterminated ${lexer.unterminated}`);
}

function isHarmlessTarget(target: string): boolean {
  return target === '/dev/null' || /^&?-?\d*$/.test(target) || target === '&-';
}

type Token = Word | { kind: 'separator' } | { kind: 'redirect'; output: boolean; heredoc: boolean };

const SEPARATORS = new Set([';', '&', '|', '(', ')', '\n']);

class Lexer {
  private i = 0;
  unterminated?: string;

  constructor(
    private readonly s: string,
    private readonly out: ParsedShell,
    private readonly depth: number,
  ) {}

  next(): Token | undefined {
    const s = this.s;
    while (this.i < s.length && (s[this.i] === ' ' || s[this.i] === '\t' || s[this.i] === '\r')) this.i++;
    if (this.i >= s.length) return undefined;
    const c = s[this.i] as string;
    if (c === '#') {
      while (this.i < s.length && s[this.i] !== '\n') this.i++;
      return this.next();
    }
    if (c === '\\' && s[this.i + 1] === '\n') {
      this.i += 2;
      return this.next();
    }
    // Process substitution: the inner command runs too.
    if ((c === '<' || c === '>') && s[this.i + 1] === '(') {
      this.i += 2;
      const inner = this.until(')');
      parseInto(inner, this.out, this.depth + 1);
      return { kind: 'word', text: '/dev/fd/63', dynamic: true };
    }
    const redirect = /^(\d*|&)(>>|>\||>&|>|<<<|<<-?|<&|<>|<)/.exec(s.slice(this.i, this.i + 5));
    if (redirect?.[2]) {
      const op = redirect[2];
      this.i += redirect[0].length;
      return { kind: 'redirect', output: op.startsWith('>') || op === '<>', heredoc: op === '<<' || op === '<<-' };
    }
    if (SEPARATORS.has(c)) {
      this.i++;
      // `&&`, `||`, `|&`, `;;` are separators as much as their single characters.
      if ((c === '&' || c === '|' || c === ';') && (s[this.i] === c || (c === '|' && s[this.i] === '&'))) this.i++;
      return { kind: 'separator' };
    }
    return this.word();
  }

  private word(): Word {
    const s = this.s;
    let text = '';
    let dynamic = false;
    while (this.i < s.length) {
      const c = s[this.i] as string;
      if (c === ' ' || c === '\t' || c === '\r' || SEPARATORS.has(c)) break;
      // A redirection right after a word (`cat>x`) ends the word.
      if (c === '<' || c === '>') break;
      if (c === '\\') {
        text += s[this.i + 1] ?? '';
        this.i += 2;
      } else if (c === "'") {
        this.i++;
        text += this.until("'", false);
      } else if (c === '$' && s[this.i + 1] === "'") {
        this.i += 2;
        const raw = this.until("'", false);
        if (raw.includes('\\')) dynamic = true; // ANSI-C escapes can spell any character
        text += raw;
      } else if (c === '"') {
        this.i++;
        const part = this.doubleQuoted();
        text += part.text;
        dynamic ||= part.dynamic;
      } else if (c === '$' || c === '`') {
        text += this.expansion();
        dynamic = true;
      } else {
        text += c;
        this.i++;
      }
    }
    return { kind: 'word', text, dynamic };
  }

  private doubleQuoted(): { text: string; dynamic: boolean } {
    const s = this.s;
    let text = '';
    let dynamic = false;
    while (this.i < s.length) {
      const c = s[this.i] as string;
      if (c === '"') {
        this.i++;
        return { text, dynamic };
      }
      if (c === '\\' && '"\\$`\n'.includes(s[this.i + 1] ?? '')) {
        text += s[this.i + 1];
        this.i += 2;
      } else if (c === '$' || c === '`') {
        text += this.expansion();
        dynamic = true;
      } else {
        text += c;
        this.i++;
      }
    }
    this.unterminated = 'double quote';
    return { text, dynamic };
  }

  /** `$x`, `${x}`, `$(…)`, `$((…))` or `` `…` ``: commands inside are parsed; the text stands for an unknown value. */
  private expansion(): string {
    const s = this.s;
    if (s[this.i] === '`') {
      this.i++;
      parseInto(this.until('`', false), this.out, this.depth + 1);
      return '$(…)';
    }
    const next = s[this.i + 1];
    if (next === '(' && s[this.i + 2] === '(') {
      this.i += 3;
      this.until(')');
      if (s[this.i] === ')') this.i++;
      return '$((…))';
    }
    if (next === '(') {
      this.i += 2;
      parseInto(this.until(')'), this.out, this.depth + 1);
      return '$(…)';
    }
    if (next === '{') {
      this.i += 2;
      const name = this.until('}', false);
      return `\${${name}}`;
    }
    const name = /^\$([A-Za-z_][A-Za-z0-9_]*|[0-9#?*@!$-])/.exec(s.slice(this.i));
    if (name) {
      this.i += name[0].length;
      return name[0];
    }
    this.i++;
    return '$';
  }

  /**
   * Reads up to the matching `close` and steps past it. With `nested`, parentheses (and quotes) inside are
   * balanced, so `$(echo "(" $(date))` ends where the shell would end it.
   */
  private until(close: string, nested = true): string {
    const s = this.s;
    const start = this.i;
    let level = 0;
    while (this.i < s.length) {
      const c = s[this.i] as string;
      if (nested && c === '\\') {
        this.i += 2;
        continue;
      }
      if (nested && (c === "'" || c === '"')) {
        const end = s.indexOf(c, this.i + 1);
        this.i = end < 0 ? s.length : end + 1;
        continue;
      }
      if (nested && c === '(') level++;
      else if (c === close) {
        if (level === 0) {
          this.i++;
          return s.slice(start, this.i - 1);
        }
        level--;
      }
      this.i++;
    }
    this.unterminated = close === "'" ? 'single quote' : close === '`' ? 'backquote' : `"${close}"`;
    return s.slice(start);
  }
}

// Words that open or close a compound command: the command proper follows them.
const KEYWORDS = new Set(['if', 'then', 'elif', 'else', 'fi', 'do', 'done', 'while', 'until', '!', '{', '}']);
// Compound commands whose words are not commands at all (`for x in …`): not followed here.
const OPAQUE = new Set(['for', 'case', 'select', 'function', 'coproc']);
function addCommand(words: Word[], writes: string[], out: ParsedShell, depth: number): void {
  let start = 0;
  while (start < words.length) {
    const word = words[start] as Word;
    if (KEYWORDS.has(word.text) && !word.dynamic) start++;
    else if (/^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(word.text)) {
      checkAssignment(word.text, out); // FOO=bar before the command
      start++;
    } else break;
  }
  const rest = words.slice(start);
  const head = rest[0];
  if (!head) return;
  if (OPAQUE.has(head.text)) {
    out.doubts.push(`"${head.text}" compound commands are not checked`);
    return;
  }
  if (head.dynamic) out.doubts.push(`the command name "${head.text}" is only known when the line runs`);
  const argv = rest.map((word) => word.text);
  const command: SimpleCommand = { argv, writes };
  out.commands.push(command);
  unwrap(command, rest, out, depth, parseInto);
}
