/**
 * What one simple command runs besides itself. A wrapper (`time`, `nice`, `timeout`, `xargs`, `sudo`, `trap`, …)
 * runs its argument, so the command it wraps is a command of the line too; a destructive equivalent (`find
 * -delete`) is listed as the command it amounts to; an interpreter's inline program (`python3 -c`, `perl -e`,
 * `awk 'BEGIN{system(…)}'`, `git -c alias.x=!…`) is code no rule can see into and is reported as opaque.
 */

export interface SimpleCommand {
  /** The words as the shell would pass them, quotes removed. The first is the command. */
  argv: string[];
  /** Files the command writes by redirection (`> file`, `>> file`); `/dev/null` and descriptors are left out. */
  writes: string[];
  /**
   * It only runs another command of the list (`env X=1 git log`, `sh -c "…"`, `timeout 5 …`): deny rules see it,
   * but allowing the line is up to the commands it runs.
   */
  wrapper?: boolean;
}

export interface ParsedShell {
  commands: SimpleCommand[];
  /** Why the line cannot be fully known; empty when every command it runs is listed. */
  doubts: string[];
  /**
   * Commands that run a program written in another language (`python3 -c`, `node -e`, `awk` calling `system`,
   * `git -c`): no rule can see what they do, so outside bypass mode they wait for a person.
   */
  opaque: string[];
}

export interface Word {
  kind: 'word';
  text: string;
  /** Contains an unquoted or double-quoted expansion (`$x`, `$(…)`, `` `…` ``): its value is not known here. */
  dynamic: boolean;
}

/** Parses a piece of shell text into `out`, one level deeper. */
export type ParseInto = (source: string, out: ParsedShell, depth: number) => void;

interface Wrapper {
  /** Short options that take a value (`timeout -s KILL`, `sudo -u root`), so the value is skipped. */
  valued: string;
  /** Long options that take a value when written apart (`timeout --signal KILL`). */
  long?: readonly string[];
  /** Words before the command that are not options (`timeout 5`, `chrt 10`). */
  positional?: number;
  /** Options whose value is a command line (`flock -c '…'`, `su -c '…'`, `env -S '…'`). */
  script?: string;
  longScript?: readonly string[];
}

const WRAPPERS: Record<string, Wrapper> = {
  env: { valued: 'uCSP', long: ['unset', 'chdir'], script: 'S', longScript: ['split-string'] },
  sudo: { valued: 'ugpChDrtTU', long: ['user', 'group', 'host', 'prompt', 'chdir', 'role', 'type', 'other-user'] },
  doas: { valued: 'uC' },
  run0: { valued: 'uGD', long: ['user', 'group', 'chdir', 'setenv', 'unit', 'property', 'description', 'slice'] },
  pkexec: { valued: '', long: ['user'] },
  su: { valued: 'glsw', long: ['group', 'shell'], positional: 1, script: 'c', longScript: ['command'] },
  runuser: { valued: 'uglsw', long: ['user', 'group', 'shell'], script: 'c', longScript: ['command'] },
  sg: { valued: '', positional: 1, script: 'c' },
  nohup: { valued: '' },
  command: { valued: '' },
  builtin: { valued: '' },
  exec: { valued: 'a' },
  time: { valued: 'fo', long: ['format', 'output'] },
  nice: { valued: 'n', long: ['adjustment'] },
  ionice: { valued: 'cnp', long: ['class', 'classdata', 'pid'] },
  chrt: { valued: '', positional: 1 },
  taskset: { valued: '', positional: 1 },
  timeout: { valued: 'sk', long: ['signal', 'kill-after'], positional: 1 },
  stdbuf: { valued: 'ioe', long: ['input', 'output', 'error'] },
  setsid: { valued: '' },
  setpriv: { valued: '' },
  unshare: { valued: '' },
  nsenter: { valued: 'tSGw', long: ['target', 'setuid', 'setgid', 'wd'] },
  chroot: { valued: '', positional: 1 },
  prlimit: { valued: 'p', long: ['pid'] },
  cgexec: { valued: 'g' },
  unbuffer: { valued: '' },
  caffeinate: { valued: 'tw' },
  xargs: {
    valued: 'IinLPdEsa',
    long: ['arg-file', 'delimiter', 'max-args', 'max-lines', 'max-procs', 'max-chars', 'process-slot-var'],
  },
  watch: { valued: 'nd', long: ['interval', 'differences'] },
  flock: {
    valued: 'wEc',
    long: ['wait', 'timeout', 'conflict-exit-code'],
    positional: 1,
    script: 'c',
    longScript: ['command'],
  },
  script: { valued: 'cEtTIOBm', script: 'c', longScript: ['command'] },
  strace: { valued: 'eopsuIb' },
  ltrace: { valued: 'eopsun' },
  faketime: { valued: 'mf', positional: 1 },
  fakeroot: { valued: 'ls' },
  eatmydata: { valued: '' },
  nocache: { valued: 'n' },
  chronic: { valued: '' },
  firejail: { valued: '' },
  proxychains: { valued: 'f' },
  proxychains4: { valued: 'f' },
  torsocks: { valued: 'uapP' },
  busybox: { valued: '' },
};

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'yash']);

