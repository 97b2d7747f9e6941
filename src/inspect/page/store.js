// What the page knows about the runs it watches, rebuilt from the server's messages: actors with their machines,
// snapshots and event logs, the transitions each macrostep took, answered approvals and answered commands.

import { short } from './dom.js';

export const actors = new Map(); // `${run}/${sessionId}` -> actor
export const runs = new Map(); // run -> connected
/** Approvals answered, newest last: what was asked, the answer, and the command that gave it (if a page did). */
export const answered = [];
/** Commands answered by a program, newest last (acks with their command). */
export const acks = [];
/** `showPlumbing`: the tree shows supervisors, batches and pools too (off: agents and tasks). */
export const view = { selectedKey: null, seq: 0, showPlumbing: false };
/** Commands this page sent, by id, until answered. */
export const sent = new Map();

export const keyOf = (run, sessionId) => `${run}/${sessionId}`;

function ensureActor(run, sessionId) {
  const key = keyOf(run, sessionId);
  let actor = actors.get(key);
  if (!actor) {
    actor = {
      key,
      run,
      sessionId,
      name: sessionId,
      parentKey: null,
      definitionText: null,
      machine: null,
      snapshot: { status: 'active' },
      log: [],
      usage: null,
      cost: null,
      /** Transitions of the macrostep in progress, then of the last one that changed anything. */
      pendingTaken: [],
      taken: [],
      /** Supervisors: every task seen, by id, with where it stands. */
      tasks: new Map(),
      batches: new Map(),
      order: actors.size,
    };
    actors.set(key, actor);
  }
  return actor;
}

export const contextOf = (actor) => actor?.snapshot?.context ?? {};

export function isAgent(actor) {
  return actor.machine?.id === 'agent' || Array.isArray(contextOf(actor).calls);
}

export function isSupervisor(actor) {
  return actor.machine?.id === 'supervisor';
}

export const parentOf = (actor) => (actor.parentKey ? actors.get(actor.parentKey) : undefined);

/** Agents by their agent id (their actor id is `subagent.<id>` under a supervisor); a nested supervisor by owner. */
export function labelOf(actor) {
  const context = contextOf(actor);
  if (isAgent(actor) && typeof context.agentId === 'string') return context.agentId;
  // A task actor's id is its slot (`task.3`); its task id says which task it runs.
  if (kindOf(actor) === 'task' && typeof context.task?.taskId === 'string') return context.task.taskId;
  if (isSupervisor(actor) && typeof context.ownerId === 'string' && context.ownerId !== actor.name) {
    return `supervisor of ${context.ownerId}`;
  }
  return actor.name;
}

/** What the page calls a tool call: its tool's label where the program reported one, else the tool's name. */
export const callLabel = (actor, call) => actor?.toolLabels?.get(call?.id) ?? call?.name ?? '?';
export const kindOf = (actor) => actor.machine?.id ?? 'actor';
export const statusOf = (actor) => actor.snapshot?.status ?? 'active';

/** `running.turn.step.tools.executing`; parallel regions joined by commas. */
export function statePath(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, sub]) => {
      const rest = statePath(sub);
      return rest ? `${key}.${rest}` : key;
    })
    .join(', ');
}

/** The innermost state of each region: `executing`. */
export function leafState(value) {
  return statePath(value)
    .split(', ')
    .map((path) => path.split('.').pop())
    .join(', ');
}

export function activePaths(value, prefix = [], out = new Set()) {
  if (value === undefined || value === null) return out;
  if (typeof value === 'string') {
    out.add([...prefix, value].join('.'));
    return out;
  }
  for (const [key, sub] of Object.entries(value)) {
    const path = [...prefix, key];
    out.add(path.join('.'));
    activePaths(sub, path, out);
  }
  return out;
}

function textOfMessage(message) {
  if (!message || !Array.isArray(message.content)) return '';
  return message.content
    .map((part) => (part?.type === 'text' ? part.text : part?.type === 'tool_call' ? `${part.name}()` : ''))
    .filter(Boolean)
    .join(' ');
}

