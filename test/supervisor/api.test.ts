import { describe, expect, it } from 'vitest';
import { type AnyActorRef, type InspectionEvent, waitFor as xstateWaitFor } from 'xstate';
import { z } from 'zod';
import { POOL_TASKS } from '../../machines/supervisor/index.js';
import { type AgentEvent, createAgent, createSupervisor, defineTool, scriptedModel, textOf } from '../../src/index.js';
import { emptyUsage } from '../../src/protocol/index.js';
import { describeTree, SpawnRefused, type TreeView } from '../../src/runtime/index.js';
import { assertValidHistory, latch, router, waitFor } from './helpers.js';

const danger = defineTool({
  name: 'danger',
  description: 'needs approval',
  schema: z.object({}),
  execute: () => 'done it',
});

/** The nodes of a tree view, depth first, as `kind:id@state`. */
function flatten(view: TreeView, out: TreeView[] = []): TreeView[] {
  out.push(view);
  for (const child of view.children) flatten(child, out);
  return out;
}

describe('createSupervisor(): unknown ids get clear answers, never a hang or a throw', () => {
  it('status, cancel, result, resume, get, whereIs, messagesOf, usageOf, approve and deny of ids nobody knows', async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const supervisor = createSupervisor({ model });
    expect(supervisor.status('task_nope')).toBeUndefined();
    expect(supervisor.cancel('task_nope')).toBe(false);
    await expect(supervisor.result('task_nope')).rejects.toThrow('No task "task_nope" is known');
    await expect(supervisor.resume('nobody', 'hello?')).rejects.toThrow(/No finished subagent "nobody" is known/);
    await expect(supervisor.resume('nobody', 'hello?')).rejects.toBeInstanceOf(SpawnRefused);
    expect(supervisor.get('nobody')).toBeUndefined();
    expect(supervisor.whereIs('nobody')).toBe('unknown');
    expect(supervisor.messagesOf('nobody')).toBeUndefined();
    expect(supervisor.usageOf('nobody')).toBeUndefined();
    expect(supervisor.usageOf('nobody', 'subtree')).toBeUndefined();
    // Answers for calls nobody waits on go nowhere, quietly.
    expect(() => supervisor.approve('call_nope')).not.toThrow();
    expect(() => supervisor.deny('call_nope', 'no')).not.toThrow();
    expect(() => supervisor.approve({ agentId: 'ghost', toolCallId: 'call_nope' })).not.toThrow();
    expect(() => supervisor.deny({ agentId: 'ghost', toolCallId: 'call_nope' })).not.toThrow();
    // The supervisor is still perfectly usable afterwards.
    expect((await supervisor.run('hi')).text).toBe('ok');
    expect(model.calls).toBe(1);
    await supervisor.stop();
  });

  it('refuses bad swarms up front: no tasks, an unknown profile, a nonsense concurrency', async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const supervisor = createSupervisor({ model, profiles: { coder: {} } });
    await expect(supervisor.swarm([])).rejects.toThrow('No tasks given');
    await expect(supervisor.run('x', { profile: 'poet' })).rejects.toThrow(
      'Unknown profile "poet". Profiles: default, coder.',
    );
    await expect(supervisor.swarm(['x'], { concurrency: 0 })).rejects.toThrow(
      'concurrency must be a positive integer, got 0',
    );
    // None of them started anything.
    expect(model.calls).toBe(0);
    expect(supervisor.usage.input).toBe(0);
    await supervisor.stop();
  });

  // Refusals come before the batch is recorded: a refused batch must not count against maxAgents forever.
  it('a swarm refused for its concurrency leaves nothing open behind it (maxAgents still has room)', async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const supervisor = createSupervisor({ model, maxAgents: 1 });
    await expect(supervisor.swarm(['x'], { concurrency: 0 })).rejects.toThrow('concurrency must be a positive integer');
    // Refused now with "1 more subagent(s) would exceed the limit of 1 running at once (maxAgents; 1 open now)".
    expect((await supervisor.run('y')).text).toBe('ok');
    await supervisor.stop();
  });

  it('without a model, a task fails with an error that says which model is missing', async () => {
    // No restarts: the failure is the same every time, and the default backoff would only slow the test down.
    const supervisor = createSupervisor({ maxRestarts: 0 });
    expect(supervisor.id).toMatch(/^supervisor_/);
    const result = await supervisor.run('anyone there?');
    expect(result.status).toBe('failed');
    expect(result.text).toContain('No model: give createSupervisor() a `model`');
    expect(supervisor.status(result.taskId)).toMatchObject({ status: 'failed', agentId: result.agentId });
    await supervisor.stop();
  });
});

