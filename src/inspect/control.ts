import type { AnyActorRef } from 'xstate';
import type { AgentEventOf } from '../protocol/index.js';
import type { InspectorCommand } from './protocol.js';

/**
 * An agent handle as the page drives it: Troupe's `Agent`, or a handle that forwards to where the agent really runs
 * (an agent hosted on Restate: `troupe/restate`'s `hostedInspectorRoot`), whose promise says whether it was accepted.
 */
export interface SteerableAgent {
  /** Sends the agent a message while it works (the page's steer box). */
  steer(input: string): unknown;
  /** Stops the agent's running turn (the page's stop button). */
  interrupt(): unknown;
}

/**
 * What the page's commands go through, attached with `connection.attach(root)`: a `Supervisor` (every control),
 * an `Agent` (approvals, steer and interrupt across its tree), or `hostedInspectorRoot` for agents hosted on
 * Restate. Structural, so that the inspector needs nothing of the runtime but its public methods. An answer of
 * `false` (or a promise of it) means no call was waiting; a rejected promise, that the command did not get through.
 */
export interface InspectorRoot {
  readonly id?: string;
  /** Lets a tool call waiting for approval run. */
  approve(call: { agentId: string; toolCallId: string }): unknown;
  /** Refuses a tool call waiting for approval, with the reason the model sees. */
  deny(call: { agentId: string; toolCallId: string }, reason?: string): unknown;
  /** Supervisor: a handle on a live agent of the tree. */
  get?(agentId: string): SteerableAgent | undefined;
  /** Agent: a handle on a live subagent of its tree. */
  subagent?(agentId: string): SteerableAgent | undefined;
  /** Agent: sends it a message while it works. */
  steer?(input: string): void;
  /** Agent: stops its running turn. */
  interrupt?(): void;
  /** Supervisor: where a task of the tree stands. */
  status?(taskId: string): { status: string } | undefined;
  /** Supervisor: cancels a task of the tree; false when none was open. */
  cancel?(taskId: string): boolean;
  /** Supervisor: cancels every open task of a swarm batch; false when none was open. */
  cancelBatch?(batchId: string): boolean;
  /** Supervisor: gives a finished agent of the tree a follow-up in the background, resolving with the task id. */
  resume?(agentId: string, prompt: string, options: { background: true }): Promise<string>;
  /** The tree's events (a supervisor hears its whole tree; an agent is asked for its subtree): tools' labels. */
  on?<T extends 'approval_requested' | 'tool_execution_start'>(
    type: T,
    listener: (event: AgentEventOf<T>) => void,
    options: { subtree: true },
  ): () => void;
}

/** How a command ended: applied (with what happened), or refused with the reason. */
export interface Outcome {
  ok: boolean;
  error?: string;
  detail?: string;
}

interface AgentSnapshot {
  status?: string;
  value?: unknown;
  context?: { agentId?: unknown; calls?: unknown };
}

const applied = (detail?: string): Outcome => (detail === undefined ? { ok: true } : { ok: true, detail });
const refused = (error: string): Outcome => ({ ok: false, error });
const NEEDS_ROOT = 'attach the agent or supervisor to the connection (connection.attach) to control it from the page';
const NEEDS_SUPERVISOR = 'attach a Supervisor to the connection to cancel and resume tasks from the page';

/**
 * Applies one page command to a run. `actors` are the run's live actors by session id, as the inspection stream
 * announced them (stopped ones are gone); `root` is what `attach()` was given.
 */
export async function applyCommand(
  command: InspectorCommand,
  actors: ReadonlyMap<string, AnyActorRef>,
  root: InspectorRoot | undefined,
): Promise<Outcome> {
  switch (command.command) {
    case 'APPROVE':
    case 'DENY':
      return delivered(() => answer(command, actors, root));
    case 'STEER':
    case 'INTERRUPT':
      return delivered(() => drive(command, actors, root));
    case 'CANCEL_TASK': {
      const taskId = command.taskId as string;
      if (!root?.cancel || !root.status) return refused(NEEDS_SUPERVISOR);
      const status = root.status(taskId)?.status;
      if (status === undefined) return refused('no such task (it may be too old)');
      if (status !== 'running') return refused(`already finished (${status})`);
      return root.cancel(taskId) ? applied('cancelled') : refused('already finished');
    }
    case 'CANCEL_BATCH':
      if (!root?.cancelBatch) return refused(NEEDS_SUPERVISOR);
      return root.cancelBatch(command.batchId as string)
        ? applied('its open tasks are cancelled')
        : refused('already finished: no task of that batch is open');
    case 'RESUME': {
      if (!root?.resume) return refused(NEEDS_SUPERVISOR);
      const agentId = agentIdOf(actors.get(command.sessionId)) ?? command.agentId;
      if (agentId === undefined) return refused('agent gone');
      try {
        const taskId = await root.resume(agentId, command.text as string, { background: true });
        return applied(`resumed as task ${taskId}`);
      } catch (error) {
        return refused(error instanceof Error ? error.message : String(error));
      }
    }
  }
}

