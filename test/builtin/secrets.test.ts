/**
 * Secrets stay secret on every channel: keys of every class are planted in the environment of a real `troupe run`
 * (the keys sit in the process's initial environment block, as they do for a user), its bash commands read every
 * place a process can find them (its parent's /proc environ, up the ancestry, `ps e`, its own and its
 * grandchildren's), and no planted value may appear in the plain or JSON output, stderr, or the session journal.
 * In this process, a tool that prints, throws or reports them reaches no event, message or trace with them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEvent, createAgent, defineTool, scriptedModel, traceAgents } from '../../src/index.js';
import { keylessEnv, type Ran, REPO } from '../cli/helpers.js';
import { leaks, PLANTED, plantInEnvironment } from '../helpers/secrets.js';
import { ToolDriver, tempDir } from './helpers.js';

const unplant = plantInEnvironment();

/** What a command can do to find its parent's keys. */
const PROBE = [
  `tr '\\0' '\\n' < /proc/$PPID/environ`,
  // Up the ancestry to init: every process above the command.
  `p=$PPID; while [ "$p" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null; p=$(awk '/^PPid/{print $2}' /proc/$p/status); done`,
  'ps e -ww -o pid=,args= 2>/dev/null',
  `tr '\\0' '\\n' < /proc/self/environ`,
  `bash -c 'tr "\\0" "\\n" < /proc/self/environ; bash -c "tr \\"\\\\0\\" \\"\\\\n\\" < /proc/\\$PPID/environ; env"'`,
  'env',
  'echo "names: $(tr "\\0" "\\n" < /proc/$PPID/environ | grep -c _PLANTED_MARK)"',
].join('; ');

let dir: string;
let sessions: string;

beforeAll(async () => {
  dir = await tempDir('troupe-secrets-');
  sessions = path.join(dir, '.sessions');
});

afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
  unplant();
});