describe('createSupervisor(): tasks by id', () => {
  it('result() waits for its own task, not for the first one to finish; status() follows it', async () => {
    const gates = { a: latch(), b: latch() };
    const model = router(async ({ prompt }) => {
      await gates[prompt as 'a' | 'b'].promise;
      return { text: `${prompt} done`, usage: { input: 3 } };
    });
    const supervisor = createSupervisor({ model, id: 'root' });
    expect(supervisor.id).toBe('root');
    const [a, b] = await supervisor.swarm(['a', 'b'], { background: true });
    if (!a || !b) throw new Error('expected two task ids');
    expect(supervisor.status(b)).toEqual({ taskId: b, agentId: expect.any(String), status: 'running' });
    expect(supervisor.status(b)).not.toHaveProperty('text');
    const order: string[] = [];
    const resultB = supervisor.result(b).then((r) => {
      order.push(`result ${r.text}`);
      return r;
    });
    const endA = waitFor(supervisor.on.bind(supervisor), (e) => e.type === 'subagent_end' && e.taskId === a);
    gates.a.open();
    await endA;
    // a's end went by: b's result is still pending, and says so.
    expect(order).toEqual([]);
    expect(supervisor.status(b)?.status).toBe('running');
    expect(supervisor.status(a)).toMatchObject({ status: 'completed', text: 'a done' });
    gates.b.open();
    expect(await resultB).toMatchObject({ taskId: b, status: 'completed', text: 'b done' });
    // A settled task answers at once, with the same result.
    expect(await supervisor.result(b)).toEqual(await resultB);
    expect(supervisor.status(b)).toMatchObject({ status: 'completed', text: 'b done' });
    expect(supervisor.usage.input).toBe(6);
    await supervisor.stop();
  });

  it('cancel() stops a running task and a queued one (which never starts); cancelling again says false', async () => {
    const never = latch();
    const started: string[] = [];
    const inFlight = latch();
    const model = router(async ({ prompt }) => {
      started.push(prompt);
      inFlight.open();
      await never.promise;
      return { text: 'never' };
    });
    const supervisor = createSupervisor({ model });
    const ends: Array<[string, string]> = [];
    supervisor.on('subagent_end', (e) => ends.push([e.taskId, e.status]));
    const [running, queued] = await supervisor.swarm(['first', 'second'], { background: true, concurrency: 1 });
    if (!running || !queued) throw new Error('expected two task ids');
    await inFlight.promise;
    expect(started).toEqual(['first']);

    expect(supervisor.cancel(queued)).toBe(true);
    expect(await supervisor.result(queued)).toMatchObject({ status: 'cancelled' });
    // The slot is still taken by the first: the queued one was dropped, not started.
    expect(started).toEqual(['first']);

    expect(supervisor.cancel(running)).toBe(true);
    const cancelled = await supervisor.result(running);
    expect(cancelled).toMatchObject({ status: 'cancelled', text: 'The task was cancelled before it finished.' });
    expect(supervisor.status(running)?.status).toBe('cancelled');
    expect(supervisor.cancel(running)).toBe(false);
    expect(supervisor.cancel(queued)).toBe(false);
    expect(ends).toEqual([
      [queued, 'cancelled'],
      [running, 'cancelled'],
    ]);
    // The interrupted child's history is still a valid conversation.
    assertValidHistory(supervisor.messagesOf(cancelled.agentId) ?? []);
    expect(started).toEqual(['first']);
    await supervisor.stop();
  });

  it('swarm({ concurrency }) caps this batch below the supervisor’s default, and keeps task order', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const waiting: Array<() => void> = [];
    // Each call waits until a second one is in flight with it, then both go: the cap is reached, never passed.
    const model = router(async ({ prompt }) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (inFlight === 2) for (const release of waiting.splice(0)) release();
      else await new Promise<void>((resolve) => waiting.push(resolve));
      inFlight--;
      return { text: prompt.toUpperCase() };
    });
    const supervisor = createSupervisor({ model, concurrency: 4 });
    // Tasks started and not yet ended, as the supervisor announces them (a batch starts its first tasks at once).
    let running = 0;
    let maxRunning = 0;
    supervisor.on('subagent_start', () => {
      maxRunning = Math.max(maxRunning, ++running);
    });
    supervisor.on('subagent_end', () => running--);
    const results = await supervisor.swarm(['a', { prompt: 'b' }, 'c', 'd'], { concurrency: 2 });
    expect(results.map((r) => r.text)).toEqual(['A', 'B', 'C', 'D']);
    expect(maxRunning).toBe(2);
    expect(maxInFlight).toBe(2);
    expect(model.calls).toBe(4);
    await supervisor.stop();
  });

  it('run({ profile }) runs the task under that profile, and resume() continues the same agent', async () => {
    const model = router(({ request, lastUser }) => ({ text: `${request.system ?? 'no system'} / ${lastUser}` }));
    const supervisor = createSupervisor({ model, profiles: { poet: { system: 'Rhyme.' } } });
    const first = await supervisor.run('a verse', { profile: 'poet' });
    expect(first.text).toBe('Rhyme. / a verse');
    expect(first.agentId).toMatch(/^poet_/);
    const again = await supervisor.resume(first.agentId, 'another');
    expect(again.agentId).toBe(first.agentId);
    expect(again.text).toBe('Rhyme. / another');
    expect(supervisor.messagesOf(first.agentId)?.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    await supervisor.stop();
  });
});

