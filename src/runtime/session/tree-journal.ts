// Over 400 lines: the journal of a tree writes every fact of its subagents and, on a restore, gives the tree back
// what had not settled; both read the same batches and tasks.
import type { AnyActorRef } from 'xstate';
import type { AgentContext } from '../../../machines/agent/index.js';
import type { Escalation } from '../../../machines/supervisor/index.js';
import {
  escalatedText,
  type FailureClass,
  JOINED_TEXT,
  type JoinPolicy,
  joinDecided,
  notificationMessage,
  notifiedTaskIds,
  type SerializedError,
  type UserMessage,
} from '../../protocol/index.js';
import type {
  BatchRecord,
  BatchTask,
  JournalRecord,
  TaskRecord as TaskFact,
  VerdictRecord,
} from '../../session/index.js';
import type { SpendLedger } from '../budget/ledger.js';
import type { AgentEnv } from '../env/env.js';
import { type Journaling, unrecorded } from '../env/recording.js';
import type { BatchOptions } from '../tree/batch-plan.js';
import type { Owner } from '../tree/nodes.js';
import type { OpenedBatch, StartedBatch, TreeObserver } from '../tree/observer.js';
import type { TaskResult } from '../tree/subagent-tools.js';
import type { TaskRecord } from '../tree/tasks.js';
import type { Tree } from '../tree/tree.js';
import type { VerdictFact } from '../tree/verdicts.js';
import { AgentHistories } from './agent-histories.js';
import { BatchStanding } from './batch-standing.js';
import { finishedAgents } from './finished-agents.js';
import { JournalLink } from './link.js';
import { knowsMember, recordMember, replayInputs, replayMember } from './member-replay.js';
import { copyJournaled, nothingJournaled, type RecordSink } from './record-sink.js';
import { SessionRecorder } from './recorder.js';
import { AgentJournal, markReplayed } from './restore.js';
import { SubagentReplay } from './subagent-replay.js';

/**
 * The journal of a supervision tree's subagents: batches as they open, each task's attempts and its settle (with
 * its result), each background result's delivery to its owner, and every subagent's own facts (a recorder per
 * agent). On a restore it gives the tree back what had not settled: a tool call that runs again gets its tasks
 * back, an unsettled task's agent replays its journal (recorded answers and results, then live), the root's
 * background tasks start again, and notifications that fell due but never reached the root are sent again.
 */
export class TreeJournal implements TreeObserver {
  private readonly recorders = new Map<string, SessionRecorder>();
  private readonly batches = new Map<string, BatchRecord>();
  private readonly byCall = new Map<string, string>();
  private readonly settled = new Map<string, TaskFact>();
  private readonly started = new Set<string>();
  private readonly delivered = new Set<string>();
  private readonly reattached = new Map<string, StartedBatch>();
  /** Agents whose task had not settled at the restore: they replay their journal once. */
  private readonly toReplay = new Map<string, AgentJournal>();
  /** Those replaying now, as owners of background subagents of their own. */
  private readonly replays = new Map<string, SubagentReplay>();
  private readonly offs: Array<() => void> = [];
  /** Where the journaled batches' supervision stood: restarts, attempts, escalations. */
  private readonly standing: BatchStanding;
  /** The histories its task agents' runs start from. */
  private readonly histories: AgentHistories;
  /** What the tree's restored accounts had spent before the restart (set by the session on resume). */
  ledger?: SpendLedger;