/** A command whose root forwards it elsewhere (over HTTP, to a hosted agent) may fail to get there: say why. */
async function delivered(apply: () => Promise<Outcome>): Promise<Outcome> {
  try {
    return await apply();
  } catch (error) {
    return refused(`not delivered: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function agentIdOf(actor: AnyActorRef | undefined): string | undefined {
  const agentId = (actor?.getSnapshot() as AgentSnapshot | undefined)?.context?.agentId;
  return typeof agentId === 'string' ? agentId : undefined;
}

/** A live agent actor of the run, or why not. */
function liveAgent(
  command: InspectorCommand,
  actors: ReadonlyMap<string, AnyActorRef>,
): { snapshot: AgentSnapshot; agentId: string } | string {
  const actor = actors.get(command.sessionId);
  if (!actor) return 'agent gone';
  const snapshot = actor.getSnapshot() as AgentSnapshot;
  const agentId = snapshot.context?.agentId;
  if (snapshot.status !== 'active') return 'agent gone';
  if (!Array.isArray(snapshot.context?.calls) || typeof agentId !== 'string') return 'not an agent';
  return { snapshot, agentId };
}

async function answer(
  command: InspectorCommand,
  actors: ReadonlyMap<string, AnyActorRef>,
  root: InspectorRoot | undefined,
): Promise<Outcome> {
  const actor = actors.get(command.sessionId);
  if (!actor) return refused('no such actor in this run');
  const agent = liveAgent(command, actors);
  if (typeof agent === 'string') return refused(agent);
  const toolCallId = command.toolCallId as string;
  const calls = agent.snapshot.context?.calls as Array<{ call?: { id?: string }; status?: string }>;
  if (!calls.some((c) => c.call?.id === toolCallId && c.status === 'awaiting')) {
    return refused('that call is not awaiting approval');
  }
  const call = { agentId: agent.agentId, toolCallId };
  if (root) {
    const answered = await (command.command === 'APPROVE' ? root.approve(call) : root.deny(call, command.reason));
    return answered === false ? refused('that call is not awaiting approval') : applied();
  }
  // Without an attached root, the event goes straight to the agent: the same event its own approve() sends.
  if (command.command === 'APPROVE') actor.send({ type: 'APPROVE', toolCallId });
  else actor.send({ type: 'DENY', toolCallId, ...(command.reason === undefined ? {} : { reason: command.reason }) });
  return applied();
}

async function drive(
  command: InspectorCommand,
  actors: ReadonlyMap<string, AnyActorRef>,
  root: InspectorRoot | undefined,
): Promise<Outcome> {
  const agent = liveAgent(command, actors);
  if (typeof agent === 'string') return refused(agent);
  if (!root) return refused(NEEDS_ROOT);
  const handle: SteerableAgent | undefined =
    root.get?.(agent.agentId) ?? (root.id === agent.agentId ? toHandle(root) : root.subagent?.(agent.agentId));
  if (!handle) return refused('agent gone');
  const idle = agent.snapshot.value === 'idle';
  if (command.command === 'INTERRUPT') {
    if (idle) return refused('already finished: the agent is idle');
    await handle.interrupt();
    return applied('interrupted');
  }
  await handle.steer(command.text as string);
  // Agent.steer() starts a turn on an idle agent, so that steers keep the order they were sent in.
  return applied(idle ? 'the agent was idle: the message starts a turn' : 'joins at the next step boundary');
}

function toHandle(root: InspectorRoot): SteerableAgent | undefined {
  const { steer, interrupt } = root;
  if (!steer || !interrupt) return undefined;
  return { steer: (input) => steer.call(root, input), interrupt: () => interrupt.call(root) };
}