describe('createSupervisor().agent(): members', () => {
  it('takes an id, refuses a second agent with the same id, and seeds the history from messages', async () => {
    const model = router(({ request }) => ({ text: `I see ${request.messages.length} messages` }));
    const supervisor = createSupervisor({ model });
    const lead = supervisor.agent({
      id: 'lead',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'earlier' }] },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'noted' }],
          provider: 'scripted',
          model: 'scripted',
          stopReason: 'stop',
          usage: emptyUsage(),
        },
      ],
    });
    expect(lead.id).toBe('lead');
    expect(() => supervisor.agent({ id: 'lead' })).toThrow('An agent with id "lead" already exists in this tree');
    expect((await lead.prompt('and now?')).text).toBe('I see 3 messages');
    expect(supervisor.whereIs('lead')).toBe('alive');
    expect(supervisor.messagesOf('lead')?.map((m) => textOf(m))).toEqual([
      'earlier',
      'noted',
      'and now?',
      'I see 3 messages',
    ]);
    const anonymous = supervisor.agent({});
    expect(anonymous.id).toMatch(/^agent_/);
    expect(anonymous.id).not.toBe('lead');
    await supervisor.stop();
  });

  it('stopping a member releases it from the tree; the rest of the tree carries on', async () => {
    const model = router(({ lastUser }) => ({ text: `re ${lastUser}` }));
    const supervisor = createSupervisor({ model });
    const lead = supervisor.agent({ id: 'lead' });
    const other = supervisor.agent({ id: 'other' });
    await lead.prompt('hi');
    expect(supervisor.get('lead')?.id).toBe('lead');
    await lead.stop();
    await new Promise((resolve) => setTimeout(resolve, 0));
    // A member is not a task: it is not archived for a resume, it is gone.
    expect(supervisor.whereIs('lead')).toBe('unknown');
    expect(supervisor.get('lead')).toBeUndefined();
    expect(flatten(supervisor.tree()).map((n) => n.id)).toEqual([supervisor.id, 'other']);
    expect((await other.prompt('still there?')).text).toBe('re still there?');
    // Its id is free again.
    expect(supervisor.agent({ id: 'lead' }).id).toBe('lead');
    await supervisor.stop();
  });

  it('passes maxSteps, maxOutputAttempts and wakeOnNotification to the member’s machine', async () => {
    const echo = defineTool({ name: 'echo', description: 'echoes', schema: z.object({}), execute: () => 'echo' });
    // The background child answers only once its owner's turn is over, so its result finds the owner idle.
    let ownerIdle: () => void = () => {};
    const ownerIdled = new Promise<void>((resolve) => {
      ownerIdle = resolve;
    });
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'child') await ownerIdled;
      if (prompt === 'loop') return { toolCalls: [{ name: 'echo', args: {} }] };
      if (prompt === 'json') return { text: 'not json' };
      if (prompt === 'BG' && answers === 0) {
        return { toolCalls: [{ name: 'agent', args: { prompt: 'child', background: true } }] };
      }
      if (prompt === 'BG') return { text: 'started' };
      return { text: `${prompt} finished` };
    });
    const supervisor = createSupervisor({ model });

    const looper = supervisor.agent({ tools: [echo], maxSteps: 2 });
    const looped = await looper.prompt('loop');
    expect(looped.stopReason).toBe('max_steps');
    expect(looped.messages.filter((m) => m.role === 'assistant')).toHaveLength(2);

    const strict = supervisor.agent({ maxOutputAttempts: 1 });
    const failed = await strict.prompt('json', { outputSchema: z.object({ ok: z.boolean() }) });
    expect(failed.stopReason).toBe('error');
    expect(failed.error?.message).toMatch(/after 1 attempts/);

    const sleeper = supervisor.agent({ wakeOnNotification: false });
    const delivered = waitFor(supervisor.on.bind(supervisor), (e) => e.type === 'notification');
    expect((await sleeper.prompt('BG')).text).toBe('started');
    ownerIdle();
    await delivered;
    await new Promise((resolve) => setTimeout(resolve, 0));
    // Not woken by its child's result: still two answers, and idle.
    expect(sleeper.messages.filter((m) => m.role === 'assistant')).toHaveLength(2);
    expect(sleeper.actor.getSnapshot().matches('idle')).toBe(true);
    await supervisor.stop();
  });
});