function detailOf(event) {
  switch (event.type) {
    case 'PROMPT':
      return short(textOfMessage(event.input?.messages?.[0]));
    case 'STEER':
      return short(textOfMessage(event.message));
    case 'NOTIFY':
      return short((event.messages ?? []).map(textOfMessage).join(' | '));
    case 'MODEL_DONE': {
      // Its calls come validated by the worker: those that failed are named.
      const invalid = (event.validated?.outcomes ?? []).filter((o) => o.error).map((o) => `${o.toolCallId}:invalid`);
      return short([event.message?.stopReason ?? '', textOfMessage(event.message), ...invalid].join(' '));
    }
    case 'MODEL_ERROR':
      return short(event.error?.message ?? '');
    case 'AUTHORIZED':
      return short((event.decisions ?? []).map((d) => `${d.toolCallId}:${d.decision}`).join(' '));
    case 'VALIDATED':
      return short((event.outcomes ?? []).map((o) => `${o.toolCallId}:${o.error ? 'invalid' : 'ok'}`).join(' '));
    case 'TOOL_RESULTS':
      return short((event.results ?? []).map((r) => `${r.toolCallId}${r.result?.isError ? ' (error)' : ''}`).join(' '));
    case 'APPROVE':
      return event.toolCallId ?? '';
    case 'DENY':
      return `${event.toolCallId ?? ''}${event.reason ? `: ${short(event.reason, 80)}` : ''}`;
    case 'CANCEL':
      return event.taskId ?? '';
    default: {
      const { type: _type, ...rest } = event;
      return Object.keys(rest).length ? short(rest, 80) : '';
    }
  }
}