  constructor(
    private readonly tree: Tree,
    private readonly sink: RecordSink,
    private readonly rootId: string,
    private readonly records: readonly JournalRecord[],
    /** A journaled approval given again: the "allow always" it carried applies from then on. */
    private readonly approvedAgain: (toolCallId: string) => void = () => {},
    /** The session's folder: each subagent's oversized tool results are saved under it. */
    private readonly dir?: string,
  ) {
    this.standing = new BatchStanding(records);
    this.histories = new AgentHistories(records, (taskId, attempt) => this.standing.resumed(taskId, attempt));
    for (const record of records) {
      if (record.k === 'batch') {
        this.batches.set(record.batchId, record);
        if (record.call !== undefined) this.byCall.set(`${record.a}/${record.call}`, record.batchId);
      } else if (record.k === 'task') {
        if (record.ev === 'settled') this.settled.set(record.taskId, record);
        else this.started.add(`${record.taskId}/${record.attempt ?? 0}`);
      } else if (record.k === 'notice') this.delivered.add(record.taskId);
    }
    for (const batch of this.batches.values()) {
      for (const task of batch.tasks) {
        if (this.settled.has(task.taskId)) continue;
        this.toReplay.set(task.agentId, this.journalOf(task.agentId));
        this.open++;
      }
    }
    this.grouping();
    tree.book.restoreFinished(finishedAgents(records, this.histories));
    const { bus } = tree;
    this.offs.push(
      bus.on('message_end', (event) => {
        const message = event.message;
        if (message.role !== 'user' || message.source !== 'notification' || event.discarded) return;
        this.replays.get(event.agentId)?.joined(message);
        for (const taskId of notifiedTaskIds(message)) {
          if (this.delivered.has(taskId)) continue;
          this.delivered.add(taskId);
          this.sink.add({ k: 'notice', a: event.agentId, taskId });
        }
      }),
      // A subagent's actor exists once it runs: its recorder then watches it for approval answers.
      bus.on('agent_start', (event) => {
        if (event.agentId === this.rootId) return;
        const node = this.tree.registry.node(event.agentId);
        const ref = node?.ref as AnyActorRef | undefined;
        if (!node || !ref) return;
        this.recorders.get(event.agentId)?.watchApprovals(ref);
        const replay = this.replays.get(event.agentId);
        if (replay) {
          replay.started(ref);
          // Its own background batches as journaled (no tool call starts them again): after this transition.
          queueMicrotask(() => this.resumeOwn(node, replay));
        }
      }),
      // A replaying subagent asks again for approvals a person had answered: the answer is given again.
      bus.on('approval_requested', (event) => {
        const answer = this.recorders.get(event.agentId) && this.answers.get(`${event.agentId}/${event.toolCallId}`);
        if (!answer) return;
        if (answer.approved) this.approvedAgain(event.toolCallId);
        queueMicrotask(() => {
          const ref = this.tree.registry.node(event.agentId)?.ref;
          ref?.send(
            answer.approved
              ? { type: 'APPROVE', toolCallId: event.toolCallId }
              : { type: 'DENY', toolCallId: event.toolCallId, ...(answer.reason ? { reason: answer.reason } : {}) },
          );
        });
      }),
    );
  }

  private get answers(): Map<string, { approved: boolean; reason?: string }> {
    const answers = new Map<string, { approved: boolean; reason?: string }>();
    for (const record of this.records) {
      if (record.k === 'approval' && record.a !== this.rootId) {
        answers.set(`${record.a}/${record.id}`, {
          approved: record.approved,
          ...(record.reason === undefined ? {} : { reason: record.reason }),
        });
      }
    }
    return answers;
  }

  /**
   * An escalation of a batch of the root's that its turn had not ended with (its tool call's result journaled, the
   * turn's end not) is heard again, before the turn resumes.
   */
  escalateOwed(owner: Owner | undefined): void {
    if (owner) this.escalateOwedTo(owner.id);
  }

  /**
   * The escalations of an owner's batches journaled from record `from` on that its turn had not ended with: its next
   * live step ends the turn with one, as it would have without the crash (a replayed step answers from the journal
   * first). A subagent's ends its task with an `escalation` failure, which its own batch then decides on.
   */
  private escalateOwedTo(ownerId: string, from = 0): void {
    for (const batch of this.journaledBatches(from)) {
      const escalation = batch.a === ownerId ? this.standing.escalationOf(batch.batchId) : undefined;
      if (!escalation) continue;
      const heard = this.records
        .slice(this.records.indexOf(escalation))
        .some((r) => r.k === 'turn_end' && r.a === ownerId);
      if (!heard) this.escalateAgain(ownerId, batch, escalation);
    }
  }

  /** The root's background tasks that had not settled when the process stopped start again. */
  resumeRoot(owner: Owner | undefined): void {
    if (!owner) return;
    // Only batches journaled before the restart: one the resumed root opened since is live already.
    for (const batch of this.journaledBatches()) {
      if (batch.a === owner.id && batch.background) this.reattach(owner, batch);
    }
  }