/** Interpreters and the options that hand them a program on the command line. */
const INLINE: Record<string, RegExp> = {
  python: /^-[A-Za-z]*c/,
  pypy: /^-[A-Za-z]*c/,
  perl: /^-[A-Za-z]*[eE]/,
  ruby: /^-[A-Za-z]*e/,
  node: /^(-[A-Za-z]*[ep]|--eval|--print)/,
  nodejs: /^(-[A-Za-z]*[ep]|--eval|--print)/,
  bun: /^(-e|--eval|-p|--print)/,
  deno: /^(eval)$/,
  php: /^-[A-Za-z]*[rR]/,
  lua: /^-[A-Za-z]*e/,
  luajit: /^-[A-Za-z]*e/,
  Rscript: /^(-e|--expr)/,
  osascript: /^-e/,
  tclsh: /^-c/,
  jrunscript: /^-e/,
  gdb: /^(-ex|--ex|-eval-command|--eval-command|-x)/,
  vim: /^(-c|\+)/,
  nvim: /^(-c|\+)/,
};
const DECLARE = new Set(['export', 'declare', 'typeset', 'local', 'readonly']);
const AWK = new Set(['awk', 'gawk', 'mawk', 'nawk']);

/** Variables that make the next command run code of their value (a pager, an editor, a preloaded library, …). */
const CODE_VARIABLE =
  /^(?:[A-Z_]*(?:EDITOR|_COMMAND|ASKPASS)|GIT_SSH|GIT_EXTERNAL_DIFF|GIT_CONFIG_(?:COUNT|PARAMETERS|KEY_\d+|VALUE_\d+)|LD_PRELOAD|LD_AUDIT|BASH_ENV|ENV|PROMPT_COMMAND|PERL5OPT|PERL5DB|RUBYOPT|NODE_OPTIONS|PYTHONSTARTUP|PYTHONINSPECT)=/;

/** Notes assignments before a command (`FOO=1 cmd`) that make it run code no rule sees. */
export function checkAssignment(text: string, out: ParsedShell): void {
  if (CODE_VARIABLE.test(text))
    out.opaque.push(`${text.slice(0, text.indexOf('='))}=… makes the command run its value`);
}