function addUsage(actor, message, cost) {
  const usage = message.usage;
  actor.usage ??= { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  for (const field of Object.keys(actor.usage)) {
    if (typeof usage[field] === 'number') actor.usage[field] += usage[field];
  }
  // The model worker prices each answer where it knows the model's prices (the context's model table).
  if (typeof cost === 'number') actor.cost = (actor.cost ?? 0) + cost;
}

/** An APPROVE / DENY that answered a waiting call: kept for the history, with the call it answered. */
function recordAnswer(actor, event, createdAt) {
  const call = (contextOf(actor).calls ?? []).find((c) => c.call?.id === event.toolCallId && c.status === 'awaiting');
  if (!call) return;
  answered.push({
    n: view.seq,
    run: actor.run,
    sessionId: actor.sessionId,
    agent: labelOf(actor),
    toolCallId: event.toolCallId,
    tool: callLabel(actor, call.call),
    args: call.call?.arguments ?? {},
    decision: event.type === 'APPROVE' ? 'approved' : 'denied',
    reason: event.reason,
    at: createdAt,
  });
  if (answered.length > 50) answered.shift();
}

/** The supervisor a batch, pool or task actor works for: the nearest supervisor above it. */
function supervisorAbove(actor) {
  let up = parentOf(actor);
  while (up && !isSupervisor(up)) up = parentOf(up);
  return up;
}

/**
 * Where each task of a supervisor stands, from its batch and task actors (supervisor → batch → pool → pool → task →
 * agent): queued or cancelled from the batch's context, running, restarting or settled from the task's state.
 */
function trackBatch(actor) {
  const supervisor = supervisorAbove(actor);
  const context = contextOf(actor);
  if (!supervisor || typeof context.batchId !== 'string') return;
  const value = actor.snapshot?.value;
  const queue = context.tasks ?? [];
  // A settled batch empties its queue (its specs are spent): the page keeps the task ids it saw.
  const known = supervisor.batches.get(context.batchId)?.taskIds ?? [];
  supervisor.batches.set(context.batchId, {
    batchId: context.batchId,
    background: Boolean(context.background),
    concurrency: context.concurrency,
    taskIds: queue.length > 0 ? queue.map((t) => t.taskId) : known,
    open: statusOf(actor) === 'active' && (value === 'running' || value === 'joined' || value === 'cancelled'),
    // A failure the batch escalated: which task, and why (its class, or the intensity).
    ...(context.escalation
      ? { escalation: { taskId: context.escalation.taskId, because: context.escalation.because } }
      : {}),
  });
  for (const [index, task] of queue.entries()) {
    const known = supervisor.tasks.get(task.taskId);
    const fields = { taskId: task.taskId, agentId: task.agentId, batchId: context.batchId };
    if ((context.cancelled ?? []).includes(task.taskId)) {
      supervisor.tasks.set(task.taskId, { ...fields, state: 'cancelled' });
    } else if (index >= (context.next ?? 0)) {
      const dropped = value !== 'running';
      supervisor.tasks.set(task.taskId, { ...fields, state: dropped ? 'settled' : 'queued' });
    } else if (!known) supervisor.tasks.set(task.taskId, { ...fields, state: 'running' });
  }
}

function trackTask(actor) {
  const supervisor = supervisorAbove(actor);
  const context = contextOf(actor);
  const task = context.task;
  if (!supervisor || typeof task?.taskId !== 'string') return;
  const value = actor.snapshot?.value;
  // `failed`: a run failed and the task waits for its batch's verdict (restart, resume or give up).
  const state =
    value === 'running' || value === 'failed'
      ? value
      : value === 'restarting'
        ? `restarting (${context.attempt})`
        : 'settled';
  const entry = { taskId: task.taskId, agentId: task.agentId, batchId: context.batchId, state };
  if (state === 'settled' && context.result) entry.outcome = context.result.status;
  // The sibling whose failure restarted it, under its batch's strategy (oneForAll, restForOne).
  if (value === 'restarting' && typeof context.cause === 'string') entry.restartedBy = context.cause;
  supervisor.tasks.set(task.taskId, entry);
}

/** The task an agent runs for its supervisor, if any (the last one it was given). */
export function taskOf(agent) {
  const supervisor = supervisorAbove(agent);
  if (!supervisor) return undefined;
  const agentId = contextOf(agent).agentId;
  let found;
  for (const task of supervisor.tasks.values()) if (task.agentId === agentId) found = task;
  return found && { ...found, supervisor };
}

export function onFrame(run, frame) {
  if (!frame || typeof frame.sessionId !== 'string') return;
  const actor = ensureActor(run, frame.sessionId);
  switch (frame.type) {
    case '@xstate.actor':
      actor.name = frame.name ?? frame.sessionId;
      actor.parentKey = frame.parentId ? keyOf(run, frame.parentId) : null;
      if (typeof frame.definition === 'string') {
        actor.definitionText = frame.definition;
        try {
          actor.machine = JSON.parse(frame.definition);
        } catch {
          actor.machine = null;
        }
      }
      if (frame.snapshot) actor.snapshot = frame.snapshot;
      if (view.selectedKey === null && isAgent(actor)) view.selectedKey = actor.key;
      break;
    case '@xstate.event': {
      const event = frame.event ?? {};
      const context = contextOf(actor);
      view.seq++;
      actor.log.push({
        n: view.seq,
        type: event.type,
        turn: event.turn ?? context.turn,
        step: event.step ?? context.step,
        source: frame.sourceId ? (actors.get(keyOf(run, frame.sourceId))?.name ?? frame.sourceId) : null,
        detail: detailOf(event),
      });
      if (actor.log.length > 500) actor.log.shift();
      if (event.type === 'MODEL_DONE' && event.message?.usage) addUsage(actor, event.message, event.cost);
      // The turn's budget as the runtime reports it with each answer, and the stop when one ran out.
      if (event.type === 'MODEL_DONE' && event.budget) actor.budget = event.budget;
      if (event.type === 'BUDGET_EXHAUSTED' && actor.budget) actor.budget = { ...actor.budget, exhausted: event.error };
      if ((event.type === 'APPROVE' || event.type === 'DENY') && isAgent(actor)) {
        recordAnswer(actor, event, frame.createdAt);
      }
      break;
    }
    case '@troupe.label':
      // A labelled tool's call (the label lives in the tool, so the program reports it beside the snapshots).
      if (typeof frame.toolCallId === 'string' && typeof frame.label === 'string') {
        actor.toolLabels ??= new Map();
        actor.toolLabels.set(frame.toolCallId, frame.label);
      }
      break;
    case '@troupe.transitions':
      if (Array.isArray(frame.transitions)) actor.pendingTaken.push(...frame.transitions);
      break;
    case '@xstate.snapshot':
      actor.snapshot = frame.snapshot ?? actor.snapshot;
      // The transitions of the macrostep that made this snapshot; one that took none keeps the last marked.
      if (actor.pendingTaken.length) {
        actor.taken = actor.pendingTaken;
        actor.pendingTaken = [];
      }
      if (kindOf(actor) === 'batch') trackBatch(actor);
      if (kindOf(actor) === 'task') trackTask(actor);
      break;
  }
}

/** A command answered by a program: in the log of the actor it addressed, and in the list of acks. */
function onAck(message) {
  // The server refuses a command for a run that is not connected without a copy of it: this page sent it.
  const own = sent.get(message.id);
  if (own && (!message.command || message.mine)) {
    sent.delete(message.id);
    message.command ??= own;
    message.mine = true;
  }
  const command = message.command;
  acks.push(message);
  if (acks.length > 200) acks.shift();
  if (!command) return;
  const actor = actors.get(keyOf(message.run, command.sessionId));
  if (!actor) return;
  view.seq++;
  const what = command.text
    ? `“${short(command.text, 60)}”`
    : (command.toolCallId ?? command.taskId ?? command.batchId);
  actor.log.push({
    n: view.seq,
    type: `⇢ ${command.command}`,
    command: true,
    ok: message.ok,
    source: message.mine ? 'this page' : 'an inspector page',
    detail: `${what ?? ''} — ${message.ok ? `applied${message.detail ? `: ${message.detail}` : ''}` : `refused: ${message.error}`}`,
  });
}

export function onMessage(message) {
  switch (message.type) {
    case 'hello':
      for (const r of message.runs) runs.set(r.run, r.connected);
      break;
    case 'run':
      runs.set(message.run, message.connected);
      break;
    case 'frame':
      onFrame(message.run, message.frame);
      break;
    case 'ack':
      onAck(message);
      break;
  }
}

/** Who answered an approval: a page's command that did it, else the program itself. */
export function answeredBy(entry) {
  const ack = acks.find(
    (a) =>
      a.ok &&
      a.run === entry.run &&
      a.command?.sessionId === entry.sessionId &&
      a.command?.toolCallId === entry.toolCallId &&
      a.command?.command === (entry.decision === 'approved' ? 'APPROVE' : 'DENY'),
  );
  if (!ack) return 'the program';
  return ack.mine ? 'you, on this page' : 'an inspector page';
}

/** How a command this page sent stands: sent, applied or refused, in words. */
export function outcomeOf(id) {
  const ack = acks.find((a) => a.mine && a.id === id);
  if (!ack) return { state: 'sent', text: 'Sent; waiting for the program…' };
  const what = ack.command?.command ?? '';
  return ack.ok
    ? { state: 'applied', text: `${what} applied${ack.detail ? `: ${ack.detail}` : ''}.` }
    : { state: 'refused', text: `${what} refused: ${ack.error}.` };
}

/** Shows `outcomeOf(id)` in a line of the page. */
export function showOutcome(line, id) {
  if (!line) return;
  if (id === null || id === undefined) {
    line.textContent = '';
    line.dataset.state = '';
    return;
  }
  const { state, text } = outcomeOf(id);
  line.className = `outcome ${state}`;
  line.dataset.state = state;
  line.textContent = text;
}
