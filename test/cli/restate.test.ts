/**
 * The verbs with `--restate` against a real restate-server on loopback, with agents on the scripted model served by a worker in
 * this process: the command is driven through `main()` as a user types it, and what it says is checked against
 * what the agents really did (the tools count their executions here).
 */
import { type AddressInfo, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type Message, type ModelRequest, scriptedModel } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { missing } from '../helpers/requires.js';
import { waitUntil } from '../helpers/until.js';
import { takesAnswered } from '../restate/fixtures/journal.js';
import { FakeTerminalInput, type Harness, harness, runIn } from './harness.js';
import { keylessEnv, runPiped, TerminalRun } from './helpers.js';

const executions: string[] = [];
const gates = new Map<string, () => void>();
const gateOf = new Map<string, Promise<void>>();
function gate(agentId: string): Promise<void> {
  let promise = gateOf.get(agentId);
  if (!promise) {
    promise = new Promise<void>((resolve) => gates.set(agentId, resolve));
    gateOf.set(agentId, promise);
  }
  return promise;
}
const open = (agentId: string) => {
  void gate(agentId);
  gates.get(agentId)?.();
};

const textOf = (message: Message | undefined) =>
  message?.content.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('') ?? '';

/**
 * `plain…` counts once, then says how many results it saw; `approver…` asks to deploy its prompt (with a password
 * among the arguments) and then says what the deploy call answered; `steer…` runs `gated` on `work` and otherwise
 * lists the user messages it heard.
 */
function answerFor(agentId: string, request: ModelRequest): ScriptedAnswer {
  const usage = { input: 10, output: 5 };
  const lastUser = request.messages.findLastIndex((message) => message.role === 'user');
  const since = request.messages.slice(lastUser + 1);
  const prompt = textOf(request.messages[lastUser]);
  if (agentId.startsWith('broken')) return { error: { code: 'auth_error', message: 'The API key was refused' } };
  if (agentId.startsWith('plain')) {
    if (since.length === 0) return { toolCalls: [{ name: 'count', args: {}, id: 'k1' }], usage };
    return { text: `saw ${since.filter((m) => m.role === 'tool').length} result`, usage };
  }
  // A boss hands its prompt to a subagent (the `agent` tool), which plays the approver; `bossbg…` in the background.
  if (agentId.startsWith('boss') && !agentId.includes('/')) {
    if (prompt.startsWith('<notification')) return { text: 'noted', usage };
    const background = agentId.startsWith('bossbg');
    if (since.length === 0) return { toolCalls: [{ name: 'agent', args: { prompt, background }, id: 'a0' }], usage };
    const result = since.find((m) => m.role === 'tool');
    return { text: `boss heard: ${result?.role === 'tool' ? JSON.stringify(result.content[0]?.content) : ''}`, usage };
  }
  if (agentId.startsWith('approver') || agentId.startsWith('boss')) {
    if (since.length === 0) {
      const id = `d${lastUser}`;
      return { toolCalls: [{ name: 'deploy', args: { target: prompt, password: 'hunter2-hunter2' }, id }], usage };
    }
    const result = since.find((m) => m.role === 'tool');
    return {
      text: `deploy said: ${result?.role === 'tool' ? textOf({ role: 'user', content: result.content[0]?.content ?? [] }) : ''}`,
      usage,
    };
  }
  if (prompt === 'work' && since.length === 0) return { toolCalls: [{ name: 'gated', args: {}, id: 'g1' }], usage };
  const heard = request.messages.filter((m) => m.role === 'user').map(textOf);
  return { text: `heard: ${heard.join(' | ')}`, usage };
}

const count = defineTool({
  name: 'count',
  description: 'Counts',
  schema: z.object({}),
  execute: (_args, ctx) => {
    executions.push(`ran ${ctx.agentId} ${ctx.toolCallId}`);
    return 'counted';
  },
});
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys',
  schema: z.object({ target: z.string(), password: z.string() }),
  execute: ({ target }, ctx) => {
    executions.push(`ran ${ctx.agentId} ${ctx.toolCallId}`);
    return `deployed ${target}`;
  },
});
// Ignores its signal: only its gate or an interrupt ends the call.
const gated = defineTool({
  name: 'gated',
  description: 'Waits for its gate',
  schema: z.object({}),
  execute: async (_args, ctx) => {
    executions.push(`start ${ctx.agentId} ${ctx.toolCallId}`);
    await gate(ctx.agentId);
    executions.push(`ran ${ctx.agentId} ${ctx.toolCallId}`);
    return 'the gate opened';
  },
});