/** The command a wrapper runs is a command of the line as well: checked like any other. */
export function unwrap(command: SimpleCommand, words: Word[], out: ParsedShell, depth: number, parse: ParseInto): void {
  const { argv } = command;
  const name = basename(argv[0] as string);
  const family = name.replace(/[\d.]+$/, '');
  if (SHELLS.has(name)) {
    command.wrapper = unwrapShell(argv, words, out, depth, parse);
    return;
  }
  if (name === 'eval' || name === 'trap' || name === 'alias') {
    unwrapBuiltin(name, command, words, out, depth, parse);
    return;
  }
  if (DECLARE.has(name)) {
    for (const arg of argv.slice(1)) checkAssignment(arg, out);
    return;
  }
  if (name === 'source' || name === '.') {
    out.doubts.push(`"${argv.join(' ')}" runs the commands of a file`);
    return;
  }
  if (name === 'find') {
    unwrapFind(argv, out, depth, parse);
    return;
  }
  if (name === 'git') {
    const config = argv.slice(1).find((arg) => arg === '-c' || /^--(config-env|exec-path)\b/.test(arg));
    if (config) out.opaque.push(`"git ${config}" can make git run any command`);
    return;
  }
  const inline = INLINE[name] ?? INLINE[family];
  if (inline) {
    if (argv.slice(1).some((arg) => inline.test(arg))) out.opaque.push(`"${name}" runs a program given inline`);
    else if (argv.length === 1 || argv.includes('-')) out.opaque.push(`"${name}" runs a program read from its input`);
    return;
  }
  if (AWK.has(name)) {
    const program = awkProgram(argv);
    if (program === undefined || /system\s*\(|\|/.test(program)) {
      out.opaque.push(`"${name}" runs a program that can start commands`);
    }
    return;
  }
  const wrapper = WRAPPERS[name];
  if (!wrapper) return;
  if (name === 'command' && argv.slice(1).some((arg) => /^-[a-zA-Z]*[vV]/.test(arg))) return; // only prints
  let i = 1;
  for (; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      i++;
      break;
    }
    if (name === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(arg)) {
      checkAssignment(arg, out);
      continue;
    }
    if (arg === '-' && (name === 'su' || name === 'sg' || name === 'runuser')) continue; // a login shell
    if (!arg.startsWith('-') || arg === '-') break;
    if (arg.startsWith('--')) {
      const [option = '', inlineValue] = arg.slice(2).split(/=(.*)/s);
      const script = wrapper.longScript?.includes(option);
      const value = inlineValue ?? (script || wrapper.long?.includes(option) ? argv[++i] : undefined);
      if (script) {
        command.wrapper = true;
        parse([value ?? '', ...(name === 'env' ? argv.slice(i + 1) : [])].join(' '), out, depth + 1);
        return;
      }
      continue;
    }
    const letters = arg.slice(1);
    if (/^\d+$/.test(letters)) continue; // `nice -10`
    const at = [...letters].findIndex((letter) => wrapper.valued.includes(letter) || wrapper.script?.includes(letter));
    if (at < 0) continue;
    const value = at === letters.length - 1 ? argv[++i] : letters.slice(at + 1);
    if (wrapper.script?.includes(letters[at] as string)) {
      command.wrapper = true;
      if (words[i]?.dynamic) out.doubts.push(`"${name}" runs a command only known when the line runs`);
      parse([value ?? '', ...(name === 'env' ? argv.slice(i + 1) : [])].join(' '), out, depth + 1);
      return;
    }
  }
  i += Math.min(wrapper.positional ?? 0, argv.length - i);
  const inner = argv.slice(i);
  if (inner.length === 0) return;
  command.wrapper = true;
  // `su root -c '…'`, `sg wheel -c '…'`: the user or group first, then the shell's `-c`.
  if (wrapper.script && inner[0] === '-c') {
    if (words[i + 1]?.dynamic) out.doubts.push(`"${name}" runs a command only known when the line runs`);
    parse(inner[1] ?? '', out, depth + 1);
    return;
  }
  if (name === 'watch') {
    parse(inner.join(' '), out, depth + 1);
    return;
  }
  const innerWords = words.slice(i);
  if (innerWords[0]?.dynamic) out.doubts.push(`"${name}" runs a command only known when the line runs`);
  // `xargs rm` runs rm with arguments read from its input: the command is known, its arguments are not.
  if (name === 'xargs') out.doubts.push('xargs adds arguments only known when the line runs');
  const innerCommand: SimpleCommand = { argv: inner, writes: [] };
  out.commands.push(innerCommand);
  unwrap(innerCommand, innerWords, out, depth + 1, parse);
}

