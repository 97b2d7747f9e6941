import type { AnyActorRef } from 'xstate';
import type { TurnInput } from '../../../machines/agent/index.js';
import { type AgentEventBody, addUsage, emptyUsage, type TaskStatus, type Usage } from '../../protocol/index.js';
import type { BatchRecord, JournalRecord, TaskRecord } from '../../session/index.js';
import type { AgentEnv } from '../env/env.js';
import type { RecordSink } from './record-sink.js';
import type { AgentJournal } from './restore.js';

/*
 * A replay of a session (`SessionManager.replay`, `troupe replay`): its records are kept in memory to be compared
 * with the original's, and the original's inputs are fed to the agent at the places they arrived.
 */

/** Records that are not one agent's own facts: a replay does not make them again. */
const NOT_AGENTS = new Set<JournalRecord['k']>(['session', 'schedule', 'batch', 'task', 'verdict', 'notice']);

/** The agent a record is one of the own facts of, or undefined for a record of the tree's (`NOT_AGENTS`). */
export function agentOf(record: JournalRecord): string | undefined {
  return NOT_AGENTS.has(record.k) || !('a' in record) ? undefined : record.a;
}

/**
 * Each agent's own records, agent by agent, without their sequence numbers and times, which a replay gives anew.
 * Batches, tasks, verdicts and notices are the tree's and schedule facts the timers' (a replay runs none): each agent replays
 * alone, so those are not reproduced.
 */
export function ownRecords(records: readonly JournalRecord[]): Map<string, JournalRecord[]> {
  const byAgent = new Map<string, JournalRecord[]>();
  for (const record of records) {
    const agent = agentOf(record);
    if (agent === undefined) continue;
    const { s: _s, t: _t, ...rest } = record as JournalRecord & { s?: number; t?: number };
    byAgent.set(agent, [...(byAgent.get(agent) ?? []), rest as JournalRecord]);
  }
  return byAgent;
}

/** JSON with object keys in order, so that a journal read back and a replay's record compare alike. */
export function sortedJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) =>
      v === null || typeof v !== 'object' || Array.isArray(v)
        ? v
        : Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    ) ?? 'nothing'
  );
}

/** The records of a replay, kept in memory. */
export class ReplaySink implements RecordSink {
  readonly records: JournalRecord[] = [];
  /** Records other than inputs and drops, which is what the original's input positions count. */
  produced = 0;
  onRecord?: () => void;
  /** Publishes the tree's facts due at this point of the agent's replay (`all`: every one left). */
  onHeard?: (all?: boolean) => void;

  add(record: JournalRecord): void {
    this.records.push(record);
    if (record.k === 'input' || record.k === 'dropped') return;
    this.produced++;
    this.onRecord?.();
    // A record that no event made (a snapshot): the facts after it come now, not after the agent's next event.
    if (!('s' in record)) this.onHeard?.();
  }

  /**
   * The replay heard one of the agent's events, after the journal's listener had recorded it: the tree's facts that
   * followed that record in the original are published now, so they come right after that event, as they did.
   */
  heard(): void {
    this.onHeard?.();
  }

  /** The agent's replay is over: facts journaled after its last record are published. */
  finish(): void {
    this.onHeard?.(true);
  }
}

/**
 * A replay submits each input when the replay has produced as many records as preceded it in the original, so a
 * prompt queued behind a running turn is queued again, and one sent to an idle agent starts a run again; a drop
 * (`drop`) comes at its place too, so the input is dropped from the queue again. `submit` journals the input and
 * prompts the agent. The tree's facts about the agent as an owner (its subagents' starts,
 * restarts and ends, its background results reaching it) are published again at the place their records hold,
 * right after the event that made the agent's record before them (see ReplaySink.heard): its subagents replay on
 * their own.
 */