let server: RestateDevServer;
let worker: AgentWorker;
beforeAll(async () => {
  server = await startRestateDevServer();
  const agents = agentObject({
    subagents: true,
    agent: (agentId) => ({
      model: scriptedModel((request) => answerFor(agentId, request)),
      tools: [count, deploy, gated],
      policy: (call) => (call.name === 'deploy' ? 'ask' : 'allow'),
    }),
  });
  worker = await serveAgents([agents]);
  await server.register(worker.url);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

/** A user's terminal or pipe, with TROUPE_RESTATE_URL and TROUPE_RESTATE_ADMIN set to the test server's (as a user exports them). */
function user(options: Parameters<typeof harness>[1] = {}): Harness {
  return harness(process.cwd(), {
    env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl, TROUPE_RESTATE_ADMIN: server.adminUrl }),
    ...options,
  });
}

/** `troupe <verb> …` on the hosted target: its exit code, stdout and stderr. */
async function hosted(args: string[], h: Harness = user()) {
  const code = await runIn(h, args);
  return { code, out: h.out(), err: h.err.join('\n') };
}

/** A loopback port nothing listens on (it was free a moment ago, and nothing here takes it). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const ran = (line: string) => executions.filter((l) => l === line).length;

describe('turns', () => {
  it('prompt prints the answer and exits 0; history and usage show the stored turn', async () => {
    const done = await hosted(['prompt', 'plain-1', 'go']);
    expect(done).toMatchObject({ code: 0, out: 'saw 1 result\n' });
    expect(done.err).toMatch(/^done: completed · 20 in \/ 10 out$/m);
    expect(ran('ran plain-1 k1')).toBe(1);
    const history = await hosted(['history', 'plain-1']);
    expect(history.out.split('\n')).toEqual([
      'user: go',
      'assistant calls count {} (k1)',
      'tool count: counted',
      'assistant: saw 1 result',
      '',
    ]);
    expect((await hosted(['usage', 'plain-1'])).out).toBe(
      '20 in / 10 out (cache read 0, cache write 0, reasoning 0)\n',
    );
    expect(JSON.parse((await hosted(['usage', 'plain-1', '--json'])).out)).toMatchObject({ input: 20, output: 10 });
  }, 60_000);

  it('send prints the invocation id at once; attach waits for that turn', async () => {
    const sent = await hosted(['send', 'plain-2', 'go']);
    expect(sent.code).toBe(0);
    const invocationId = sent.out.trim();
    expect(invocationId).toMatch(/^inv_\w+$/);
    const attached = await hosted(['attach', 'plain-2', invocationId, '--json']);
    expect(attached.code).toBe(0);
    expect(JSON.parse(attached.out)).toMatchObject({
      type: 'result',
      invocationId,
      agentId: 'plain-2',
      stopReason: 'completed',
      text: 'saw 1 result',
    });
    // Attaching again gives the same outcome; the turn ran once.
    expect((await hosted(['attach', 'plain-2', invocationId])).out).toBe('saw 1 result\n');
    expect(ran('ran plain-2 k1')).toBe(1);
  }, 60_000);
});

describe('turns that do not complete, and keys', () => {
  it('a failed turn exits 1 and says why', async () => {
    const done = await hosted(['prompt', 'broken-1', 'go']);
    expect(done.code).toBe(1);
    expect(done.err).toMatch(/^done: error · /m);
  }, 60_000);

  it('the same idempotency key sends a prompt once', async () => {
    const first = await hosted(['send', 'plain-3', 'go', '--idempotency-key', 'k-1']);
    const second = await hosted(['send', 'plain-3', 'go', '--idempotency-key', 'k-1']);
    expect(second.out).toBe(first.out);
    expect((await hosted(['attach', 'plain-3', first.out.trim()])).out).toBe('saw 1 result\n');
    expect(ran('ran plain-3 k1')).toBe(1);
    expect((await hosted(['history', 'plain-3'])).out.match(/^user: go$/gm)).toHaveLength(1);
  }, 60_000);
});

describe('approvals', () => {
  it('lists a waiting call with its password redacted, approves it, and the tool runs once', async () => {
    const invocationId = (await hosted(['send', 'approver-1', 'prod'])).out.trim();
    let listed = '';
    await waitUntil(async () => {
      listed = (await hosted(['approvals', 'approver-1'])).out;
      return listed.includes('deploy');
    }, 'the call to wait for approval');
    expect(listed).toBe('approver-1  d0  deploy  {"target":"prod","password":"[redacted]"}\n');
    const json = JSON.parse((await hosted(['approvals', 'approver-1', '--json'])).out);
    expect(json).toEqual([
      expect.objectContaining({
        toolCallId: 'd0',
        toolName: 'deploy',
        args: { target: 'prod', password: '[redacted]' },
      }),
    ]);
    expect(executions).not.toContain('ran approver-1 d0');
    expect(await hosted(['approve', 'approver-1', 'd0'])).toMatchObject({ code: 0, out: 'approved d0\n' });
    // The turn takes the answer and clears the call: the list is empty.
    await waitUntil(
      async () => (await hosted(['approvals', 'approver-1'])).out.includes('no calls'),
      'the list to clear',
    );
    expect((await hosted(['attach', 'approver-1', invocationId])).out).toBe('deploy said: deployed prod\n');
    expect(ran('ran approver-1 d0')).toBe(1);
    // Nothing waits any more: a second answer is refused, and the list is empty.
    const again = await hosted(['approve', 'approver-1', 'd0']);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/^troupe approve: approver-1 has no call d0 waiting for approval/);
    expect((await hosted(['approvals', 'approver-1'])).out).toBe('approver-1 has no calls waiting for approval\n');
  }, 60_000);

  it('deny refuses the call with the reason the model is told; the tool never runs', async () => {
    const invocationId = (await hosted(['send', 'approver-2', 'prod'])).out.trim();
    await waitUntil(async () => (await hosted(['approvals', 'approver-2'])).out.includes('d0'), 'the call to wait');
    expect(await hosted(['deny', 'approver-2', 'd0', '--reason', 'not on a Friday'])).toMatchObject({
      code: 0,
      out: 'denied d0\n',
    });
    const outcome = await hosted(['attach', 'approver-2', invocationId]);
    expect(outcome.code).toBe(0);
    expect(outcome.out).toContain('not on a Friday');
    expect(executions).not.toContain('ran approver-2 d0');
  }, 60_000);

  it('piped, a waiting prompt prints the question and the command that answers it, which works', async () => {
    const h = user();
    const waiting = hosted(['prompt', 'approver-3', 'staging'], h);
    await waitUntil(() => h.out().includes('? approver-3 wants to run'), 'the question');
    const question = h.out().split('\n').slice(0, 3);
    expect(question).toEqual([
      '? approver-3 wants to run deploy {"target":"staging","password":"[redacted]"} (call d0)',
      '  approve: troupe approve approver-3 d0',
      '  deny:    troupe deny approver-3 d0 --reason "…"',
    ]);
    // The printed command, run as printed.
    const command = (question[1] ?? '').replace('  approve: troupe ', '').split(' ');
    expect(await hosted(command)).toMatchObject({ code: 0, out: 'approved d0\n' });
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(done.out.split('\n').slice(3)).toEqual(['deploy said: deployed staging', '']);
    expect(ran('ran approver-3 d0')).toBe(1);
  }, 60_000);

  it('on a terminal, a waiting prompt asks y / n; "y" runs the call, "n" refuses it', async () => {
    const yes = new FakeTerminalInput();
    const h = user({ tty: true, stdin: yes });
    const waiting = hosted(['prompt', 'approver-4', 'prod'], h);
    // "a" (always) is not an answer here: no rule can be remembered in the worker's permissions from this side.
    await yes.type('a');
    await yes.type('y');
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(done.out).toBe(
      '? approver-4 wants to run deploy {"target":"prod","password":"[redacted]"} — [y]es / [n]o: yes\n' +
        'deploy said: deployed prod\n',
    );
    expect(ran('ran approver-4 d0')).toBe(1);

    const no = new FakeTerminalInput();
    const refused = await Promise.all([
      hosted(['prompt', 'approver-4', 'prod again'], user({ tty: true, stdin: no })),
      no.type('n'),
    ]);
    expect(refused[0].code).toBe(0);
    expect(refused[0].out).toMatch(/: no\ndeploy said: .*The user declined this call/);
    expect(executions.filter((line) => line.startsWith('ran approver-4'))).toHaveLength(1);
  }, 60_000);
});

describe('questions answered elsewhere, and --json', () => {
  it('a question on the terminal answered by another command says so, and the turn goes on', async () => {
    const keys = new FakeTerminalInput();
    const h = user({ tty: true, stdin: keys });
    const waiting = hosted(['prompt', 'approver-5', 'prod'], h);
    await waitUntil(() => keys.raw, 'the question to wait for a key');
    expect(await hosted(['approve', 'approver-5', 'd0'])).toMatchObject({ code: 0 });
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(done.out).toBe(
      '? approver-5 wants to run deploy {"target":"prod","password":"[redacted]"} — [y]es / [n]o: answered elsewhere\n' +
        'deploy said: deployed prod\n',
    );
    expect(keys.raw).toBe(false);
    expect(ran('ran approver-5 d0')).toBe(1);
  }, 60_000);

  it('--json: the question and the outcome as JSON lines', async () => {
    const h = user();
    const waiting = hosted(['prompt', 'approver-6', 'prod', '--json'], h);
    await waitUntil(() => h.out().includes('"question"'), 'the question');
    expect(JSON.parse(h.out().split('\n')[0] ?? '')).toEqual({
      type: 'question',
      agentId: 'approver-6',
      toolCallId: 'd0',
      toolName: 'deploy',
      args: { target: 'prod', password: '[redacted]' },
      text: 'approver-6 wants to run deploy {"target":"prod","password":"[redacted]"}',
    });
    await hosted(['deny', 'approver-6', 'd0']);
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(JSON.parse(done.out.split('\n')[1] ?? '')).toMatchObject({
      type: 'result',
      agentId: 'approver-6',
      stopReason: 'completed',
    });
    expect(done.err).toBe('');
  }, 60_000);
});

describe('subagents', () => {
  it("a waiting prompt asks a subagent's question too, and its printed command answers it", async () => {
    const h = user();
    const waiting = hosted(['prompt', 'boss-1', 'prod'], h);
    await waitUntil(() => h.out().includes('? boss-1/'), "the subagent's question");
    const [question = '', approve = ''] = h.out().split('\n');
    const child = question.match(/^\? (boss-1\/\S+) wants to run deploy /)?.[1] ?? '';
    expect(question).toBe(`? ${child} wants to run deploy {"target":"prod","password":"[redacted]"} (call d0)`);
    expect(approve).toBe(`  approve: troupe approve ${child} d0`);
    // The list shows it under the subagent's id.
    expect((await hosted(['approvals', 'boss-1'])).out).toBe(
      `${child}  d0  deploy  {"target":"prod","password":"[redacted]"}\n`,
    );
    expect(await hosted(['approve', child, 'd0'])).toMatchObject({ code: 0, out: 'approved d0\n' });
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(done.out).toMatch(/\nboss heard: .*deploy said: deployed prod/);
    expect(ran(`ran ${child} d0`)).toBe(1);
  }, 60_000);

  it("without the admin API, a waiting prompt still asks a subagent's question: the tree is walked through the ingress", async () => {
    const h = harness(process.cwd(), { env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) });
    const waiting = hosted(['prompt', 'boss-2', 'prod'], h);
    await waitUntil(() => h.out().includes('? boss-2/'), "the subagent's question");
    const child = h.out().match(/^\? (boss-2\/\S+) wants to run deploy /)?.[1] ?? '';
    expect(child).toBe('boss-2/t0.a0');
    const walked = harness(process.cwd(), { env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) });
    expect(await hosted(['approvals', 'boss-2'], walked)).toEqual({
      code: 0,
      out: `${child}  d0  deploy  {"target":"prod","password":"[redacted]"}\n`,
      err: '',
    });
    expect(await hosted(['approve', child, 'd0'])).toMatchObject({ code: 0, out: 'approved d0\n' });
    const done = await waiting;
    expect(done).toMatchObject({ code: 0, err: 'done: completed · 20 in / 10 out' }); // no gap said
    expect(done.out).toMatch(/\nboss heard: .*deploy said: deployed prod/);
    expect(ran(`ran ${child} d0`)).toBe(1);
  }, 60_000);

  it("without the admin API, a background subagent's call is listed through its parent's task book", async () => {
    expect((await hosted(['prompt', 'bossbg-1', 'prod'])).code).toBe(0); // the boss's turn ends at once
    const child = 'bossbg-1/t0.a0';
    const walked = () => harness(process.cwd(), { env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) });
    let listed = await hosted(['approvals', 'bossbg-1'], walked());
    for (let i = 0; i < 200 && !listed.out.startsWith(child); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      listed = await hosted(['approvals', 'bossbg-1'], walked());
    }
    expect(listed).toEqual({
      code: 0,
      out: `${child}  d0  deploy  {"target":"prod","password":"[redacted]"}\n`,
      err: '',
    });
    expect(await hosted(['approve', child, 'd0'])).toMatchObject({ code: 0, out: 'approved d0\n' });
    await waitUntil(() => ran(`ran ${child} d0`) === 1, 'the approved call to run');
    // Settled: the book runs it no more, so nothing of it is listed.
    await waitUntil(
      async () => (await hosted(['approvals', 'bossbg-1'], walked())).out.startsWith('bossbg-1 has no calls'),
      'the task to settle',
    );
  }, 60_000);

  it('without the admin API, a settled subagent woken by a steer sent to it directly is found, and its call listed', async () => {
    const client = agentClient(server.ingressUrl);
    const child = 'bossbg-2/t0.a0';
    const walked = () => harness(process.cwd(), { env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) });
    const listed = () => hosted(['approvals', 'bossbg-2'], walked());
    // Its task: asks to deploy prod, approved, then settled: its parent has heard its result.
    expect((await hosted(['prompt', 'bossbg-2', 'prod'])).code).toBe(0);
    await waitUntil(async () => (await client.pendingApprovals(child)).length > 0, "the child's question");
    expect(await client.approve(child, { toolCallId: 'd0', approve: true })).toBe(true);
    await waitUntil(
      async () => (await client.history('bossbg-2')).some((m) => m.role === 'user' && m.source === 'notification'),
      'the task to settle',
    );
    expect(await client.subagents('bossbg-2')).toEqual([]);
    // A steer to the idle child opens a turn of its own, which no task of its parent runs: it asks to deploy staging.
    await client.steer(child, 'staging');
    let found = await listed();
    for (let i = 0; i < 200 && !found.out.startsWith(child); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      found = await listed();
    }
    // The call's id is the script's: `d` and the steer's place in the child's history (after its task's 4 messages).
    expect(found).toEqual({
      code: 0,
      out: `${child}  d4  deploy  {"target":"staging","password":"[redacted]"}\n`,
      err: '',
    });
    expect(await hosted(['approve', child, 'd4'])).toMatchObject({ code: 0, out: 'approved d4\n' });
    await waitUntil(() => ran(`ran ${child} d4`) === 1, 'the approved call to run');
    // Its turn over, it is idle again: no subagent of the boss is at work.
    await waitUntil(async () => (await client.subagents('bossbg-2')).length === 0, 'the turn to end');
    expect((await listed()).out).toBe('bossbg-2 has no calls waiting for approval\n');
  }, 60_000);

  it('an admin API that cannot be reached: the tree is walked through the ingress, and the command says so', async () => {
    const closed = await closedPort();
    const h = harness(process.cwd(), { env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }) });
    expect(await runIn(h, ['approvals', 'nobody-here', '--admin', `http://127.0.0.1:${closed}`])).toBe(0);
    expect(h.out()).toBe('nobody-here has no calls waiting for approval\n');
    expect(h.err).toEqual([
      `troupe approvals: cannot reach the admin API at http://127.0.0.1:${closed}: ECONNREFUSED; ` +
        "subagents' calls were found through the ingress (not those of a subagent whose task its parent's book forgot)",
    ]);
  });
});

describe('steering', () => {
  it('steer reaches the running turn, which hears it once', async () => {
    const invocationId = (await hosted(['send', 'steer-1', 'work'])).out.trim();
    const attached = user();
    const waiting = hosted(['attach', 'steer-1', invocationId], attached);
    await waitUntil(() => executions.includes('start steer-1 g1'), 'the gated tool to start');
    const taken = await takesAnswered(server.adminUrl, invocationId);
    const steered = await hosted(['steer', 'steer-1', 'also tea']);
    expect(steered.code).toBe(0);
    expect(steered.out).toMatch(/^steer accepted/);
    // The turn takes it (a call in its journal) while its tool still runs.
    await waitUntil(async () => (await takesAnswered(server.adminUrl, invocationId)) > taken, 'the turn to take it');
    open('steer-1');
    expect(await waiting).toMatchObject({ code: 0, out: 'heard: work | also tea\n' });
    const users = (await hosted(['history', 'steer-1'])).out.split('\n').filter((line) => line.startsWith('user'));
    expect(users).toEqual(['user: work', 'user (steer): also tea']);
    expect(ran('ran steer-1 g1')).toBe(1);
  }, 60_000);

  it('interrupt stops the running turn: the waiting command exits 130', async () => {
    const invocationId = (await hosted(['send', 'steer-2', 'work'])).out.trim();
    const waiting = hosted(['attach', 'steer-2', invocationId]);
    await waitUntil(() => executions.includes('start steer-2 g1'), 'the gated tool to start');
    const interrupted = await hosted(['interrupt', 'steer-2']);
    expect(interrupted.code).toBe(0);
    expect(interrupted.out).toMatch(/^interrupt accepted/);
    const done = await waiting;
    expect(done.code).toBe(130);
    expect(done.err).toMatch(/^done: interrupted/m);
    expect(executions).not.toContain('ran steer-2 g1');
    // The key is free again: the next prompt runs to its end.
    expect(await hosted(['prompt', 'steer-2', 'next'])).toMatchObject({ code: 0, out: 'heard: work | next\n' });
  }, 60_000);

  it('Ctrl-C while a prompt waits interrupts the turn; a second Ctrl-C leaves it and says how to attach', async () => {
    const h = user();
    const waiting = hosted(['prompt', 'steer-3', 'work'], h);
    await waitUntil(() => executions.includes('start steer-3 g1'), 'the gated tool to start');
    h.sigint();
    const done = await waiting;
    expect(done.code).toBe(130);
    expect(done.err).toMatch(/^interrupting steer-3's turn/m);
    expect(done.err).toMatch(/^done: interrupted/m);
    expect(executions).not.toContain('ran steer-3 g1');

    const twice = user();
    const leaving = hosted(['prompt', 'steer-4', 'work'], twice);
    await waitUntil(() => executions.includes('start steer-4 g1'), 'the gated tool to start');
    twice.sigint();
    twice.sigint();
    const left = await leaving;
    expect(left.code).toBe(130);
    const hint = left.err.match(/left; the turn goes on: troupe (attach steer-4 inv_\w+)/)?.[1];
    expect(hint).toBeDefined();
    // The turn went on without the command (the first Ctrl-C's interrupt ends it): attached again, it says so.
    expect(await hosted(hint?.split(' ') ?? [])).toMatchObject({ code: 130 });
  }, 60_000);
});

describe('errors', () => {
  it('an ingress nobody listens on is one line on stderr and exit 1', async () => {
    const closed = await closedPort();
    const h = harness(process.cwd(), { env: keylessEnv({ TROUPE_RESTATE_URL: `http://127.0.0.1:${closed}` }) });
    const done = await hosted(['prompt', 'plain-9', 'go'], h);
    expect(done).toMatchObject({ code: 1, out: '' });
    expect(h.err).toEqual([
      `troupe prompt: cannot reach Restate's ingress at http://127.0.0.1:${closed}: ECONNREFUSED`,
    ]);
    // --restate wins over the environment.
    const flag = await hosted(['usage', 'plain-1', '--restate', server.ingressUrl], h);
    expect(flag.code).toBe(0);
  });

  it('an object Restate does not know is exit 1 with what to check', async () => {
    const h = user();
    expect(await runIn(h, ['usage', 'plain-1', '--name', 'nobody'])).toBe(1);
    expect(h.err).toHaveLength(1);
    expect(h.err[0]).toMatch(/^troupe usage: nobody\/plain-1\/usage: 404 .*registered\? --name picks the object\)$/);
  });

  it.each([
    [['prompt'], 'troupe prompt: which agent? troupe prompt <agent|session> <text>'],
    [['prompt', 'a'], 'troupe prompt: missing <text>'],
    [['deny', 'a'], 'troupe deny: missing <call>'],
    [['prompt', 'a', 'two', 'words'], 'troupe prompt: unexpected "words" (quote a text of several words)'],
    [['approve', 'a', 'c1', '--reason', 'x'], 'troupe approve: --reason goes with deny'],
    [['usage', 'a', '--frob'], "troupe usage: Unknown option '--frob'"],
    [
      ['usage', 'a', '--restate', 'localhost:8080'],
      "troupe usage: --restate: Restate's ingress is an http:// or https:// address, not localhost:8080",
    ],
    [['usage', 'a', '--restate', 'not a url'], 'troupe usage: --restate: not a URL: not a url'],
    [
      ['prompt', 'a', 'go', '--offline', '--restate', 'http://127.0.0.1:1'],
      "troupe prompt: --offline: a hosted agent runs in its worker, with the worker's folder, model and mode",
    ],
    [
      ['usage', 'a', '--name', 'x'],
      "troupe usage: --name goes with --restate (a session's agents run in this process)",
    ],
  ])('usage error %j exits 2 with one line', async (args, line) => {
    const h = harness(process.cwd());
    expect(await runIn(h, args)).toBe(2);
    expect(h.err).toEqual([line]);
    expect(h.out()).toBe('');
  });

  it('the real bin: a prompt answered, and an unreachable ingress as one line and exit 1', async () => {
    const answered = await runPiped(['prompt', 'plain-bin', 'go'], {
      env: keylessEnv({ TROUPE_RESTATE_URL: server.ingressUrl }),
    });
    expect(answered).toMatchObject({ code: 0, stdout: 'saw 1 result\n' });
    expect(answered.stderr).toBe('done: completed · 20 in / 10 out\n');
    const closed = await closedPort();
    const refused = await runPiped(['usage', 'plain-bin', '--restate', `http://127.0.0.1:${closed}`]);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe(
      `troupe usage: cannot reach Restate's ingress at http://127.0.0.1:${closed}: ECONNREFUSED\n`,
    );
  }, 60_000);

  it.skipIf(missing('tmux', 'the hosted terminal test'))(
    'the real bin on a terminal: a question answered with y, and Ctrl-C interrupting a turn',
    async () => {
      const env = { TROUPE_RESTATE_URL: server.ingressUrl, TROUPE_RESTATE_ADMIN: server.adminUrl };
      // Both terminals open together: closing a tmux server's last session ends the server, racing a new one.
      const asked = new TerminalRun(['prompt', 'approver-tty', 'prod'], { env });
      const stopped = new TerminalRun(['prompt', 'steer-tty', 'work'], { env });
      try {
        await asked.waitFor(/\? approver-tty wants to run deploy .* — \[y\]es \/ \[n\]o:\s*$/m);
        asked.keys('y');
        const answered = await asked.waitFor(/EXIT=\d+/);
        expect(answered).toMatch(/\[n\]o: yes\ndeploy said: deployed prod\ndone: completed/);
        expect(answered).toContain('EXIT=0');
        expect(ran('ran approver-tty d0')).toBe(1);
        await waitUntil(() => executions.includes('start steer-tty g1'), 'the gated tool to start');
        stopped.keys('C-c');
        const interrupted = await stopped.waitFor(/EXIT=\d+/);
        expect(interrupted).toMatch(/interrupting steer-tty's turn/);
        expect(interrupted).toMatch(/done: interrupted/);
        expect(interrupted).toContain('EXIT=130');
      } finally {
        asked.close();
        stopped.close();
      }
    },
    90_000,
  );

  it('--help prints the verbs', async () => {
    const h = harness(process.cwd());
    expect(await runIn(h, ['prompt', '--help'])).toBe(0);
    expect(h.out()).toMatch(/^Usage: troupe <verb> <agent\|session>/);
  });
});
