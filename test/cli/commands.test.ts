/**
 * `troupe run` driven in this process through `main()` with its terminal replaced: every mode of output, every
 * answer to an approval, every way a run ends. (test/cli/run.test.ts and terminal.test.ts run the real bin.)
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VERBS } from '../../src/cli/agents.js';
import { main } from '../../src/cli/main.js';
import { eventually, running } from '../helpers/processes.js';
import { FakeTerminalInput, type Harness, harness as harnessIn, runIn } from './harness.js';
import { ANSI, esc, keylessEnv, sampleCopy } from './helpers.js';

let dir: string;
const harness = (options: Parameters<typeof harnessIn>[1] = {}) => harnessIn(dir, options);
const run = (h: Harness, args: string[]) => runIn(h, ['run', ...args]);

beforeEach(async () => {
  dir = await sampleCopy();
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const TASK = 'Tell me about this project';
const noAnsi = (s: string) => s.replace(ANSI, '');

describe('plain output', () => {
  it('asks, and a "no" reaches the model', async () => {
    const h = harness({ input: 'maybe\nn\n' });
    expect(await run(h, ['--offline', TASK])).toBe(0);
    expect(h.out()).toContain('? main wants to run write_file TROUPE_NOTES.md — [y]es / [n]o / [a]lways: no');
    expect(h.out()).toMatch(/main> I did not write TROUPE_NOTES.md \(The user denied this tool call/);
    expect(h.out()).toMatch(/^main: default_\S+ completed$/m);
  });

  it('a question shows credentials in its command redacted', async () => {
    const h = harness({ input: 'n\n' });
    const command = "curl -H 'Authorization: Bearer abcdefghijklmnop' http://127.0.0.1:9/x";
    expect(await run(h, ['--offline', `Run \`${command}\` please`])).toBe(0);
    expect(h.out()).toContain("? main wants to run bash curl -H 'Authorization: [redacted]' http://127.0.0.1:9/x — ");
    // (The model's own text repeats it: that is the model's to say, not the question's.)
    const asked = h
      .out()
      .split('\n')
      .filter((line) => /wants to run|asks to run/.test(line));
    expect(asked).toHaveLength(2);
    for (const line of asked) expect(line).not.toContain('abcdefghijklmnop');
  });

  it('"always" remembers a rule for the session', async () => {
    const h = harness({ input: 'always\n' });
    expect(await run(h, ['--offline', TASK])).toBe(0);
    expect(h.out()).toMatch(/^allowed from now on: write_file\(.*TROUPE_NOTES\.md\)$/m);
    expect(await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8')).toContain('3 notes');
  });

  it('plan mode refuses the write without asking; bypass writes without asking', async () => {
    const plan = harness();
    expect(await run(plan, ['--offline', '--mode', 'plan', TASK])).toBe(0);
    expect(plan.out()).not.toContain('asks to run');
    expect(plan.out()).toContain('main> I did not write TROUPE_NOTES.md (Permission denied: You are in plan mode');
    const bypass = harness();
    expect(await run(bypass, ['--offline', '--mode', 'bypass', TASK])).toBe(0);
    expect(bypass.out()).not.toContain('asks to run');
    expect(await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8')).toMatch(/^# Notes on this folder/);
  });

  it('reports a failed tool with its first line', async () => {
    const h = harness();
    expect(await run(h, ['--offline', '--mode', 'bypass', 'Run `cat missing.txt; exit 1` please'])).toBe(0);
    expect(h.out()).toMatch(/^main: bash cat missing.txt; exit 1$/m);
    expect(h.out()).toMatch(
      /^main> The command ended:\ncat: missing.txt: No such file or directory\n\[exit code 1\]$/m,
    );
  });

  it('exits 3 at the step limit and 130 when interrupted', async () => {
    const limited = harness();
    expect(await run(limited, ['--offline', '--max-steps', '1', TASK])).toBe(3);
    expect(limited.out()).toMatch(/^done: max_steps/m);
    const h = harness();
    const running = run(h, ['--offline', '--mode', 'bypass', 'Run `sleep 300`']);
    while (!h.out().includes('main: bash sleep 300')) await new Promise((r) => setTimeout(r, 10));
    h.sigint();
    expect(await running).toBe(130);
    expect(h.out()).toContain('Interrupting… (Ctrl-C again to exit at once)');
    expect(h.out()).toMatch(/^done: interrupted/m);
  });

  it('a second Ctrl-C leaves at once with 130', async () => {
    const h = harness();
    const running = run(h, ['--offline', '--mode', 'bypass', 'Run `sleep 300`']);
    while (!h.out().includes('main: bash sleep 300')) await new Promise((r) => setTimeout(r, 10));
    h.sigint();
    h.sigint();
    while (h.exits.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(h.exits).toEqual([130]);
    await running;
  });
});

describe('JSON lines', () => {
  it('prints every event, the question, and the result last', async () => {
    const h = harness({ input: 'y\n' });
    expect(await run(h, ['--offline', '--json', TASK])).toBe(0);
    const events = h
      .out()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; agentId?: string });
    const types = new Set(events.map((e) => e.type));
    for (const type of [
      'agent_start',
      'message_update',
      'tool_execution_end',
      'subagent_end',
      'approval_requested',
      'question',
      'turn_end',
    ]) {
      expect(types.has(type)).toBe(true);
    }
    expect(events.at(-1)).toMatchObject({ type: 'result', stopReason: 'completed' });
  });
});

describe('the live view', () => {
  it('draws the tree in place, streams the answer and asks inline', async () => {
    const input = new FakeTerminalInput();
    const h = harness({ tty: true, stdin: input });
    const running = run(h, ['--offline', TASK]);
    await input.type('x'); // not an answer: ignored
    await input.type('y');
    expect(await running).toBe(0);
    const out = h.out();
    expect(out).toContain(esc('[?25l'));
    expect(out).toMatch(new RegExp(`${esc('\\[')}\\d+F${esc('\\[0J')}`)); // redrawn in place
    const screen = noAnsi(out);
    expect(screen).toContain('? main wants to run write_file TROUPE_NOTES.md — [y]es / [n]o / [a]lways: yes');
    expect(screen).toMatch(/⠋|⠙|⠹|⠸|⠼|⠴|⠦|⠧|⠇|⠏/);
    expect(screen).toMatch(
      / {2}[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✓] default_\S+ {2}(thinking|grep TODO\|FIXME|glob README\*|read_file README.md|done)/,
    );
    expect(screen).toMatch(/✓ main {2}done +[\d.]+k? tok \$0\.0000 [\d.]+s/);
    expect(screen).toContain('Done. I looked at the tree, had two subagents search it');
    expect(screen).toMatch(/completed · [\d.]+k? in \/ \d+ out · \$0\.0000 · [\d.]+s\n$/);
  });

  it('takes Ctrl-C typed during a question as an interrupt', async () => {
    const input = new FakeTerminalInput();
    const h = harness({ tty: true, stdin: input });
    const running = run(h, ['--offline', TASK]);
    await input.type('\u0003');
    expect(await running).toBe(130);
    expect(noAnsi(h.out())).toContain('Interrupting…');
  });
});

describe('MCP servers', () => {
  /** A config naming one stdio server: test/mcp's fixture, with its echo, pids and other tools. */
  async function mcpConfig(): Promise<string> {
    const config = path.join(dir, 'mcp.json');
    const server = path.join(import.meta.dirname, '../mcp/fixtures/stdio-server.ts');
    const test = { command: process.execPath, args: ['--import', 'tsx', server] };
    await fs.writeFile(config, JSON.stringify({ mcpServers: { test } }));
    return config;
  }

  it('adds the tools of the servers in --mcp-config, and stops them when the run ends', async () => {
    const h = harness();
    const args = ['--offline', '--mode', 'bypass', '--mcp-config', await mcpConfig()];
    expect(await run(h, [...args, 'Say `mcp__test__pids {}`'])).toBe(0);
    const answer = /^main> mcp__test__pids answered:\n(.*)$/m.exec(h.out())?.[1];
    const pids = JSON.parse(answer ?? 'null') as { server: number; helper: number };
    expect(pids).toEqual({ server: expect.any(Number), helper: expect.any(Number) });
    // The server and the helper process it started are gone with the run.
    expect(await eventually(() => !running(pids.server) && !running(pids.helper))).toBe(true);
  }, 60_000);

  it("shows a tool's label where it has one (an MCP tool's title)", async () => {
    const h = harness();
    expect(await run(h, ['--offline', '--mcp-config', await mcpConfig(), 'Say `mcp__test__echo {"text": "hi"}`'])).toBe(
      0,
    );
    const lines = h.out().split('\n');
    expect(lines).toContain('main: Echo text');
    expect(lines.some((line) => /^main: Echo text done \(\d+ ms\)$/.test(line))).toBe(true);
    expect(lines).toContain('main> mcp__test__echo answered:');
  }, 60_000);

  it('refuses a config it cannot use, in one line', async () => {
    const h = harness();
    expect(await run(h, ['--offline', '--mcp-config', 'missing.json', 'x'])).toBe(2);
    expect(h.err).toEqual([`troupe run: MCP config not found: ${path.join(dir, 'missing.json')}`]);
  });
});

