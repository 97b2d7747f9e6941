/** Page commands applied to a live tree: what each one does, and why one is refused. */

import { describe, expect, it } from 'vitest';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { createAgent, scriptedModel } from '../../src/index.js';
import { applyCommand } from '../../src/inspect/control.js';
import type { CommandType, InspectorCommand } from '../../src/inspect/protocol.js';
import { controlFixture } from './swarm.js';

/** The live actors of a run by session id, as the connection keeps them. */
function actorsSeen() {
  const actors = new Map<string, AnyActorRef>();
  const inspect = {
    next(event: InspectionEvent) {
      if (event.type === '@xstate.actor') actors.set(event.actorRef.sessionId, event.actorRef as AnyActorRef);
    },
  };
  const sessionOf = (agentId: string) =>
    [...actors.values()].find(
      (a) => (a.getSnapshot() as { context?: { agentId?: string } }).context?.agentId === agentId,
    )?.sessionId ?? 'none';
  return { actors, inspect, sessionOf };
}

let n = 0;
const command = (type: CommandType, sessionId: string, fields: Partial<InspectorCommand> = {}): InspectorCommand => ({
  type: 'command',
  id: `c${++n}`,
  run: 'r',
  sessionId,
  command: type,
  ...fields,
});

describe('page commands on a live tree', () => {
  it('answers each control with what happened, or why not', async () => {
    const seen = actorsSeen();
    const { supervisor, hold, held, release } = controlFixture(seen.inspect);
    supervisor.agent({ id: 'lead', tools: [hold] });
    const apply = (c: InspectorCommand) => applyCommand(c, seen.actors, supervisor);
    try {
      const leadSession = seen.sessionOf('lead');
      // Idle: there is nothing to interrupt, and a steer starts a turn.
      expect(await apply(command('INTERRUPT', leadSession))).toEqual({
        ok: false,
        error: 'already finished: the agent is idle',
      });
      expect(await apply(command('STEER', leadSession, { text: 'quick steered' }))).toEqual({
        ok: true,
        detail: 'the agent was idle: the message starts a turn',
      });
      expect(await apply(command('STEER', 'x:404', { text: 'hello?' }))).toEqual({ ok: false, error: 'agent gone' });
      expect(await apply(command('STEER', supervisor.actor.sessionId, { text: 'hi' }))).toEqual({
        ok: false,
        error: 'not an agent',
      });
      // Tasks and batches: unknown, finished, running.
      expect(await apply(command('CANCEL_TASK', supervisor.actor.sessionId, { taskId: 'task_none' }))).toEqual({
        ok: false,
        error: 'no such task (it may be too old)',
      });
      const [quick] = await supervisor.swarm(['quick q']);
      expect(await apply(command('CANCEL_TASK', supervisor.actor.sessionId, { taskId: quick?.taskId }))).toEqual({
        ok: false,
        error: 'already finished (completed)',
      });
      expect(await apply(command('CANCEL_BATCH', supervisor.actor.sessionId, { batchId: 'batch_none' }))).toEqual({
        ok: false,
        error: 'already finished: no task of that batch is open',
      });
      const [running] = await supervisor.swarm(['hold r'], { background: true });
      await held('r');
      expect(await apply(command('CANCEL_TASK', supervisor.actor.sessionId, { taskId: running }))).toEqual({
        ok: true,
        detail: 'cancelled',
      });
      expect(supervisor.status(running as string)?.status).toBe('cancelled');
      // Resume: a running agent, an unknown one, a finished one (by its actor, or by id once it is gone).
      const [busy] = await supervisor.swarm(['hold busy'], { background: true });
      await held('busy');
      const busyAgent = supervisor.status(busy as string)?.agentId as string;
      expect(await apply(command('RESUME', seen.sessionOf(busyAgent), { text: 'more' }))).toEqual({
        ok: false,
        error: `Agent ${busyAgent} is still running a task; wait for its result`,
      });
      release('busy');
      expect(await apply(command('RESUME', 'x:404', { text: 'more' }))).toEqual({ ok: false, error: 'agent gone' });
      const unknown = await apply(command('RESUME', 'x:404', { text: 'more', agentId: 'nobody' }));
      expect(unknown).toMatchObject({ ok: false, error: expect.stringMatching(/No finished subagent "nobody"/) });
      const resumed = await apply(command('RESUME', 'x:404', { text: 'again', agentId: quick?.agentId }));
      expect(resumed).toMatchObject({ ok: true, detail: expect.stringMatching(/^resumed as task task_/) });
      await expect.poll(() => supervisor.messagesOf(quick?.agentId as string)?.length).toBe(4);
    } finally {
      await supervisor.stop();
    }
  });

  it('needs the root attached for controls, and a Supervisor for tasks; an Agent root steers itself', async () => {
    const seen = actorsSeen();
    const agent = createAgent({
      id: 'solo',
      model: scriptedModel([{ text: 'steered' }, { text: 'ok' }]),
      inspect: seen.inspect,
    });
    const session = seen.sessionOf('solo');
    try {
      expect(await applyCommand(command('STEER', session, { text: 'hi' }), seen.actors, undefined)).toMatchObject({
        ok: false,
        error: expect.stringMatching(/attach the agent or supervisor/),
      });
      for (const type of ['CANCEL_TASK', 'CANCEL_BATCH', 'RESUME'] as const) {
        const c = command(type, session, { taskId: 't', batchId: 'b', text: 'x' });
        expect(await applyCommand(c, seen.actors, agent), type).toMatchObject({
          ok: false,
          error: expect.stringMatching(/attach a Supervisor/),
        });
      }
      expect(await applyCommand(command('STEER', session, { text: 'first this' }), seen.actors, agent)).toMatchObject({
        ok: true,
      });
      // The steer started a turn; the prompt queues behind it.
      const result = await agent.prompt('go');
      expect(result.text).toBe('ok');
      expect(agent.messages.some((m) => m.role === 'user' && m.source === 'steer')).toBe(true);
      // A subagent handle it does not have: gone.
      const stranger = createAgent({ id: 'other', model: scriptedModel([{ text: 'x' }]), inspect: seen.inspect });
      expect(await applyCommand(command('INTERRUPT', seen.sessionOf('other')), seen.actors, agent)).toEqual({
        ok: false,
        error: 'agent gone',
      });
      await stranger.stop();
    } finally {
      await agent.stop();
    }
  });
});