describe('createSupervisor().approve() / deny(): routing', () => {
  it('routes an approval_requested event to the agent that asked, even when two agents use the same call id', async () => {
    const model = router(({ answers, lastTool, prompt }) =>
      answers === 0 ? { toolCalls: [{ name: 'danger', args: {}, id: 'same_id' }] } : { text: `${prompt}: ${lastTool}` },
    );
    const supervisor = createSupervisor({ model, tools: [danger], policy: () => 'ask' });
    const asked: AgentEvent[] = [];
    const both = latch();
    supervisor.on('approval_requested', (event) => {
      asked.push(event);
      if (asked.length === 2) both.open();
    });
    const batch = supervisor.swarm(['yes', 'no']);
    await both.promise;
    const byPrompt = (p: string) =>
      asked.find((e) => textOf(supervisor.messagesOf(e.agentId)?.[0]) === p) as AgentEvent & {
        toolCallId: string;
      };
    const yes = byPrompt('yes');
    const no = byPrompt('no');
    expect(yes.agentId).not.toBe(no.agentId);
    // Answer the second asker first: routing is by agent, not by arrival order.
    supervisor.deny(no);
    supervisor.approve(yes);
    const [yesResult, noResult] = await batch;
    expect(yesResult?.text).toBe('yes: done it');
    expect(noResult?.text).toBe('no: The user denied this tool call');
    await supervisor.stop();
  });

  it('a bare call id with a reason, or without one, reaches the one agent waiting on it', async () => {
    let n = 0;
    const model = router(({ answers, lastTool }) =>
      answers === 0 ? { toolCalls: [{ name: 'danger', args: {}, id: `call_${++n}` }] } : { text: lastTool },
    );
    const supervisor = createSupervisor({ model, tools: [danger], policy: () => 'ask' });
    const off = supervisor.on('approval_requested', (event) => supervisor.deny(event.toolCallId, 'too risky'));
    expect((await supervisor.run('one')).text).toBe('The user denied this tool call: too risky');
    off();
    supervisor.on('approval_requested', (event) => supervisor.deny(event.toolCallId));
    expect((await supervisor.run('two')).text).toBe('The user denied this tool call');
    await supervisor.stop();
  });
});

describe('createSupervisor().stop()', () => {
  it('while a foreground swarm runs: every task settles as interrupted (queued ones too), and the swarm resolves', async () => {
    const never = latch();
    const threeRunning = latch();
    let started = 0;
    const model = router(async () => {
      if (++started === 3) threeRunning.open();
      await never.promise;
      return { text: 'never' };
    });
    const supervisor = createSupervisor({ model, concurrency: 2 });
    const ends: string[] = [];
    supervisor.on('subagent_end', (e) => ends.push(e.status));
    const background = await supervisor.swarm(['bg'], { background: true, concurrency: 1 });
    const pending = supervisor.result(background[0] ?? '');
    const swarm = supervisor.swarm(['a', 'b', 'c']);
    await threeRunning.promise;
    await supervisor.stop();
    const results = await swarm;
    expect(results).toHaveLength(3);
    expect(results.map((r) => r?.status)).toEqual(['interrupted', 'interrupted', 'interrupted']);
    expect((await pending).status).toBe('interrupted');
    expect(ends.sort()).toEqual(['interrupted', 'interrupted', 'interrupted', 'interrupted']);
    // Only two of the foreground tasks and the background one ever reached the model: c was queued.
    expect(started).toBe(3);
    for (const r of results) expect(supervisor.status(r.taskId)?.status).toBe('interrupted');
  });

  it('is idempotent, and a stopped supervisor refuses new agents and swarms with a clear error', async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const supervisor = createSupervisor({ model, id: 'done' });
    await supervisor.run('one');
    await supervisor.stop();
    await expect(supervisor.stop()).resolves.toBeUndefined();
    expect(() => supervisor.agent({})).toThrow('Supervisor done is stopped');
    await expect(supervisor.swarm(['x'])).rejects.toThrow('Supervisor done is stopped');
    await expect(supervisor.run('x')).rejects.toThrow('Supervisor done is stopped');
    expect(model.calls).toBe(1);
  });
});