  /**
   * A replaying subagent's own background batches, journaled in its task's last attempt: unsettled tasks start
   * again, results it was owed are delivered again after its replay, results it had taken in join it again where
   * they joined (see reattach and SubagentReplay). An escalation of its batches it had not heard is owed again.
   */
  private resumeOwn(owner: Owner, replay: SubagentReplay): void {
    if (this.replays.get(owner.id) !== replay) return;
    for (const batch of this.journaledBatches(replay.journal.from)) {
      if (batch.a === owner.id && batch.background) this.reattach(owner, batch);
    }
    this.escalateOwedTo(owner.id, replay.journal.from);
  }

  /**
   * Notifications the root was owed when the process stopped (due, not delivered, not held by its restored
   * state): sent once its replay has caught up with the journal (Session.afterReplay).
   */
  notifyOwed(owner: Owner | undefined, actor: AnyActorRef, context: AgentContext): void {
    if (!owner) return;
    const journaled = this.journaledBatches();
    // Waiting in the restored state already: in its injections or its queue.
    const waiting = new Set<string>();
    const held = [...context.injections, ...context.queue.flatMap((input) => input.messages)];
    if (context.current) held.push(...context.current.messages);
    for (const message of held) for (const taskId of notifiedTaskIds(message)) waiting.add(taskId);
    // Owed together, so given together: one NOTIFY, one model call (see NotificationOutbox).
    const owed: { inputId: string; message: UserMessage }[] = [];
    for (const batch of journaled) {
      if (batch.a !== owner.id || !batch.background) continue;
      for (const task of batch.tasks) {
        const settled = this.settled.get(task.taskId);
        if (!settled || this.delivered.has(task.taskId) || waiting.has(task.taskId)) continue;
        const message = notificationMessage(
          task.taskId,
          task.agentId,
          settled.status ?? 'completed',
          settled.text ?? '',
        );
        owed.push({ inputId: `notify.${task.taskId}`, message });
      }
    }
    const first = owed[0];
    if (first) actor.send({ type: 'NOTIFY', messages: owed.map((o) => o.message), inputId: first.inputId });
  }

  /** Batches journaled before the restart (from record `from` on). */
  private journaledBatches(from = 0): BatchRecord[] {
    return this.records.slice(from).filter((record): record is BatchRecord => record.k === 'batch');
  }

  /**
   * A supervisor's own batches as journaled before the restart, foreground or background: their unsettled tasks
   * start again (no tool call will ask for them again).
   */
  resumeOwner(owner: Owner): void {
    for (const record of this.records) {
      if (record.k === 'batch' && record.a === owner.id) this.reattach(owner, record);
    }
  }

  /**
   * A member of a supervisor (`supervisor.agent()`) on the session, journaled and, when the journal knows it,
   * rebuilt (see member-replay.ts). Its recorder and replay are kept here with the subagents', whose bus handlers
   * serve it alike (approvals given again, its own background batches re-attached, notifications joining again,
   * steers waiting at the crash sent again).
   */
  member(env: AgentEnv, actor: AnyActorRef): void {
    const journal = this.journalOf(env.agentId);
    const link = linkOf(env);
    const recorder = recordMember(env, actor, journal, this.sink, this.dir);
    link.record(recorder, true);
    this.recorders.get(env.agentId)?.stop();
    this.recorders.set(env.agentId, recorder);
    if (!knowsMember(journal)) return;
    replayMember(env, journal, recorder, link);
    // As a subagent's: a steer waiting at the crash is sent again, its own background batches come back, and their
    // results are held until it has caught up.
    this.replays.get(env.agentId)?.stop();
    this.replays.set(env.agentId, new SubagentReplay(journal, env, this.tree, recorder));
    this.offs.push(replayInputs(journal, actor));
  }

  /** Every task of the tree's batches, with its result once settled. */
  tasks(): SessionTask[] {
    return sessionTasks(this.batches.values(), this.settled);
  }

  /** Tasks of the tree that have not settled. */
  get openTasks(): number {
    return this.open;
  }

  private open = 0;

  /**
   * While subagents are at work, many agents may start tools in one tick (a swarm's model answers arrive
   * together): their starts are then written together at the end of the tick, one write instead of one per tool.
   */
  private grouping(): void {
    this.sink.groupEffects = this.open > 0;
  }

  /** Its session closed: the tree it observes may live on, and it keeps nothing more of it. */
  stop(): void {
    this.stopped = true;
    for (const off of this.offs.splice(0)) off();
    for (const recorder of this.recorders.values()) recorder.stop();
    this.recorders.clear();
    for (const replay of this.replays.values()) replay.stop();
    this.replays.clear();
  }

