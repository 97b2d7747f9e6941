/**
 * Sessions from the command line, in this process: `run --session` records, `sessions` lists, `resume` continues
 * and `replay` runs a session again from its journal. (run.test.ts and terminal.test.ts crash and resume the bin.)
 */
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, harness as harnessIn, runIn } from './harness.js';
import { sampleCopy } from './helpers.js';

let dir: string;
const harness = (options: Parameters<typeof harnessIn>[1] = {}) => harnessIn(dir, options);
const troupe = (h: Harness, argv: string[]) => runIn(h, argv);
const TASK = 'Tell me about this project';
const sessionsDir = () => path.join(dir, '.troupe', 'sessions');
/** What a `--json` command printed, one object a line. */
const jsonLines = (h: Harness) =>
  h
    .out()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; agentId?: string; text?: string; usage?: unknown });

beforeEach(async () => {
  dir = await sampleCopy();
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('troupe run --session', () => {
  it('records the run in .troupe/sessions of the folder, hidden from git and the search tools', async () => {
    const h = harness({ input: 'y\n' });
    expect(await troupe(h, ['run', '--offline', '--session', TASK])).toBe(0);
    const [id] =
      h
        .out()
        .match(/^session (\S+)$/m)
        ?.slice(1) ?? [];
    expect(id).toMatch(/^session_/);
    expect(existsSync(path.join(sessionsDir(), `${id}.jsonl`))).toBe(true);
    expect(await fs.readFile(path.join(dir, '.troupe', '.gitignore'), 'utf8')).toBe('*\n');
    expect(JSON.parse(await fs.readFile(path.join(sessionsDir(), `${id}.run.json`), 'utf8'))).toMatchObject({
      folder: dir,
      offline: true,
      mode: 'default',
    });
    // The team works as without a session, and the journal holds the subagents' facts beside the root's.
    expect(h.out()).toMatch(/^main: swarm 2 tasks$/m);
    const subagents = [...h.out().matchAll(/^main: started (default_\S+)$/gm)].map((m) => m[1]);
    expect(subagents).toHaveLength(2);
    const journal = await fs.readFile(path.join(sessionsDir(), `${id}.jsonl`), 'utf8');
    for (const agent of subagents) expect(journal).toMatch(new RegExp(`"k":"turn_end",[^\\n]*"a":"${agent}"`));
    expect(await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8')).toContain('# Notes on this folder');
    // A second run's tree does not show the journals.
    const again = harness();
    expect(await troupe(again, ['run', '--offline', '--json', '--mode', 'bypass', '--session', TASK])).toBe(0);
    const tree = again
      .out()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; toolName?: string; result?: { content: [{ text: string }] } })
      .find((event) => event.type === 'tool_execution_end' && event.toolName === 'tree');
    expect(tree?.result?.content[0].text).toContain('src/');
    expect(tree?.result?.content[0].text).not.toMatch(/sessions|\.jsonl/);
  });

  it('--session=<id> names a new session, and continues it when it exists', async () => {
    const first = harness();
    expect(await troupe(first, ['run', '--offline', '--mode', 'bypass', '--session=work', 'Run `echo one`'])).toBe(0);
    expect(first.out()).toMatch(/^session work$/m);
    const second = harness();
    expect(await troupe(second, ['run', '--offline', '--mode', 'bypass', '--session=work', 'Run `echo two`'])).toBe(0);
    const list = harness();
    expect(await troupe(list, ['sessions', '--json'])).toBe(0);
    const [info] = list
      .out()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    // Two turns of four messages each: prompt, the call, its result, the answer.
    expect(info).toMatchObject({ id: 'work', status: 'idle', messages: 8, title: 'Run `echo one`' });
  });

  it('refuses an empty id in one line', async () => {
    const h = harness();
    expect(await troupe(h, ['run', '--offline', '--session=', TASK])).toBe(2);
    expect(h.err).toEqual(['troupe run: --session=<id>: the id is empty']);
  });
});

describe('troupe sessions', () => {
  it('lists sessions newest first with status, last activity, tokens, cost, messages and title', async () => {
    expect(await troupe(harness(), ['run', '--offline', '--mode', 'bypass', '--session=a', 'Run `echo a`'])).toBe(0);
    expect(await troupe(harness(), ['run', '--offline', '--mode', 'bypass', '--session=b', 'Run `echo b`'])).toBe(0);
    const h = harness();
    expect(await troupe(h, ['sessions'])).toBe(0);
    const lines = h.out().trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +STATUS +LAST ACTIVITY +TREE TOKENS +TREE COST +MSGS +TITLE$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(['b', 'a']);
    expect(lines[1]).toMatch(/^b +idle +\d{4}-\d\d-\d\d \d\d:\d\d +\d+ +\$0\.0000 +4 +Run `echo b`$/);
  });

  it('says where it looked when there are none, without creating anything', async () => {
    const h = harness();
    expect(await troupe(h, ['sessions'])).toBe(0);
    expect(h.out()).toBe(`No sessions in ${sessionsDir()} (start one with troupe run --session "<task>")\n`);
    expect(existsSync(path.join(dir, '.troupe'))).toBe(false);
  });

  it('keeps them where --sessions-dir or TROUPE_SESSIONS_DIR says', async () => {
    const elsewhere = path.join(dir, 'kept');
    const run = harness();
    expect(
      await troupe(run, [
        'run',
        '--offline',
        '--mode',
        'bypass',
        '--sessions-dir',
        'kept',
        '--session=x',
        'Run `true`',
      ]),
    ).toBe(0);
    expect(existsSync(path.join(elsewhere, 'x.jsonl'))).toBe(true);
    const h = harness({ env: { TROUPE_SESSIONS_DIR: elsewhere } });
    expect(await troupe(h, ['sessions'])).toBe(0);
    expect(h.out()).toMatch(/^x +idle/m);
  });
});

describe('troupe resume', () => {
  it('continues the latest session with a new task, with the settings it ran with', async () => {
    expect(await troupe(harness(), ['run', '--offline', '--mode', 'bypass', '--session=old', 'Run `true`'])).toBe(0);
    expect(await troupe(harness(), ['run', '--offline', '--mode', 'bypass', '--session=new', 'Run `true`'])).toBe(0);
    const h = harness();
    // No key and no --offline: the session says it ran offline; bypass: no question.
    expect(await troupe(h, ['resume', 'new', 'Run `echo again > again.txt`'])).toBe(0);
    expect(h.out()).toMatch(/^session new$/m);
    expect(h.out()).not.toContain('asks to run');
    expect(await fs.readFile(path.join(dir, 'again.txt'), 'utf8')).toBe('again\n');
    const latest = harness();
    expect(await troupe(latest, ['resume'])).toBe(0);
    expect(latest.out()).toMatch(/^session new$/m);
    expect(latest.out()).toContain('nothing was in flight; give a task to go on: troupe resume <id> "<task>"');
  });

  it('says in one line when there is nothing to resume', async () => {
    const none = harness();
    expect(await troupe(none, ['resume'])).toBe(2);
    expect(none.err).toEqual([
      `troupe resume: no sessions in ${sessionsDir()} (start one with troupe run --session "<task>")`,
    ]);
    expect(await troupe(harness(), ['run', '--offline', '--mode', 'bypass', '--session=s', 'Run `true`'])).toBe(0);
    const unknown = harness();
    expect(await troupe(unknown, ['resume', 'nope'])).toBe(2);
    expect(unknown.err).toEqual([`troupe resume: no session "nope" in ${sessionsDir()}`]);
  });
});

describe('troupe replay', () => {
  it('runs a session again from its journal, runs no tool, and says it matched', async () => {
    expect(await troupe(harness({ input: 'y\n' }), ['run', '--offline', '--session=r', TASK])).toBe(0);
    await fs.rm(path.join(dir, 'TROUPE_NOTES.md'));
    const h = harness();
    expect(await troupe(h, ['replay', 'r'])).toBe(0);
    const out = h.out();
    expect(out).toMatch(/^main: tree$/m);
    expect(out).toContain('main: asks to run write_file TROUPE_NOTES.md');
    expect(out).toMatch(/^main> Done\. /m);
    expect(out).toMatch(/^replay matched its recording: \d+ records, 1 turn$/m);
    expect(out).toMatch(/^done: completed/m);
    // Nothing ran: the file the run wrote is not written again.
    expect(existsSync(path.join(dir, 'TROUPE_NOTES.md'))).toBe(false);
  });

  it('prints the events as JSON lines with --json', async () => {
    expect(await troupe(harness(), ['run', '--offline', '--mode', 'bypass', '--session=j', 'Run `true`'])).toBe(0);
    const h = harness();
    expect(await troupe(h, ['replay', '--json', 'j'])).toBe(0);
    const events = jsonLines(h);
    expect(events.map((e) => e.type)).toContain('tool_execution_end');
    expect(events.at(-2)).toMatchObject({ type: 'note', text: expect.stringMatching(/^replay matched/) });
    expect(events.at(-1)).toMatchObject({ type: 'result', stopReason: 'completed' });
  });

  it('replays the whole tree: the same tokens as the run and the listing, and the final text in --json', async () => {
    const lastLine = (h: Harness) => jsonLines(h).at(-1) ?? { type: 'none' };
    const run = harness();
    // The offline team's answer to this task comes from a swarm of two helpers.
    expect(await troupe(run, ['run', '--offline', '--mode', 'bypass', '--json', '--session=t', TASK])).toBe(0);
    const ran = lastLine(run);
    expect(ran).toMatchObject({ type: 'result', stopReason: 'completed', text: expect.stringMatching(/\S/) });
    const events = jsonLines(run);
    const agents = new Set(events.map((e) => e.agentId));
    expect(agents.size).toBeGreaterThan(1);
    const listed = harness();
    expect(await troupe(listed, ['sessions', '--json'])).toBe(0);
    expect(lastLine(listed)).toMatchObject({ id: 't', usage: ran.usage });
    const replay = harness();
    expect(await troupe(replay, ['replay', '--json', 't'])).toBe(0);
    const replayed = jsonLines(replay);
    // Every agent of the tree ran again, and matched its recording.
    expect(new Set(replayed.map((e) => e.agentId))).toEqual(agents);
    expect(replayed.at(-2)).toMatchObject({ type: 'note', text: expect.stringMatching(/^replay matched/) });
    expect(replayed.at(-1)).toEqual(ran);
  });

  it('needs an id, and says so in one line', async () => {
    const h = harness();
    expect(await troupe(h, ['replay'])).toBe(2);
    expect(h.err).toEqual(['troupe replay: no session: troupe replay <id> (troupe sessions lists them)']);
  });
});

describe('troupe fork', () => {
  it('forks a session at a moment, runs the fork live, lists it with its parent; the parent is untouched', async () => {
    expect(await troupe(harness({ input: 'y\n' }), ['run', '--offline', '--session=r', TASK])).toBe(0);
    const journal = path.join(sessionsDir(), 'r.jsonl');
    const before = await fs.readFile(journal);
    const turnStart = (await fs.readFile(journal, 'utf8'))
      .split('\n')
      .map((line) => (line ? (JSON.parse(line) as { k: string; s?: number }) : undefined))
      .find((record) => record?.k === 'turn_start');
    const at = (turnStart?.s ?? 0) - 1; // the prompt submitted, its turn not started
    const h = harness({ input: 'y\n' });
    const code = await troupe(h, ['fork', 'r', '--at', String(at), '--fork-id', 'f', '--edit-input', 'Just say hi']);
    expect(code, JSON.stringify(h.err)).toBe(0);
    expect(h.out()).toContain(`forked r at ${at}: session f`);
    expect(h.out()).toMatch(/^done: completed/m);
    expect(await fs.readFile(path.join(sessionsDir(), 'f.jsonl'), 'utf8')).toContain('Just say hi');
    expect(await fs.readFile(journal)).toEqual(before);
    const list = harness();
    expect(await troupe(list, ['sessions'])).toBe(0);
    expect(list.out()).toContain(`f is a fork of r at seq ${at}`);
  });

  it('refuses an edit with nothing to change there, and a missing --at, as usage errors', async () => {
    expect(await troupe(harness({ input: 'y\n' }), ['run', '--offline', '--session=r', TASK])).toBe(0);
    const late = harness();
    expect(await troupe(late, ['fork', 'r', '--at', '100000', '--edit-input', 'again'])).toBe(2);
    expect(late.err).toEqual(['troupe fork: Session "r" has no prompt waiting at seq 100000']);
    const bare = harness();
    expect(await troupe(bare, ['fork', 'r'])).toBe(2);
    expect(bare.err[0]).toMatch(/--at takes the seq/);
  });
});

describe('troupe test', () => {
  it('passes a recorded session on this build, and names the divergence of a tool the build no longer has', async () => {
    expect(await troupe(harness({ input: 'y\n' }), ['run', '--offline', '--session=r', TASK])).toBe(0);
    const same = harness();
    expect(await troupe(same, ['test', 'r']), same.out()).toBe(0);
    expect(same.out()).toContain('session r did what it recorded');
    // The recording called a tool by a name this build does not have.
    const journal = path.join(sessionsDir(), 'r.jsonl');
    await fs.writeFile(journal, (await fs.readFile(journal, 'utf8')).replaceAll('"write_file"', '"save_file"'));
    const renamed = harness();
    expect(await troupe(renamed, ['test', 'r'])).toBe(1);
    expect(renamed.out()).toMatch(/^agent "main", turn \d+, step \d+: a different tool was called$/m);
    expect(renamed.out()).toContain('no tool "save_file" now');
  });

  it("names the divergence of a prompt part: a tool's description this build words otherwise", async () => {
    expect(await troupe(harness({ input: 'y\n' }), ['run', '--offline', '--session=p', TASK])).toBe(0);
    // The recording's digest of write_file's description, as an older build would have written it.
    const journal = path.join(sessionsDir(), 'p.jsonl');
    const lines = (await fs.readFile(journal, 'utf8')).split('\n');
    const at = lines.findIndex((line) => line.includes('"turn_start"'));
    const start = JSON.parse(lines[at] ?? '{}');
    start.p.tools.write_file.d = 'an older wording';
    lines[at] = JSON.stringify(start);
    await fs.writeFile(journal, lines.join('\n'));
    const changed = harness();
    expect(await troupe(changed, ['test', 'p'])).toBe(1);
    expect(changed.out()).toMatch(/^agent "main", turn 1, step 0: a prompt part differs$/m);
    expect(changed.out()).toContain('recorded: tool:write_file description an older wording');
  });
});