describe('createSupervisor(): reading the tree', () => {
  it('tree() shows supervisors and agents with their states and usage, and no workers', async () => {
    let during: TreeView | undefined;
    const gate = latch();
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'LEAD' && answers === 0) {
        return { usage: { input: 7 }, toolCalls: [{ name: 'agent', args: { prompt: 'child' } }] };
      }
      if (prompt === 'child') {
        during = supervisor.tree();
        await gate.promise;
      }
      return { usage: { input: 1 }, text: 'done' };
    });
    const supervisor = createSupervisor({ model, id: 'sup' });
    const lead = supervisor.agent({ id: 'lead' });
    const turn = lead.prompt('LEAD');
    await waitFor(supervisor.on.bind(supervisor), (e) => e.type === 'subagent_start');
    gate.open();
    await turn;
    await xstateWaitFor(supervisor.actor, (snapshot) => snapshot.matches('idle'));

    const nodes = flatten(during as TreeView);
    expect(nodes.map((n) => `${n.kind}:${n.id}`)).toEqual([
      'supervisor:sup',
      'agent:lead',
      'supervisor:lead/supervisor',
      `agent:${nodes[3]?.id}`,
    ]);
    const [root, leadView, leadSupervisor, child] = nodes;
    expect(root?.state).toBe('busy'); // its member is working (issue 11: it said idle)
    expect(leadView?.state).toMatch(/^running\..*tools\.executing/);
    expect(leadView?.usage?.input).toBe(7);
    expect(leadSupervisor?.state).toBe('busy');
    expect(leadSupervisor?.usage).toBeUndefined();
    expect(child?.state).toMatch(/^running\..*model/);
    // A supervisor has no usage of its own; nothing below an agent is a worker.
    expect(nodes.some((n) => n.id.includes('worker'))).toBe(false);

    const after = flatten(supervisor.tree());
    expect(after.map((n) => `${n.kind}:${n.id}@${n.state}`)).toEqual([
      'supervisor:sup@idle',
      'agent:lead@idle',
      'supervisor:lead/supervisor@idle',
      `agent:${child?.id}@idle`,
    ]);
    expect(after[1]?.usage?.input).toBe(8);
    expect(after[3]?.usage?.input).toBe(1);
    await supervisor.stop();
  });

  it('describeTree() of a standalone agent: one agent node, no usage unless asked for', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'ok' }]), id: 'solo' });
    await agent.prompt('hi');
    expect(describeTree(agent.actor, agent.id)).toEqual({ id: 'solo', kind: 'agent', state: 'idle', children: [] });
    expect(describeTree(agent.actor, agent.id, () => agent.usage).usage).toEqual(agent.usage);
    await agent.stop();
  });

  it('messagesOf / whereIs / usageOf follow an agent from alive to archived', async () => {
    const model = router(({ prompt }) => ({ text: `re ${prompt}`, usage: { input: 2, output: 1 } }));
    const supervisor = createSupervisor({ model, keepFinished: 0 });
    const { agentId } = await supervisor.run('q');
    // keepFinished: 0 stops it as soon as it is done; its history and usage are archived.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(supervisor.whereIs(agentId)).toBe('archived');
    expect(supervisor.get(agentId)).toBeUndefined();
    expect(supervisor.messagesOf(agentId)?.map((m) => textOf(m))).toEqual(['q', 're q']);
    expect(supervisor.usageOf(agentId)).toMatchObject({ input: 2, output: 1 });
    expect(supervisor.usageOf(agentId, 'subtree')).toMatchObject({ input: 2, output: 1 });
    // A copy: the caller cannot change the archive.
    supervisor.messagesOf(agentId)?.pop();
    expect(supervisor.messagesOf(agentId)).toHaveLength(2);
    const usage = supervisor.usage;
    usage.input = 1000;
    expect(supervisor.usage.input).toBe(2);
    await supervisor.stop();
  });

  it('the inspect option sees the whole tree, from the root supervisor down to its agents', async () => {
    const actors = new Set<string>();
    const inspect = (event: InspectionEvent) => {
      if (event.type === '@xstate.actor') actors.add((event.actorRef as AnyActorRef).id);
    };
    const supervisor = createSupervisor({ model: scriptedModel(() => ({ text: 'ok' })), id: 'seen', inspect });
    const lead = supervisor.agent({ id: 'lead' });
    await lead.prompt('hi');
    expect(actors.has('seen')).toBe(true);
    expect(actors.has('subagent.lead')).toBe(true);
    await supervisor.stop();
  });
});