  private stopped = false;

  // ---- TreeObserver ----

  agentJournal(): Journaling {
    return this.stopped ? unrecorded : new JournalLink();
  }

  batchOpened(owner: Owner, batch: OpenedBatch): void {
    if (this.stopped || this.batches.has(batch.batchId)) return;
    const record: BatchRecord = {
      k: 'batch',
      a: owner.id,
      batchId: batch.batchId,
      background: batch.background,
      tasks: batch.tasks,
      ...(batch.callId === undefined ? {} : { call: batch.callId }),
      ...(batch.join ? { join: batch.join } : {}),
      ...(batch.budget ? { budget: batch.budget } : {}),
      ...(batch.supervision ? { supervision: batch.supervision } : {}),
    };
    this.batches.set(batch.batchId, record);
    if (batch.callId !== undefined) this.byCall.set(`${owner.id}/${batch.callId}`, batch.batchId);
    this.sink.add(record);
    this.open += batch.tasks.length;
    this.grouping();
  }

  taskStarted(env: AgentEnv, task: Readonly<TaskRecord>, attempt: number): void {
    if (this.stopped) return;
    const key = `${task.taskId}/${attempt}`;
    if (!this.started.has(key)) {
      this.started.add(key);
      this.sink.add({ k: 'task', a: task.ownerId, taskId: task.taskId, agentId: task.agentId, ev: 'started', attempt });
    }
    this.recorders.get(env.agentId)?.stop();
    // The run under way at the crash replays its journal; a restart ordered before it starts afresh.
    const replay = this.standing.startedRun(task.taskId, attempt) ? this.toReplay.get(env.agentId) : undefined;
    this.toReplay.delete(env.agentId);
    this.replays.get(env.agentId)?.stop();
    this.replays.delete(env.agentId);
    const journaled = replay ? copyJournaled(replay.journaled) : nothingJournaled();
    if (!replay) journaled.messages = env.transcript.length;
    const recorder = new SessionRecorder(env, this.sink, journaled, { task: true });
    this.recorders.set(env.agentId, recorder);
    const link = linkOf(env);
    link.record(recorder, false);
    if (replay) {
      replay.ledger = this.ledger;
      link.answerFrom(replay);
      markReplayed(env, replay, link);
      this.replays.set(env.agentId, new SubagentReplay(replay, env, this.tree, recorder));
    }
    if (this.dir) env.toolResults.useSessionDir(this.dir, env.agentId);
    // Its replay sends what its last compaction made once its history is rebuilt, not a new summary's.
    if (replay?.compaction) env.context.restoreView(replay.compaction, env.transcript.messages);
  }

  verdict(verdict: VerdictFact): void {
    if (!this.stopped) this.sink.add({ k: 'verdict', ...verdict });
  }

  acknowledge(now?: boolean, then?: () => void): void {
    if (this.sink.acknowledge && !this.stopped) this.sink.acknowledge(now, then);
    else then?.();
  }

  taskSettled(task: Readonly<TaskRecord>, result: TaskResult, error?: SerializedError): void {
    if (this.stopped) return;
    this.replays.get(task.agentId)?.stop();
    this.replays.delete(task.agentId);
    this.settle(task.ownerId, task, result, error);
  }

  private settle(
    ownerId: string,
    task: { taskId: string; agentId: string },
    result: TaskResult,
    error?: SerializedError,
  ): void {
    if (this.settled.has(task.taskId)) return;
    const record: TaskFact = {
      k: 'task',
      a: ownerId,
      taskId: task.taskId,
      agentId: task.agentId,
      ev: 'settled',
      status: result.status,
      text: result.text,
      ...(result.output === undefined ? {} : { output: result.output }),
      ...(error ? { error } : {}),
    };
    this.settled.set(task.taskId, record);
    this.sink.add(record);
    if (this.open > 0) this.open--;
    this.grouping();
  }

  resumeBatch(owner: Owner, callId: string): StartedBatch | undefined {
    if (this.stopped) return undefined;
    const batchId = this.byCall.get(`${owner.id}/${callId}`);
    const batch = batchId === undefined ? undefined : this.batches.get(batchId);
    return batch ? this.reattach(owner, batch) : undefined;
  }

  // ---- restoring ----