export function feedInputs(
  original: readonly JournalRecord[],
  agentId: string,
  sink: ReplaySink,
  submit: (input: TurnInput) => void,
  drop: (inputId: string) => void,
  publish: (body: AgentEventBody) => void,
): Promise<void> {
  // An input, or the drop of one (its caller withdrew it while it was queued), at its place.
  const due: Array<{ after: number; input: TurnInput } | { after: number; drop: string }> = [];
  const facts: Array<{ after: number; body: AgentEventBody }> = [];
  const tree = new TreeFacts();
  let before = 0;
  // Results that settled together (no other record between their settles) reach their owner together, after
  // their ends: the outbox delivers them at once, a microtask or a macrotask later (see NotificationOutbox).
  let delivered: Array<{ after: number; body: AgentEventBody }> = [];
  for (const record of original) {
    tree.take(record);
    if (record.k === 'task' && record.a === agentId) {
      for (const body of tree.eventsOf(record)) {
        (body.type === 'notification' ? delivered : facts).push({ after: before, body });
      }
      continue;
    }
    facts.push(...delivered);
    delivered = [];
    // Schedule facts are the timers' (a replay runs none) and batches, tasks and notices the tree's (each agent
    // replays alone), not the agent's: they hold no input's place.
    if (agentOf(record) !== agentId) continue;
    if (record.k === 'input') {
      due.push({
        after: before,
        input: { inputId: record.inputId, messages: record.messages, expectsOutput: record.expectsOutput },
      });
    } else if (record.k === 'dropped') due.push({ after: before, drop: record.inputId });
    else before++;
  }
  facts.push(...delivered);
  const feed = () => {
    while (due.length > 0 && (due[0]?.after ?? 0) <= sink.produced) {
      const next = due.shift();
      if (next && 'drop' in next) drop(next.drop);
      else if (next) submit(next.input);
    }
  };
  let publishing = false;
  sink.onHeard = (all = false) => {
    // A fact published here is heard too: the facts due are published once, in journal order.
    if (publishing) return;
    publishing = true;
    try {
      while (facts.length > 0 && (all || (facts[0]?.after ?? 0) <= sink.produced)) {
        const next = facts.shift();
        if (next) publish(next.body);
      }
    } finally {
      publishing = false;
    }
  };
  sink.onRecord = () => queueMicrotask(feed);
  return new Promise((resolve) =>
    setImmediate(() => {
      sink.onHeard?.();
      feed();
      resolve();
    }),
  );
}

/**
 * The events a tree's owner that is no agent (a supervisor) published about its tasks, in journal order: its
 * replay is these alone.
 */
export function ownerFacts(original: readonly JournalRecord[], ownerId: string): AgentEventBody[] {
  const tree = new TreeFacts();
  const bodies: AgentEventBody[] = [];
  for (const record of original) {
    tree.take(record);
    if (record.k === 'task' && record.a === ownerId) bodies.push(...tree.eventsOf(record));
  }
  return bodies;
}

/** What the tree published about an owner's tasks, read back from their records. */
class TreeFacts {
  private readonly batches = new Map<string, BatchRecord>();
  /** Each agent's tokens so far, as its journaled answers say: a subagent's end reports them. */
  private readonly usage = new Map<string, Usage>();

  take(record: JournalRecord): void {
    if (record.k === 'batch') for (const task of record.tasks) this.batches.set(task.taskId, record);
    else if (record.k === 'msg' && 'role' in record.m && record.m.role === 'assistant') {
      const usage = this.usage.get(record.a) ?? emptyUsage();
      addUsage(usage, record.m.usage);
      this.usage.set(record.a, usage);
    }
  }

  eventsOf(record: TaskRecord): AgentEventBody[] {
    const batch = this.batches.get(record.taskId);
    const task = batch?.tasks.find((t) => t.taskId === record.taskId);
    if (!batch || !task) return [];
    const ids = { taskId: record.taskId, childId: record.agentId, batchId: batch.batchId };
    if (record.ev === 'started') {
      const attempt = record.attempt ?? 0;
      return [
        {
          type: 'subagent_start',
          ...ids,
          profile: task.profile,
          background: batch.background,
          ...(attempt > 0 ? { attempt } : {}),
        },
      ];
    }
    const status = (record.status ?? 'completed') as TaskStatus;
    const usage = { ...(this.usage.get(record.agentId) ?? emptyUsage()) };
    const end: AgentEventBody = {
      type: 'subagent_end',
      ...ids,
      status,
      usage,
      ...(record.error ? { error: record.error } : {}),
    };
    return batch.background ? [end, { type: 'notification', ...ids, status, text: record.text ?? '' }] : [end];
  }
}

/**
 * A turn the journal holds that no `input` record opened (a subagent's task, notifications waking an idle agent) is
 * opened again when the replay goes idle where the journal opened it: the same messages, under the same input id.
 * Returns the way to stop watching.
 */
export function openTurnsAtIdle(journal: AgentJournal, env: AgentEnv, actor: AnyActorRef): () => void {
  let openedAt = -1;
  const check = (snapshot: { matches(state: string): boolean; context: { queue: readonly unknown[] } }) => {
    if (!snapshot.matches('idle') || snapshot.context.queue.length > 0) return;
    const at = env.transcript.length;
    const turn = journal.turnOpenedAt(at);
    if (!turn || openedAt === at) return;
    openedAt = at;
    const { inputId, messages } = turn;
    // After the transition that made it idle.
    queueMicrotask(() =>
      actor.send(
        inputId.startsWith('notify.')
          ? { type: 'NOTIFY', messages, inputId }
          : { type: 'PROMPT', input: { inputId, messages, expectsOutput: false } },
      ),
    );
  };
  const subscription = actor.subscribe({ next: check, error: () => {} });
  check(actor.getSnapshot());
  return () => subscription.unsubscribe();
}
