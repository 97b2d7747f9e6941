/**
 * What a WebSocket inspector receives from a real run: Stately's frames, through our sanitiser, to a plain
 * WebSocket server on 127.0.0.1 (the same route as Stately's `createInspectorServer`).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { createAgent, defineTool, openWebSocketInspector, scriptedModel } from '../../src/index.js';
import { FILES, swarmFixture } from './swarm.js';

const PLANTED_KEY = 'sk-proj-PLANTEDplantedPLANTED0123456789abcdef';

interface Frame {
  type: string;
  sessionId: string;
  name?: string;
  parentId?: string;
  definition?: string;
  snapshot?: { status?: string; value?: unknown; context?: Record<string, unknown> };
  event?: { type: string };
}

async function receiver() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const raw: string[] = [];
  let closed!: Promise<void>;
  const connected = new Promise<void>((resolve) => {
    server.once('connection', (socket) => {
      closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.on('message', (data) => raw.push(data.toString()));
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, raw, connected, closed: () => closed, server };
}

describe('a run seen through createWebSocketInspector', () => {
  const saved = process.env.OPENAI_API_KEY;
  beforeAll(() => {
    // The sanitiser scrubs every *_API_KEY value it finds in the environment, wherever it shows up.
    process.env.OPENAI_API_KEY = PLANTED_KEY;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  });

  it('announces every actor with its definition and parent, sends every snapshot, and leaks no key', async () => {
    const rx = await receiver();
    const inspector = await openWebSocketInspector({ url: rx.url });
    await rx.connected;

    // The unsanitised truth, seen by a local observer beside the WebSocket one.
    const local: InspectionEvent[] = [];
    const write = defineTool({
      name: 'write_file',
      description: 'Writes a file',
      schema: z.object({ path: z.string(), text: z.string() }),
      execute: ({ path }) => `wrote ${path}`,
    });
    const longAnswer = 'token '.repeat(400);
    const model = Object.assign(
      scriptedModel([
        {
          text: 'Writing it.',
          toolCalls: [{ name: 'write_file', args: { path: 'notes.txt', text: `key=${PLANTED_KEY}` } }],
        },
        { text: longAnswer, chunkSize: 1, usage: { input: 30, output: 400 } },
      ]),
      // A provider client would hold its key like this; it lives outside the machine, in the runtime.
      { apiKey: PLANTED_KEY },
    );
    const agent = createAgent({
      id: 'writer',
      model,
      tools: [write],
      policy: () => 'ask',
      inspect: {
        next: (event) => {
          local.push(event);
          inspector.inspect.next?.(event);
        },
      },
    });
    let deltas = 0;
    agent.on('message_update', () => deltas++);
    agent.on('approval_requested', (event) => agent.approve(event.toolCallId));
    const bigPrompt = `Please keep my key ${PLANTED_KEY} safe. ${'x'.repeat(20_000)}`;
    const result = await agent.prompt(bigPrompt);
    expect(result.stopReason).toBe('completed');
    await agent.stop();
    await inspector.close();
    await rx.closed();
    rx.server.close();

    const frames = rx.raw.map((text) => JSON.parse(text) as Frame);

    // No secret anywhere, however it travelled: model object, prompt text, tool arguments.
    for (const text of rx.raw) expect(text).not.toContain(PLANTED_KEY);
    expect(rx.raw.join('\n')).toContain('[redacted]');

    // Every actor announced, with definition and parent.
    const actors = frames.filter((f) => f.type === '@xstate.actor');
    const agentFrame = actors.find((f) => f.name === 'writer');
    expect(agentFrame).toBeDefined();
    expect(agentFrame?.parentId).toBeUndefined();
    const definition = JSON.parse(agentFrame?.definition ?? '{}') as { id?: string; states?: Record<string, unknown> };
    expect(definition.id).toBe('agent');
    // Deep enough to hold the tool phases (Stately's default depth of 10 cuts them off).
    expect(agentFrame?.definition).toContain('awaitingApproval');
    const localActors = local.filter((e) => e.type === '@xstate.actor');
    expect(actors.map((f) => f.sessionId).sort()).toEqual(localActors.map((e) => e.actorRef.sessionId).sort());
    // An agent runs its turns with no actor under it: its worker's requests are actions.
    expect(actors.filter((f) => f.parentId === agentFrame?.sessionId)).toEqual([]);

    // Every transition's snapshot, in order, for every actor.
    for (const { sessionId } of actors) {
      const sent = frames
        .filter((f) => f.type === '@xstate.snapshot' && f.sessionId === sessionId)
        .map((f) => JSON.stringify(f.snapshot?.value ?? null));
      const seen = local
        .filter((e) => e.type === '@xstate.snapshot' && e.actorRef.sessionId === sessionId)
        .map((e) => JSON.stringify((e as { snapshot: { value?: unknown } }).snapshot.value ?? null));
      expect(sent, sessionId).toEqual(seen);
    }
    const agentSnapshots = frames.filter((f) => f.type === '@xstate.snapshot' && f.sessionId === agentFrame?.sessionId);
    const states = agentSnapshots.map((f) => JSON.stringify(f.snapshot?.value));
    expect(states).toContain(JSON.stringify({ running: { turn: { step: { tools: 'awaitingApproval' } } } }));
    expect(states.at(-1)).toBe(JSON.stringify('idle'));

    // Deltas never go through the machine: 400 streamed characters, a handful of machine events.
    expect(deltas).toBeGreaterThanOrEqual(longAnswer.length);
    const agentEvents = frames.filter((f) => f.type === '@xstate.event' && f.sessionId === agentFrame?.sessionId);
    expect(agentEvents.length).toBeLessThan(20);
    expect(agentEvents.map((f) => f.event?.type)).toEqual(
      expect.arrayContaining(['PROMPT', 'MODEL_DONE', 'AUTHORIZED', 'APPROVE', 'TOOL_RESULTS']),
    );

    // Large data is summarised before it is serialised: the 20 000-character prompt is cut.
    const longest = Math.max(...rx.raw.map((text) => text.length));
    expect(longest).toBeLessThan(20_000);
    expect(rx.raw.join('\n')).toMatch(/… \(\+\d+ chars\)/);
  });

  it('announces a whole swarm: supervisors, agents, subagents and workers, each with its parent', async () => {
    const rx = await receiver();
    const inspector = await openWebSocketInspector({ url: rx.url });
    await rx.connected;
    const local: InspectionEvent[] = [];
    const { supervisor, lead, written } = swarmFixture({
      next: (event) => {
        local.push(event);
        inspector.inspect.next?.(event);
      },
    });
    supervisor.on('approval_requested', (event) => supervisor.approve(event));
    const result = await lead.prompt('LEAD');
    expect(result.text).toContain('plan.md: wrote plan.md');
    expect(written.sort()).toEqual([...FILES].sort());
    await supervisor.stop();
    await inspector.close();
    await rx.closed();
    rx.server.close();

    const frames = rx.raw.map((text) => JSON.parse(text) as Frame);
    const actors = frames.filter((f) => f.type === '@xstate.actor');
    const bySession = new Map(actors.map((f) => [f.sessionId, f]));
    const kind = (f: Frame | undefined) => (JSON.parse(f?.definition ?? '{}') as { id?: string }).id;
    const agentIdOf = (f: Frame) => {
      const snapshots = frames.filter((x) => x.type === '@xstate.snapshot' && x.sessionId === f.sessionId);
      return (snapshots[0]?.snapshot?.context as { agentId?: string } | undefined)?.agentId;
    };
    // Every actor XState created is announced, and only those.
    expect(actors.map((f) => f.sessionId).sort()).toEqual(
      local
        .filter((e) => e.type === '@xstate.actor')
        .map((e) => e.actorRef.sessionId)
        .sort(),
    );
    for (const f of actors) expect(typeof f.definition, f.name).toBe('string');

    const root = actors.find((f) => f.name === 'root');
    expect(kind(root)).toBe('supervisor');
    expect(root?.parentId).toBeUndefined();
    const agents = actors.filter((f) => kind(f) === 'agent');
    const leadFrame = agents.find((f) => agentIdOf(f) === 'lead');
    expect(leadFrame?.parentId).toBe(root?.sessionId);
    const leadSupervisor = actors.find((f) => kind(f) === 'supervisor' && f.parentId === leadFrame?.sessionId);
    expect(leadSupervisor).toBeDefined();
    const subagents = agents.filter((f) => f !== leadFrame);
    expect(subagents).toHaveLength(FILES.length);
    for (const sub of subagents) {
      // subagent → task → pool → pool → batch → the lead's supervisor: each batch and task is an actor of its own.
      const up: Array<string | undefined> = [];
      for (let f = bySession.get(sub.parentId ?? ''); f && f !== leadSupervisor; f = bySession.get(f.parentId ?? '')) {
        up.push(kind(f));
      }
      expect(up).toEqual(['task', 'pool', 'pool', 'batch']);
      expect(sub.name).toMatch(/^subagent\./);
    }
    // Under an agent, only its supervisor (a lead's): its worker is no actor.
    for (const agent of agents) {
      const under = actors.filter((f) => f.parentId === agent.sessionId).map((f) => f.name);
      expect(
        under.every((name) => name?.startsWith('supervisor')),
        `${agent.name}: ${under}`,
      ).toBe(true);
    }
    // Every parent is an announced actor: the tree is whole.
    for (const f of actors) if (f.parentId !== undefined) expect(bySession.has(f.parentId), f.name).toBe(true);

    // Every transition's snapshot, for every actor of the tree.
    for (const { sessionId, name } of actors) {
      const sent = frames
        .filter((f) => f.type === '@xstate.snapshot' && f.sessionId === sessionId)
        .map((f) => JSON.stringify(f.snapshot?.value ?? null));
      const seen = local
        .filter((e) => e.type === '@xstate.snapshot' && e.actorRef.sessionId === sessionId)
        .map((e) => JSON.stringify((e as { snapshot: { value?: unknown } }).snapshot.value ?? null));
      expect(sent, name).toEqual(seen);
    }
    // Each subagent waited for approval, and its APPROVE went to it.
    for (const sub of subagents) {
      const values = frames
        .filter((f) => f.type === '@xstate.snapshot' && f.sessionId === sub.sessionId)
        .map((f) => JSON.stringify(f.snapshot?.value));
      expect(values).toContain(JSON.stringify({ running: { turn: { step: { tools: 'awaitingApproval' } } } }));
      const events = frames.filter((f) => f.type === '@xstate.event' && f.sessionId === sub.sessionId);
      expect(events.map((f) => f.event?.type)).toContain('APPROVE');
    }
    for (const text of rx.raw) expect(text).not.toContain(PLANTED_KEY);
  });
});