describe('createSupervisor(): what a swarm costs XState', () => {
  /** The STARTs and FILLs the pools of a swarm hear, by the depth of the pool. */
  async function poolEvents(tasks: number, concurrency: number) {
    const heard = { above: 0, leaf: 0, fills: 0, filled: 0 };
    const started: string[] = [];
    const inspect = (event: InspectionEvent) => {
      if (event.type !== '@xstate.event') return;
      const { type } = event.event;
      const context = (event.actorRef as AnyActorRef).getSnapshot().context as { task?: { taskId: string } };
      if (type === 'xstate.init' && (event.actorRef as AnyActorRef).id.startsWith('task.'))
        started.push(context.task?.taskId as string);
      if (type === 'FILL') {
        heard.fills++;
        heard.filled += (event.event as unknown as { starts: unknown[] }).starts.length;
      }
      if (type !== 'START') return;
      if ((context as { depth?: number }).depth === 0) heard.leaf++;
      else heard.above++;
    };
    const supervisor = createSupervisor({ model: scriptedModel(() => ({ text: 'ok' })), inspect });
    const results = await supervisor.swarm(
      Array.from({ length: tasks }, (_, n) => `task ${n}`),
      { concurrency },
    );
    expect(results.map((result) => result.status)).toEqual(results.map(() => 'completed'));
    // Every task started once, in order.
    expect(started).toEqual(results.map((result) => result.taskId));
    await supervisor.stop();
    return heard;
  }

  it('starts a task in its pool of depth 0 directly once that pool exists: the pool above relays only its first', async () => {
    const tasks = 40;
    const concurrency = 4;
    const heard = await poolEvents(tasks, concurrency);
    // The first fill's tasks go to the pool it spawns in one FILL; later, one task starts per settle, through the
    // pools only when it is the first of its pool of 16.
    expect(heard).toMatchObject({ fills: 1, filled: concurrency });
    const laterFirsts = Math.ceil(tasks / 16) - 1;
    expect(heard.above).toBe(laterFirsts);
    expect(heard.leaf).toBe(tasks - concurrency);
  });

  it(`starts a first fill of ${POOL_TASKS + 44} tasks with one FILL per pool it spawns, and no START`, async () => {
    const tasks = POOL_TASKS + 44;
    expect(await poolEvents(tasks, tasks)).toEqual({ above: 0, leaf: 0, fills: 2, filled: tasks });
  });
});

describe('createSupervisor(): the root tells the truth about its members', () => {
  it('is busy while a member works, and idle again when it is done', async () => {
    const gate = latch();
    const model = scriptedModel(async () => {
      await gate.promise;
      return { text: 'done' };
    });
    const supervisor = createSupervisor({ model });
    const lead = supervisor.agent({ id: 'lead' });
    expect(supervisor.actor.getSnapshot().value).toBe('idle');
    const started = waitFor(
      (type, listener) => supervisor.on(type, listener),
      (event) => event.type === 'turn_start',
    );
    const answer = lead.prompt('work');
    await started;
    await Promise.resolve();
    expect(supervisor.actor.getSnapshot().value).toBe('busy');
    expect(supervisor.tree().state).toBe('busy');
    gate.open();
    await answer;
    // The member's end reaches the supervisor once the member's own transition has settled.
    await xstateWaitFor(supervisor.actor, (snapshot) => snapshot.matches('idle'));
    expect(supervisor.tree().state).toBe('idle');
    await supervisor.stop();
  });
});