  /** A journaled batch, once: its settled results kept, its other tasks started again under the same ids. */
  private reattach(owner: Owner, batch: BatchRecord): StartedBatch {
    const known = this.reattached.get(batch.batchId);
    if (known) return known;
    const results = (): TaskResult[] =>
      batch.tasks.map((task) => {
        const settled = this.settled.get(task.taskId);
        return {
          taskId: task.taskId,
          agentId: task.agentId,
          status: (settled?.status ?? 'interrupted') as TaskResult['status'],
          text: settled?.text ?? '',
          ...(settled?.output === undefined ? {} : { output: settled.output }),
        };
      });
    const open = batch.tasks.filter((task) => !this.settled.has(task.taskId));
    const replay = batch.background ? this.replays.get(owner.id) : undefined;
    if (replay) this.owedTo(replay, batch);
    const join = this.joinLeft(batch, open.length);
    const escalation = this.standing.escalationOf(batch.batchId);
    let done: Promise<TaskResult[]>;
    if (open.length === 0) done = Promise.resolve(results());
    else if (escalation) {
      // The batch had escalated (its verdict is journaled, its tasks' ends and its owner's hearing of it may not
      // be): its tasks left end as the live batch was ending them, and its owner's turn hears the cause again.
      for (const task of open) this.settle(batch.a, task, this.escalatedResult(task, escalation));
      done = Promise.resolve(results());
    } else if (join === 'decided') {
      // The join was decided before the crash (its deciding settle is journaled, the cancellations were not):
      // the tasks left are cancelled as the live batch was cancelling them, and none runs again.
      for (const task of open) this.settle(batch.a, task, this.joinedResult(task));
      done = Promise.resolve(results());
    } else {
      const started = this.tree.startBatch(
        owner,
        open.map((task) => ({ prompt: task.prompt, profile: task.profile })),
        {
          background: batch.background,
          ...(join ? { join } : {}),
          ...(batch.call === undefined ? {} : { callId: batch.call }),
          // Its own budget again, charged with what its settled tasks spent.
          ...(batch.budget ? { budget: batch.budget, spent: this.ledger?.batch(batch.batchId) } : {}),
          ...(batch.supervision ? { supervision: batch.supervision } : {}),
          // Where its supervision stood: its restart window, each task's run and the sibling that restarted it.
          ids: {
            batchId: batch.batchId,
            tasks: open.map((task) => ({ ...task, ...this.runOf(task) })),
            restarts: this.standing.restartsOf(batch.batchId),
          },
        },
      );
      done = started.done.then(results);
    }
    if (escalation && open.length > 0) this.escalateAgain(owner.id, batch, escalation);
    const handle = { batchId: batch.batchId, taskIds: batch.tasks.map((task) => task.taskId), done };
    this.reattached.set(batch.batchId, handle);
    return handle;
  }

  /**
   * A replaying subagent's settled background results: one its journaled history holds joins it again during the
   * replay (open until then), one it never took in is delivered again once the replay has caught up.
   */
  private owedTo(replay: SubagentReplay, batch: BatchRecord): void {
    for (const task of batch.tasks) {
      const settled = this.settled.get(task.taskId);
      if (!settled) continue;
      if (replay.inHistory.has(task.taskId)) {
        replay.expectAgain(task.taskId);
        continue;
      }
      const result = settledResult(settled);
      const message = notificationMessage(task.taskId, task.agentId, result.status, result.text);
      this.tree.effects.owe(batch.a, batch.batchId, result, message);
    }
  }

  /**
   * The join policy the re-attached tasks run under, counted from where the batch stood at the crash: the tasks
   * already settled keep their say, so `first(k)` with j completed needs k - j more (at most the tasks left: a
   * `first` out of reach runs them all, as the live batch does), and `quorum(k)` likewise (it fails once k is out
   * of reach, which the same count gives). `decided` when the settles journaled already decided it.
   */
  private joinLeft(batch: BatchRecord, open: number): JoinPolicy | 'decided' | undefined {
    const join = batch.join as JoinPolicy | undefined;
    if (!join || join.kind === 'all') return undefined;
    if (join.kind === 'allSettled') return join;
    const size = batch.tasks.length;
    let completed = 0;
    for (const task of batch.tasks) if (this.settled.get(task.taskId)?.status === 'completed') completed++;
    if (joinDecided(join, size, completed, size - open)) return 'decided';
    return { kind: join.kind, k: Math.min(join.k - completed, open) };
  }

