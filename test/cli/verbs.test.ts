/**
 * One command per verb, against either target: the same `troupe <verb> s1 …` run on a session of a folder (its
 * agent in this process, on the offline model) and on an agent hosted on a real restate-server (a worker in this
 * process serving the same model and tools over the same folder). What each prints is the same, line for line; a
 * verb a session cannot do is its one-line usage error.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineModel } from '../../src/cli/offline.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentWorker, agentObject, serveAgents } from '../../src/restate/index.js';
import { createWorkspaceTools, type WorkspaceTools } from '../../src/tools/builtin/index.js';
import { until, waitUntil } from '../helpers/until.js';
import { harness, runIn } from './harness.js';
import { keylessEnv, sampleCopy } from './helpers.js';

const FIRST = 'Call `read_file {"path":"README.md","limit":3}`';
const SECOND = 'Call `glob {"pattern":"src/*"}`';

let dir: string;
let server: RestateDevServer;
let worker: AgentWorker;
let workspace: WorkspaceTools;
beforeAll(async () => {
  dir = await sampleCopy();
  workspace = await createWorkspaceTools({ roots: dir });
  server = await startRestateDevServer();
  const model = offlineModel({ deltaDelayMs: 0 });
  // As troupe run's default mode does, the worker asks before a write.
  const policy = (call: { name: string }) => (call.name === 'write_file' ? 'ask' : 'allow');
  worker = await serveAgents([agentObject({ agent: () => ({ model, tools: workspace.tools, policy }) })]);
  await server.register(worker.url);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
  await workspace?.close();
});

type Where = 'session' | 'restate';

/** `troupe <argv>` in the folder, on a target: its exit code, stdout lines and stderr lines. */
async function troupe(where: Where, argv: string[]) {
  const env = where === 'restate' ? keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) : keylessEnv();
  const h = harness(dir, { env });
  const code = await runIn(h, argv);
  return { code, out: h.out().split('\n'), err: h.err };
}

/** The same invocation on both targets, which must agree; what they printed. */
async function both(argv: string[]) {
  const session = await troupe('session', argv);
  const restate = await troupe('restate', argv);
  expect(restate).toEqual(session);
  return session;
}

describe('each verb, on a session and on a hosted agent', () => {
  beforeAll(async () => {
    // The first turn: a session is started with troupe run's options (the offline model), a hosted agent by its
    // worker's; both then hold the same history.
    expect((await troupe('session', ['prompt', 's1', FIRST, '--offline'])).code).toBe(0);
    expect((await troupe('restate', ['prompt', 's1', FIRST])).code).toBe(0);
  }, 120_000);

  it('prompt: the answer on stdout, how the turn ended on stderr, exit 0', async () => {
    const { code, out, err } = await both(['prompt', 's1', SECOND]);
    expect(code).toBe(0);
    expect(out[0]).toBe('glob answered:');
    expect(out).toContain('src/pantry.py');
    expect(err).toEqual([expect.stringMatching(/^done: completed · \d+ in \/ \d+ out$/)]);
  }, 120_000);

  it('history: the conversation of both turns', async () => {
    const { code, out } = await both(['history', 's1']);
    expect(code).toBe(0);
    expect(out.filter((line) => line.startsWith('user'))).toEqual([`user: ${FIRST}`, `user: ${SECOND}`]);
    expect(out).toContain('assistant calls read_file {"path":"README.md","limit":3} (call_1)');
    expect((await both(['history', 's1', '--json'])).code).toBe(0);
  }, 60_000);

  it("usage: tokens over the agent's turns", async () => {
    const { code, out } = await both(['usage', 's1']);
    expect(code).toBe(0);
    expect(out[0]).toMatch(/^[1-9]\d* in \/ [1-9]\d* out \(cache read 0, cache write 0, reasoning 0\)$/);
    expect((await both(['usage', 's1', '--json'])).code).toBe(0);
  }, 60_000);

  it('approvals: nothing waits', async () => {
    expect(await both(['approvals', 's1'])).toEqual({
      code: 0,
      out: ['s1 has no calls waiting for approval', ''],
      err: [],
    });
  }, 60_000);

  const SENT = "a session's turn runs in the process that prompts it";
  const OUTSIDE = "a session's running turn is reached only by the process that runs it";
  // The hosted agent's exit: 0 done, 1 the ingress said no (no such invocation, no such call waiting).
  it.each([
    [['send', 's1', 'go'], SENT, 0],
    [['attach', 's1', 'inv_1'], SENT, 1],
    [['approve', 's1', 'call_1'], OUTSIDE, 1],
    [['deny', 's1', 'call_1'], OUTSIDE, 1],
    [['steer', 's1', 'also this'], OUTSIDE, 0],
    [['interrupt', 's1'], OUTSIDE, 0],
  ])(
    '%j on a session is a usage error that says why; a hosted agent does it',
    async (argv, why, hosted) => {
      const session = await troupe('session', argv);
      expect(session.code).toBe(2);
      expect(session.out).toEqual(['']);
      expect(session.err).toHaveLength(1);
      expect(session.err[0]).toMatch(new RegExp(`^troupe ${argv[0]}: ${why}`));
      expect((await troupe('restate', argv)).code).toBe(hosted);
    },
    60_000,
  );
});

describe('approvals while a turn waits for one', () => {
  it('lists the same waiting call on a session run here and on a hosted agent', async () => {
    const write = 'Call `write_file {"path":"NOTE.md","content":"hi"}`';
    // The session's root agent is `main`, so a hosted agent of that id is asked the same.
    const typed = new PassThrough();
    const here = harness(dir, { env: keylessEnv(), stdin: typed });
    const waitingHere = runIn(here, ['prompt', 'main', write, '--offline']);
    const there = harness(dir, { env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) });
    const waitingThere = runIn(there, ['prompt', 'main', write]);
    const asked = (r: { out: string[] }) => r.out[0]?.startsWith('main  ') === true;
    const session = await until(() => troupe('session', ['approvals', 'main']), asked);
    const restate = await until(() => troupe('restate', ['approvals', 'main']), asked);
    expect(session).toEqual({
      code: 0,
      out: ['main  call_1  write_file  {"path":"NOTE.md","content":"hi"}', ''],
      err: [],
    });
    expect(restate).toEqual(session);
    // Both waiting prompts have asked (a hosted one asks when its poll sees the call waiting, which may come after
    // the listing above); then each is answered where its turn runs: the session's on its stdin, the hosted one by
    // the verb.
    const question = /^\? main wants to run write_file NOTE\.md/;
    await waitUntil(() => question.test(here.out()) && question.test(there.out()), 'both questions');
    typed.end('n\n');
    expect((await troupe('restate', ['deny', 'main', 'call_1'])).code).toBe(0);
    expect(await waitingHere).toBe(0);
    expect(await waitingThere).toBe(0);
    expect(here.out()).toMatch(question);
    expect(there.out()).toMatch(question);
  }, 120_000);
});
