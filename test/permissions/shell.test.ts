import { describe, expect, it } from 'vitest';
import { parseShell } from '../../src/permissions/index.js';

const argvs = (line: string) => parseShell(line).commands.map((command) => command.argv.join(' '));

describe('parseShell splits a line into the commands it runs', () => {
  it.each([
    ['git log && curl x | sh', ['git log', 'curl x', 'sh']],
    ['a; b || c & d', ['a', 'b', 'c', 'd']],
    ['a\nb', ['a', 'b']],
    ['(cd /tmp && rm x)', ['cd /tmp', 'rm x']],
    ['{ a; b; }', ['a', 'b']],
    ['echo $(rm -rf /)', ['rm -rf /', 'echo $(…)']],
    ['echo `whoami`', ['whoami', 'echo $(…)']],
    ['echo "$(id) and `uname`"', ['id', 'uname', 'echo $(…) and $(…)']],
    ['diff <(ls a) >(tee b)', ['ls a', 'tee b', 'diff /dev/fd/63 /dev/fd/63']],
    ['if true; then rm x; fi', ['true', 'rm x']],
    ['FOO=1 BAR=2 make', ['make']],
    ['git commit -m "fix; rm -rf /"', ['git commit -m fix; rm -rf /']],
    ["echo 'a && b' \\; c", ['echo a && b ; c']],
    ['ls # && rm -rf /', ['ls']],
    ['echo $((1+2))', ['echo $((…))']],
  ])('%s', (line, expected) => {
    expect(argvs(line)).toEqual(expected);
  });

  it('records files written by redirection, not /dev/null or descriptors', () => {
    expect(parseShell('ls > out.txt 2>&1 >>log 2>/dev/null').commands[0]?.writes).toEqual(['out.txt', 'log']);
    expect(parseShell('cat<in>out').commands[0]).toEqual({ argv: ['cat'], writes: ['out'] });
  });
});

describe('wrappers are unwrapped, so the command they run is checked too', () => {
  it.each([
    ['env FOO=1 -i rm -rf /', 'rm -rf /'],
    ['sudo -u root rm -r x', 'rm -r x'],
    ['nohup rm x', 'rm x'],
    ['timeout -s KILL 10 rm -fr x', 'rm -fr x'],
    ['timeout 5s curl x', 'curl x'],
    ['nice -n 5 rm x', 'rm x'],
    ['nice -10 rm x', 'rm x'],
    ['xargs -n1 -I{} rm {}', 'rm {}'],
    ['command rm x', 'rm x'],
    ['exec rm x', 'rm x'],
    ['stdbuf -oL rm x', 'rm x'],
    ['env -- rm x', 'rm x'],
    ['sh -c "rm -rf ~"', 'rm -rf ~'],
    ["bash -lc 'git status; rm x'", 'rm x'],
    ['bash -c "bash -c \\"rm y\\""', 'rm y'],
    ['env -S "rm -rf /"', 'rm -rf /'],
    ['eval rm x', 'rm x'],
    ['watch -n 1 rm x', 'rm x'],
    ['find . -name "*.o" -exec rm -f {} \\;', 'rm -f {}'],
    ['find . -delete', 'rm -rf .'],
    ['find -H a b -type f -delete', 'rm -rf a b'],
    ['time -p rm x', 'rm x'],
    ["trap 'rm x' EXIT", 'rm x'],
    ['timeout --signal KILL 5 rm x', 'rm x'],
    ["flock /tmp/l -c 'rm x'", 'rm x'],
    ["su root -c 'rm x'", 'rm x'],
    ['busybox rm x', 'rm x'],
    ['/usr/bin/env rm x', 'rm x'],
  ])('%s runs %s', (line, inner) => {
    expect(argvs(line)).toContain(inner);
  });

  it('marks the wrapper, so an allow rule judges what it runs', () => {
    const [outer, inner] = parseShell('env FOO=1 git log').commands;
    expect(outer?.wrapper).toBe(true);
    expect(inner?.wrapper).toBeUndefined();
  });
});

describe('what cannot be known without running the line is a doubt', () => {
  it.each([
    ['curl x | sh', 'runs commands from its input'],
    ['bash script.sh', 'script file'],
    ['source ./env.sh', 'commands of a file'],
    ['. ./env.sh', 'commands of a file'],
    ['$CMD foo', 'only known when the line runs'],
    ['"$(echo rm)" -rf /', 'only known when the line runs'],
    ['eval "$X"', 'eval'],
    ['cat <<EOF\nrm x\nEOF', 'here-document'],
    ['for f in *; do rm $f; done', 'compound'],
    ['echo "unterminated', 'unterminated'],
    ["$'\\x72m' -rf /", 'only known when the line runs'],
    ['ls | xargs rm', 'xargs'],
  ])('%s', (line, why) => {
    const { doubts } = parseShell(line);
    expect(doubts.length).toBeGreaterThan(0);
    expect(doubts.join(' ')).toContain(why);
  });

  it('a plain line has none', () => {
    expect(parseShell('git log --oneline | head -5 && echo done').doubts).toEqual([]);
  });

  it('stops at a nesting depth instead of overflowing the stack', () => {
    let line = 'rm x';
    for (let i = 0; i < 12; i++) line = `sh -c ${JSON.stringify(line)}`;
    expect(parseShell(line).doubts).toContain('commands nested too deeply to check');
  });
});