  /** The owner's turn ends with a journaled escalation at its next step (once: the env holds one). */
  private escalateAgain(ownerId: string, batch: BatchRecord, escalation: VerdictRecord): void {
    const { taskId, failure, because = 'intensity', text = '' } = escalation;
    const agentId = batch.tasks.find((task) => task.taskId === taskId)?.agentId ?? '';
    this.tree.effects.escalate(ownerId, {
      batchId: batch.batchId,
      taskId,
      agentId,
      failure: failure as FailureClass,
      because: because as Escalation['because'],
      text,
    });
  }

  /** How a task of an escalated batch ended: the failed one with its failure, the others cancelled naming it. */
  private escalatedResult(task: BatchTask, escalation: VerdictRecord): TaskResult {
    const { taskId, because = 'intensity', text = '' } = escalation;
    const failed = task.taskId === taskId;
    return {
      taskId: task.taskId,
      agentId: task.agentId,
      status: failed ? 'failed' : 'cancelled',
      text: failed ? text : escalatedText(taskId, because as Escalation['because']),
    };
  }

  private joinedResult(task: BatchTask): TaskResult {
    return { taskId: task.taskId, agentId: task.agentId, status: 'cancelled', text: JOINED_TEXT };
  }

  /**
   * The run a task started again goes on with: its number, the sibling that restarted it, what is left of the
   * backoff before it (a run ordered and not started), and the history it starts from when it was ordered as a
   * resume (the one under way at the crash, or one its backoff held) or its task resumed a finished agent by id
   * (`base`, what a restart goes back to).
   */
  private runOf(task: BatchTask): RestoredRun {
    const attempt = this.standing.attemptOf(task.taskId);
    const cause = this.standing.causeOf(task.taskId);
    const base = this.histories.baseOf(task.taskId, task.agentId);
    const backoffMs = this.standing.backoffLeft(task.taskId, attempt, Date.now());
    const run: RestoredRun = {
      attempt,
      ...(cause ? { cause } : {}),
      ...(base.length > 0 ? { base } : {}),
      ...(backoffMs === undefined ? {} : { backoffMs }),
    };
    if (!this.standing.resumed(task.taskId, attempt)) return run;
    const started = this.standing.startedRun(task.taskId, attempt);
    const history = started ? this.histories.lastRunStart(task.agentId) : this.histories.historyOf(task.agentId);
    return { ...run, resume: true, history };
  }

  /**
   * A subagent's facts since its task's last attempt started, after the history that run started from: what its
   * replay answers from.
   */
  private journalOf(agentId: string): AgentJournal {
    const from = this.histories.lastRunAt(agentId);
    const journal = new AgentJournal(agentId, this.records.slice(from), this.histories.lastRunStart(agentId));
    journal.from = from;
    return journal;
  }
}

/**
 * The link an agent of the tree was built with (see agentJournal); one built before the session attached (none is)
 * would get a link of its own that nothing reads.
 */
function linkOf(env: AgentEnv): JournalLink {
  return env.journal instanceof JournalLink ? env.journal : new JournalLink();
}

/** How a task of a batch started again goes on (see BatchOptions.ids). */
type RestoredRun = Omit<NonNullable<BatchOptions['ids']>['tasks'][number], 'taskId' | 'agentId'>;

/** A subagent task of a session, as `session.tasks()` lists it. */
export interface SessionTask extends BatchTask {
  /** The agent (or supervisor) whose batch it is. */
  owner: string;
  batchId: string;
  status: TaskResult['status'] | 'open';
  result?: TaskResult;
}

export function sessionTasks(batches: Iterable<BatchRecord>, settled: ReadonlyMap<string, TaskFact>): SessionTask[] {
  const tasks: SessionTask[] = [];
  for (const batch of batches) {
    for (const task of batch.tasks) {
      const record = settled.get(task.taskId);
      const result = record ? settledResult(record) : undefined;
      tasks.push({
        ...task,
        owner: batch.a,
        batchId: batch.batchId,
        status: result ? result.status : 'open',
        ...(result ? { result } : {}),
      });
    }
  }
  return tasks;
}

function settledResult(record: TaskFact): TaskResult {
  return {
    taskId: record.taskId,
    agentId: record.agentId,
    status: (record.status ?? 'completed') as TaskResult['status'],
    text: record.text ?? '',
    ...(record.output === undefined ? {} : { output: record.output }),
  };
}