/** `eval …`, `trap '…' EXIT` and `alias x='…'` run (or will run) text as a command line. */
function unwrapBuiltin(
  name: string,
  command: SimpleCommand,
  words: Word[],
  out: ParsedShell,
  depth: number,
  parse: ParseInto,
): void {
  command.wrapper = true;
  let texts: Array<{ text: string; dynamic: boolean }> = [];
  if (name === 'eval') {
    texts = [{ text: command.argv.slice(1).join(' '), dynamic: words.slice(1).some((word) => word.dynamic) }];
  } else if (name === 'alias') {
    texts = words
      .slice(1)
      .filter((word) => word.text.includes('='))
      .map((word) => ({ text: word.text.slice(word.text.indexOf('=') + 1), dynamic: word.dynamic }));
  } else {
    // trap [-lp] [[action] signal …]: one word alone is a signal to reset; `-` and '' reset or ignore.
    let i = 1;
    while (words[i]?.text.startsWith('-') && words[i]?.text !== '-') i++;
    if (words[i - 1]?.text === '--' || words.length - i >= 2) {
      const action = words[i];
      if (action && action.text !== '-' && action.text !== '') texts = [action];
    }
  }
  for (const text of texts) {
    if (text.dynamic) {
      out.doubts.push(`${name} runs text that is only known when the line runs`);
      out.opaque.push(`${name} runs text that is only known when the line runs`);
    } else parse(text.text, out, depth + 1);
  }
}

/**
 * `sh -c "…"` is a wrapper (true). A shell whose commands cannot be read here — its input, a script file, a `-c`
 * text only known when the line runs — is a doubt, and for the last two as opaque as an interpreter's program.
 */
function unwrapShell(argv: string[], words: Word[], out: ParsedShell, depth: number, parse: ParseInto): boolean {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-c' || (/^-[a-zA-Z]+$/.test(arg) && arg.includes('c'))) {
      const script = argv[i + 1];
      if (script === undefined) out.doubts.push(`"${argv[0]} -c" without a command`);
      else {
        if (words[i + 1]?.dynamic) out.opaque.push(`"${argv[0]} -c" runs text only known when the line runs`);
        parse(script, out, depth + 1);
      }
      return true;
    }
    if (arg === '-' || arg === '-s') break;
    if (arg.startsWith('-') || arg.startsWith('+')) continue;
    out.doubts.push(`"${argv.slice(0, i + 1).join(' ')}" runs the commands of a script file`);
    return false;
  }
  out.doubts.push(`"${argv.join(' ')}" runs commands from its input`);
  out.opaque.push(`"${argv.join(' ')}" runs commands from its input`);
  return false;
}

/** `find … -exec cmd {} ;` runs cmd; `find dir -delete` removes the tree below dir, as `rm -rf dir` would. */
function unwrapFind(argv: string[], out: ParsedShell, depth: number, parse: ParseInto): void {
  const starts: string[] = [];
  let i = 1;
  while (i < argv.length && /^-[HLP]$|^-D$|^-O\d*$/.test(argv[i] as string)) i += argv[i] === '-D' ? 2 : 1;
  for (; i < argv.length && !/^[-(!]/.test(argv[i] as string); i++) starts.push(argv[i] as string);
  for (; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-delete') {
      out.commands.push({ argv: ['rm', '-rf', ...(starts.length > 0 ? starts : ['.'])], writes: [] });
      continue;
    }
    if (arg !== '-exec' && arg !== '-execdir' && arg !== '-ok' && arg !== '-okdir') continue;
    let end = i + 1;
    while (end < argv.length && argv[end] !== ';' && argv[end] !== '+') end++;
    const inner = argv.slice(i + 1, end);
    if (inner.length > 0) {
      const innerCommand: SimpleCommand = { argv: inner, writes: [] };
      out.commands.push(innerCommand);
      unwrap(innerCommand, inner.map(staticWord), out, depth + 1, parse);
    }
    i = end;
  }
}

/** The program text of an awk command line, or undefined when it comes from a file (`-f`). */
function awkProgram(argv: string[]): string | undefined {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return argv[i + 1] ?? '';
    if (arg === '-f' || arg.startsWith('--file') || arg === '-E' || arg.startsWith('--exec')) return undefined;
    if (/^-[vF]$/.test(arg)) i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return '';
}

function staticWord(text: string): Word {
  return { kind: 'word', text, dynamic: false };
}

export function basename(command: string): string {
  const slash = command.lastIndexOf('/');
  return slash < 0 ? command : command.slice(slash + 1);
}