describe('usage errors', () => {
  it.each([
    ['no API key', ['do it'], {}, 'no API key: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or run offline with --offline'],
    [
      'an unknown model',
      ['--model', 'mystery-9', 'x'],
      {},
      'unknown model "mystery-9": pass --provider openai|anthropic (or set OPENAI_BASE_URL for a compatible server)',
    ],
    ['an unknown provider', ['--provider', 'acme', 'x'], {}, 'unknown provider "acme": use openai or anthropic'],
    [
      'the chosen provider has no key',
      ['--model', 'claude-sonnet-4-5', 'x'],
      { OPENAI_API_KEY: 'k' },
      'no API key for anthropic: set ANTHROPIC_API_KEY, or run offline with --offline',
    ],
    ['a missing folder', ['--offline', '-C', '/nonexistent/folder', 'x'], {}, 'folder not found: /nonexistent/folder'],
    ['a file as the folder', ['--offline', '-C', 'README.md', 'x'], {}, 'not a folder: README.md'],
    ['no task', ['--offline'], {}, 'no task: troupe run "<what to do>" (see troupe run --help)'],
    [
      'an unknown mode',
      ['--offline', '--mode', 'yolo', 'x'],
      {},
      'unknown mode "yolo": use default, plan, auto, bypass',
    ],
    ['a bad step limit', ['--offline', '--max-steps', '0', 'x'], {}, '--max-steps: not a positive whole number'],
    ['an unknown option', ['--frobnicate', 'x'], {}, "Unknown option '--frobnicate'"],
  ])('%s', async (_name, args, env, message) => {
    const h = harness({ env: keylessEnv(env) });
    expect(await run(h, args)).toBe(2);
    expect(h.err.map((line) => line.replace(dir, ''))).toEqual([
      `troupe run: ${message.replace('README.md', '/README.md')}`,
    ]);
  });

  it.each([
    ['inspect', ['--bogus'], "Unknown option '--bogus'"],
    ['inspect', ['--port', 'x'], '--port: not a port number: x'],
    [
      'inspect',
      ['--host', '0.0.0.0'],
      '--host: the inspector listens on loopback only (127.0.0.1, localhost), not on 0.0.0.0',
    ],
    ['sessions', ['-C', '/nonexistent/folder'], 'folder not found: /nonexistent/folder'],
    ['sessions', ['-C', 'README.md'], 'not a folder: /README.md'],
    ['replay', ['-C', '/nonexistent/folder', 'a'], 'folder not found: /nonexistent/folder'],
    ['resume', ['-C', '/nonexistent/folder', '--offline'], 'folder not found: /nonexistent/folder'],
  ])('troupe %s %j: one line on stderr and exit 2, as run says it', async (command, args, message) => {
    const h = harness();
    expect(await runIn(h, [command, ...args])).toBe(2);
    expect(h.err.map((line) => line.replace(dir, ''))).toEqual([`troupe ${command}: ${message}`]);
    expect(h.out()).toBe('');
  });

  it('accepts a real model choice without calling it (the key is only read)', async () => {
    const { chooseModel } = await import('../../src/cli/model-choice.js');
    expect(chooseModel({ env: { OPENAI_API_KEY: 'k' } }).id).toBe('gpt-5-mini');
    expect(chooseModel({ env: { ANTHROPIC_API_KEY: 'k' } }).id).toBe('claude-sonnet-4-5');
    expect(chooseModel({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }, model: 'qwen3' }).id).toBe('qwen3');
    expect(chooseModel({ env: { ANTHROPIC_API_KEY: 'k', TROUPE_MODEL: 'claude-haiku-4-5' } }).provider).toBe(
      'anthropic',
    );
  });

  it('prints complete help', async () => {
    const h = harness();
    expect(await run(h, ['--help'])).toBe(0);
    for (const flag of [
      '--cwd',
      '--offline',
      '--provider',
      '--model',
      '--mode',
      '--max-steps',
      '--json',
      'Exit codes',
      'Ctrl-C',
      '--session',
      '--session=<id>',
      '--sessions-dir',
      '--mcp-config',
    ]) {
      expect(h.out()).toContain(flag);
    }
  });

  it.each([
    ['resume', ['Usage: troupe resume', 'the latest one', 'interrupted by a restart', '--offline', 'Exit codes']],
    ['sessions', ['Usage: troupe sessions', 'interrupted', '--sessions-dir', '--json']],
    ['replay', ['Usage: troupe replay', 'no tool runs', 'Exit codes', '--json']],
  ])('prints complete help for %s', async (command, parts) => {
    const h = harness();
    expect(await runIn(h, [command, '--help'])).toBe(0);
    for (const part of parts) expect(h.out()).toContain(part);
  });

  it('lists every command in the top-level help', async () => {
    const lines: string[] = [];
    await main(['--help'], (line) => lines.push(line), harness().io);
    for (const command of ['run "<task>"', 'resume [<id>]', 'sessions', 'replay <id>', 'inspect']) {
      expect(lines.join('\n')).toContain(`  ${command}`);
    }
    for (const verb of Object.keys(VERBS)) expect(lines.join('\n')).toMatch(new RegExp(`\\b${verb}\\b`));
  });

  it.each(Object.keys(VERBS))('%s --help names both targets, every verb and the exit codes', async (verb) => {
    const h = harness();
    expect(await runIn(h, [verb, '--help'])).toBe(0);
    for (const part of ['Usage: troupe <verb>', '--restate', 'TROUPE_RESTATE_URL', '--cwd', 'Exit codes']) {
      expect(h.out()).toContain(part);
    }
    for (const each of Object.keys(VERBS)) expect(h.out()).toContain(`  ${each} <id>`);
  });
});