async function journal(): Promise<string> {
  const files = await fs.readdir(sessions, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(
    files.filter((f) => f.isFile()).map((f) => fs.readFile(path.join(f.parentPath, f.name), 'utf8')),
  );
  return texts.join('\n');
}

/**
 * `troupe <args>` through pipes; `throughShell`: as a child of a shell that holds the keys in its own environment
 * block, which troupe cannot blank (as when a user's shell or `npx` started it).
 */
function troupe(args: string[], env: NodeJS.ProcessEnv, throughShell: boolean): Promise<Ran> {
  const cli = [process.execPath, '--import', 'tsx', path.join(REPO, 'src/cli/index.ts'), ...args];
  const [command, ...rest] = throughShell ? ['/bin/sh', '-c', '"$@"; exit $?', 'sh', ...cli] : cli;
  const child = spawn(command as string, rest, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('a command reading every environment it can reach', () => {
  const env = () => keylessEnv({ ...PLANTED, _PLANTED_MARK: 'x' });
  const args = (json: boolean) => [
    'run',
    '--offline',
    '--mode',
    'bypass',
    '-C',
    dir,
    '--session',
    '--sessions-dir',
    sessions,
    ...(json ? ['--json'] : []),
    `Run \`${PROBE}\``,
  ];

  it('finds no key in the plain output, stderr or the journal', async () => {
    const run = await troupe(args(false), env(), false);
    expect(run.code, run.stderr).toBe(0);
    // The probe ran, and read its parent's environment: the names are there, the values are blank (nothing had
    // to be redacted: the environment troupe was started with no longer holds them).
    expect(run.stdout).toContain('names: 1');
    expect(run.stdout).not.toContain('[redacted]');
    expect(leaks(run.stdout)).toEqual([]);
    expect(leaks(run.stderr)).toEqual([]);
    expect(leaks(await journal())).toEqual([]);
  }, 120_000);

  it('finds no key in the JSON events, stderr or the journal when a process above troupe holds them', async () => {
    const run = await troupe(args(true), env(), true);
    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout.trim().split('\n');
    const end = events.map((line) => JSON.parse(line)).find((e) => e.type === 'tool_execution_end');
    const text = JSON.stringify(end);
    // The shell above troupe still holds every key; each is cut out by value.
    for (const name of Object.keys(PLANTED)) expect(text).toContain(`${name}=[redacted]`);
    expect(leaks(run.stdout)).toEqual([]);
    expect(leaks(run.stderr)).toEqual([]);
    expect(leaks(await journal())).toEqual([]);
  }, 120_000);
});

describe('a tool that prints, throws or reports a key', () => {
  it('reaches no event, message, error or trace with it', async () => {
    const all = Object.values(PLANTED).join(' ');
    const leaky = defineTool({
      name: 'leaky',
      description: 'Leaks the keys one way or another',
      schema: z.object({ how: z.enum(['print', 'throw', 'progress']) }),
      execute: ({ how }, ctx) => {
        if (how === 'throw') throw new Error(`login failed with ${all}`);
        if (how === 'progress') ctx.update({ note: all });
        return { content: `env: ${all}`, details: { env: PLANTED } };
      },
    });
    const agent = createAgent({
      tools: [leaky],
      model: scriptedModel([
        { toolCalls: (['print', 'throw', 'progress'] as const).map((how) => ({ name: 'leaky', args: { how } })) },
        { text: 'done' },
      ]),
    });
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t');
    const events: AgentEvent[] = [];
    const off = agent.on('*', (event) => events.push(event));
    const stop = traceAgents(agent, { tracer, recordContent: true });
    const result = await agent.prompt('go');
    stop();
    off();
    const spans = exporter.getFinishedSpans().map((s) => ({ a: s.attributes, s: s.status, e: s.events }));
    const text = JSON.stringify({ events, messages: result.messages, spans });
    expect(events.some((e) => e.type === 'tool_execution_update')).toBe(true);
    expect(text).toContain('login failed with [redacted]');
    expect(leaks(text)).toEqual([]);
  });
});

describe('a trace that records contents', () => {
  it('cuts the keys out of what the model wrote and the arguments it gave', async () => {
    const key = PLANTED.GITHUB_TOKEN as string;
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes',
      schema: z.object({ text: z.string() }),
      execute: ({ text }) => text,
    });
    const agent = createAgent({
      tools: [echo],
      model: scriptedModel([{ toolCalls: [{ name: 'echo', args: { text: key } }] }, { text: `the key is ${key}` }]),
    });
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t');
    const stop = traceAgents(agent, { tracer, recordContent: true });
    await agent.prompt('go');
    stop();
    const attributes = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes));
    expect(attributes).toContain('the key is [redacted]');
    expect(attributes).not.toContain(key);
  });
});

describe('the processes troupe starts for itself', () => {
  it('give ripgrep an environment without the keys (any same-user command can read it)', async () => {
    const dump = path.join(dir, 'rg-env.txt');
    const fakeRg = path.join(dir, 'fake-rg');
    await fs.writeFile(fakeRg, `#!/bin/sh\nenv > '${dump}'\nexit 1\n`, { mode: 0o755 });
    const driver = await ToolDriver.open({ roots: dir, shell: false, grep: { ripgrep: fakeRg } });
    try {
      await driver.call('grep', { pattern: 'anything' });
    } finally {
      await driver.close();
    }
    const env = await fs.readFile(dump, 'utf8');
    expect(env).toMatch(/^PATH=/m);
    expect(leaks(env)).toEqual([]);
  });
});

describe("a command's environment", () => {
  it('keeps the variables that only look like secrets, and none of the secret ones', async () => {
    const lookalikes = {
      GIT_AUTHOR_NAME: 'Ada',
      TOKENIZERS_PARALLELISM: 'false',
      MAX_TOKENS: '4096',
      SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
    };
    Object.assign(process.env, lookalikes);
    const driver = await ToolDriver.open({ roots: dir });
    try {
      const out = await driver.ok('bash', {
        command: 'echo "$GIT_AUTHOR_NAME/$TOKENIZERS_PARALLELISM/$MAX_TOKENS/$SSH_AUTH_SOCK"; env',
      });
      expect(out).toContain('Ada/false/4096//tmp/ssh-agent.sock');
      for (const name of Object.keys(PLANTED)) expect(out).not.toContain(`${name}=`);
    } finally {
      await driver.close();
      for (const name of Object.keys(lookalikes)) delete process.env[name];
    }
  });
});
