// Over 400 lines: a Session binds one agent to its journal for the agent's whole life (open, restore, record,
// replay, fork, close), and each step needs the same recorder, env and actor.
import { nanoid } from 'nanoid';
import type { AgentActorRef, AgentContext, TurnInput } from '../../../machines/agent/index.js';
import { addUsage, type Message, type UserMessage } from '../../protocol/index.js';
import {
  type BatchRecord,
  type HeaderRecord,
  JOURNAL_VERSION,
  type JournalRecord,
  type JournalStats,
  type TaskRecord,
} from '../../session/index.js';
import type { EventBus } from '../env/bus.js';
import type { AgentEnv } from '../env/env.js';
import type { Journaling } from '../env/recording.js';
import type { ScheduleJournal } from '../schedule/book.js';
import { restoreBudgets, supervisorLedger } from '../step/turn-budget.js';
import { requestModelAgain } from '../step/worker.js';
import type { Owner } from '../tree/nodes.js';
import { RememberedApprovals } from '../tree/remembered-approvals.js';
import type { SupervisionOptions } from '../tree/supervision-options.js';
import { Tree } from '../tree/tree.js';
import { JournalLink } from './link.js';
import { copyJournaled, nothingJournaled, type RecordSink } from './record-sink.js';
import { SessionRecorder } from './recorder.js';
import { feedInputs, openTurnsAtIdle, type ReplaySink } from './replay.js';
import { AgentJournal, afterCatchUp, markReplayed } from './restore.js';
import { type SessionTask, sessionTasks, TreeJournal } from './tree-journal.js';

/** What an agent built on a session starts from. */
export interface BoundAgent {
  agentId: string;
  messages: readonly Message[];
  /** The machine's persisted snapshot to restore; absent for a new session. */
  snapshot?: unknown;
  /** Whose subagent it is (a replay of a tree's agent). */
  parentId?: string;
  /** The system prompt a fork's edit gave the agent, in place of its configured one. */
  system?: string;
  /** The agent's journal, for its env. */
  journal: Journaling;
}

/** Where a session stands, as `list()` shows it. */
export type SessionStatus = 'new' | 'idle' | 'interrupted' | 'open';

/**
 * One session: a journal of one agent's facts, held open for writing (its store refuses a second writer). Give it
 * to `createAgent({ session })`: a new session records the agent from its first message; an existing one rebuilds
 * the agent where the journal stops (its history, its queued prompts, the step in flight) and records on.
 */
export class Session {
  private recorder?: SessionRecorder;
  /** The agent's journal as its env sees it (see link.ts). */
  private readonly link = new JournalLink();
  private actor?: AgentActorRef;
  private env?: AgentEnv;
  private kicked?: Promise<void>;
  private closed = false;
  /**
   * The journal as it was opened: what the agent resumes from and its workers answer from.
   *
   * @internal
   */
  readonly journal: AgentJournal;

  private tree?: TreeJournal;
  private remembered?: RememberedApprovals;
  private treeRuntime?: Tree;

  /** @internal */
  constructor(
    readonly header: HeaderRecord,
    private readonly records: readonly JournalRecord[],
    private readonly sink: RecordSink & { close?(): void; stats?: JournalStats; failure?: Error },
    /** Set for a replay: answers come only from the journal, and inputs are fed as recorded. */
    private readonly replayOf?: readonly JournalRecord[],
    /** The session's folder for its own files (tool results too long to send), when its store keeps one. */
    readonly dir?: string,
  ) {
    this.journal = new AgentJournal(header.agentId, records);
    if (replayOf) this.journal.offline = true;
  }

  get id(): string {
    return this.header.id;
  }

  get title(): string | undefined {
    return this.header.title ?? firstPromptText(this.journal.messages);
  }

  /** `interrupted`: the process stopped in the middle of a run, which the agent resumes. */
  get status(): SessionStatus {
    if (!this.journal.snapshot) {
      // A supervisor's session: no root agent, only batches; interrupted while a task had not settled.
      const tasks = this.tasks();
      if (tasks.length === 0) return 'new';
      return tasks.some((task) => task.status === 'open') ? 'interrupted' : 'idle';
    }
    return this.journal.running ? 'interrupted' : 'idle';
  }

  /**
   * The subagent tasks of the session, as journaled (at opening, and as they settle): `open` until settled. After
   * a crash, a supervisor reopened on the session starts the open ones again; `supervisor.result(taskId)` gives
   * any task's result.
   */
  tasks(): SessionTask[] {
    if (this.tree) return this.tree.tasks();
    const batches: BatchRecord[] = [];
    const settled = new Map<string, TaskRecord>();
    for (const record of this.records) {
      if (record.k === 'batch') batches.push(record);
      else if (record.k === 'task' && record.ev === 'settled') settled.set(record.taskId, record);
    }
    return sessionTasks(batches, settled);
  }

  /** A task's result, when the journal holds its settle (before the crash, or since). */
  taskResult(taskId: string): SessionTask['result'] {
    return this.tasks().find((task) => task.taskId === taskId)?.result;
  }

  /**
   * Called by `createSupervisor`: the supervisor's id (the session's root id).
   *
   * @internal
   */
  bindSupervisor(configId: string | undefined): string {
    if (this.recorder || this.tree || this.closed) throw new Error(`Session "${this.id}" is already in use`);
    if (this.journal.snapshot) throw new Error(`Session "${this.id}" holds an agent, not a supervisor`);
    const { agentId } = this.header;
    if (configId !== undefined && configId !== agentId) {
      throw new Error(`Session "${this.id}" belongs to supervisor "${agentId}", not "${configId}"`);
    }
    return agentId;
  }

  /**
   * Called by `createAgent` (after `bind`) and `createSupervisor` (after `bindSupervisor`): the supervision tree of
   * the session's root, built with the session's journal as its observer, which keeps every fact of the tree from
   * the start and gives a restored tree back what had not settled. A replay's tree is journaled by nobody.
   *
   * @internal
   */
  openTree(bus: EventBus, options: SupervisionOptions): Tree {
    if (this.treeRuntime || this.closed) throw new Error(`Session "${this.id}" already has a tree`);
    if (this.replayOf) return new Tree(bus, options);
    const tree = new Tree(bus, options, (built) => {
      this.tree = new TreeJournal(
        built,
        this.sink,
        this.header.agentId,
        this.records,
        (id) => this.remembered?.restore(id),
        this.dir,
      );
      return this.tree;
    });
    this.treeRuntime = tree;
    return tree;
  }

  /**
   * Called by `createSupervisor` once its actor has started: starts again every task of its own batches (foreground
   * or background) that had not settled, under the same ids.
   *
   * @internal
   */
  attachSupervisor(owner: Owner): void {
    const journal = this.tree;
    if (!journal) throw new Error(`Session "${this.id}" has no tree: open it first`);
    journal.ledger = supervisorLedger(this.records, owner.id);
    this.kicked = new Promise((resolve) =>
      setImmediate(() => {
        if (!this.closed) journal.resumeOwner(owner);
        resolve();
      }),
    );
  }

  /**
   * Called by `supervisor.agent()`: a member of the supervisor is journaled on the session, and one the journal
   * already knows (the same id after a restart) is rebuilt from it (see TreeJournal.member).
   *
   * @internal
   */
  attachMember(env: AgentEnv, actor: AgentActorRef): void {
    if (!this.tree || this.closed) throw new Error(`Session "${this.id}" has no supervisor to add a member to`);
    this.members.push(actor);
    this.tree.member(env, actor);
  }

  private readonly members: AgentActorRef[] = [];

  /** Write counts and bytes so far (for a session written to a store). */
  get stats(): JournalStats | undefined {
    return this.sink.stats;
  }

  /** The store's failure, once a write failed: the session records nothing more until it is opened again. */
  get failure(): Error | undefined {
    return this.sink.failure;
  }

  /**
   * Called by `createAgent`: the agent's id, history and machine snapshot to start from.
   *
   * @internal
   */
  bind(configId: string | undefined, messages: readonly Message[] | undefined): BoundAgent {
    if (this.recorder || this.closed) throw new Error(`Session "${this.id}" is already in use by an agent`);
    const { agentId } = this.header;
    if (configId !== undefined && configId !== agentId) {
      throw new Error(`Session "${this.id}" belongs to agent "${agentId}", not "${configId}"`);
    }
    if (this.replayOf) {
      const first = this.replayOf.find((record) => record.k === 'snapshot' && record.a === agentId);
      // A subagent replays under the owner its tasks ran for: its events name that parent as they did.
      const batch = this.replayOf.find((r) => r.k === 'batch' && r.tasks.some((task) => task.agentId === agentId));
      // Its starting history: up to the root's first snapshot, or what a member was given (journaled at seq 0).
      const given = this.replayOf.filter((r) => r.k === 'msg' && r.a === agentId && r.s === 0).length;
      return {
        agentId,
        messages: this.journal.messages.slice(0, first?.k === 'snapshot' ? first.n : given),
        ...(batch && 'a' in batch ? { parentId: batch.a } : {}),
        journal: this.link,
      };
    }
    const edit = this.header.forkOf?.edit;
    const system = edit && 'system' in edit && typeof edit.system === 'string' ? { system: edit.system } : {};
    const restored = this.journal.restoredSnapshot();
    if (!restored) return { agentId, messages: messages ?? [], ...system, journal: this.link };
    return {
      agentId,
      messages: this.journal.messages.slice(0, this.journal.snapshot?.n),
      snapshot: restored.snapshot,
      ...system,
      journal: this.link,
    };
  }

  /**
   * Called by `createAgent` once the actor has started: records from now on, and resumes what was in flight (with
   * its subagents, when it has a tree: see openTree).
   *
   * @internal
   */
  attach(env: AgentEnv, actor: AgentActorRef): void {
    this.env = env;
    this.actor = actor;
    const journal = this.journal;
    const tree = this.treeRuntime;
    if (this.dir) env.toolResults.useSessionDir(this.dir, env.agentId);
    // A replay of a tree's agent (a subagent or member: no snapshot of its own) records as the tree recorded it.
    const treeAgent = this.replayOf !== undefined && !journal.snapshot;
    const recorder = new SessionRecorder(
      env,
      this.sink,
      // The recorder's own copy: what it writes from now on must not change what the recording answers.
      this.replayOf ? nothingJournaled() : copyJournaled(journal.journaled),
      { task: treeAgent },
    );
    this.recorder = recorder;
    const remembered = this.replayOf ? undefined : new RememberedApprovals(this.records, env);
    this.remembered = remembered;
    remembered?.restoreBefore(this.journal.messages.slice(0, this.journal.snapshot?.n ?? 0));
    this.link.record(recorder, true);
    for (const [inputId, input] of journal.inputs) recorder.knowInput(inputId, input.messages);
    this.link.answerFrom(journal);
    // A person's recorded answer to a call that asks again on resume is given again.
    const offApprovals = env.bus.on('approval_requested', (event) => {
      const answer = journal.approvals.get(event.toolCallId);
      if (event.agentId !== env.agentId || !answer) return;
      if (answer.approved) remembered?.restore(answer.id);
      // Journaled as `approve()` journals a person's answer: when given, before the agent takes it in.
      env.journal.answered(answer.id, answer.approved, answer.reason, event.seq);
      queueMicrotask(() =>
        actor.send(
          answer.approved
            ? { type: 'APPROVE', toolCallId: answer.id }
            : {
                type: 'DENY',
                toolCallId: answer.id,
                ...(answer.reason === undefined ? {} : { reason: answer.reason }),
              },
        ),
      );
    });
    this.closers.push(offApprovals);
    const snapshot = actor.getSnapshot();
    if (this.replayOf || !journal.snapshot) {
      // A new agent: its starting history and state are the journal's first facts.
      env.transcript.messages.forEach((message, i) => {
        this.sink.add({ k: 'msg', s: 0, a: env.agentId, i, turn: 0, step: 0, m: message });
      });
      recorder.journaled.messages = env.transcript.length;
      if (treeAgent) recorder.watchApprovals(actor);
      else {
        recorder.snapshotNow(actor);
        recorder.watch(actor);
      }
      if (!this.replayOf) {
        this.kicked = Promise.resolve();
        return;
      }
      this.closers.push(openTurnsAtIdle(journal, env, actor));
      this.kicked = feedInputs(
        this.replayOf,
        this.header.agentId,
        this.sink as ReplaySink,
        (input) => {
          recorder.input(input.inputId, input.messages, input.expectsOutput);
          this.prompt(input);
        },
        (inputId) => actor.send({ type: 'CANCEL_INPUT', inputId }),
        (body) => env.emit(body),
      );
      return;
    }
    recorder.journaled.lastSnapshot = snapshot.matches('idle')
      ? 'idle'
      : `${snapshot.context.turn}.${snapshot.context.step}`;
    this.restoreEnv(env, snapshot.context);
    this.closers.push(markReplayed(env, journal, this.link));
    // Budgets are derived from the journaled answers: the accounts of the turn in flight and of the agent's life.
    const inTurn = snapshot.matches('running') ? snapshot.context : undefined;
    const ledger = restoreBudgets(env, actor, this.records, inTurn, journal.snapshot.n);
    journal.ledger = ledger;
    if (this.tree) this.tree.ledger = ledger;
    recorder.watch(actor);
    // Background results reach the root only once its replay has caught up with the journal (see afterReplay).
    const release = tree?.effects.holdNotifications(env.agentId);
    if (release) this.closers.push(release);
    // What was in flight resumes on the next macrotask, after the caller has attached its listeners (a pending
    // approval is announced again; a model call is asked again or answered from the journal).
    this.link.hold();
    this.kicked = new Promise((resolve) =>
      setImmediate(() => {
        const held = this.link.release();
        if (!this.closed) {
          const owner = tree?.registry.node(env.agentId);
          this.tree?.escalateOwed(owner);
          this.resume(actor, snapshot.context);
          this.tree?.resumeRoot(owner);
          this.afterReplay(() => {
            release?.();
            this.tree?.notifyOwed(owner, actor, snapshot.context);
          });
        }
        for (const input of held) this.prompt(input);
        resolve();
      }),
    );
  }

  /**
   * Settles when the agent has nothing left to do: idle, with no queued prompt and, for a tree, no task of its
   * subagents open and no background result on its way to its owner (after a resume, too), and once all of it is
   * stored.
   */
  async idle(): Promise<void> {
    await this.kicked;
    const actor = this.actor;
    if (!actor && this.tree && this.treeRuntime) return this.treeIdle(this.treeRuntime);
    if (!actor || !this.env) return;
    const bus = this.env.bus;
    await new Promise<void>((resolve) => {
      const done = () => {
        const s = actor.getSnapshot();
        if (s.status !== 'active') return true;
        return s.matches('idle') && s.context.queue.length === 0 && this.treeQuiet();
      };
      if (done()) return this.settle(resolve);
      let checking = false;
      // Checked after the step in flight has settled: a background result's settle wakes its idle owner right after.
      const check = () => {
        if (checking) return;
        checking = true;
        setImmediate(() => {
          checking = false;
          if (!done()) return;
          subscription.unsubscribe();
          off();
          this.settle(resolve);
        });
      };
      const subscription = actor.subscribe({ next: check, error: () => resolve(), complete: () => resolve() });
      const offs = this.tree ? [bus.on('subagent_end', check), bus.on('notification', check)] : [];
      const off = () => {
        for (const stop of offs) stop();
      };
    });
  }

  /**
   * No task of the tree is open and no settled result is still on its way to its owner: a result counts until its
   * owner has it (the NOTIFY that wakes an idle owner comes a macrotask after the settle).
   */
  private treeQuiet(): boolean {
    return (this.tree?.openTasks ?? 0) === 0 && (this.treeRuntime?.effects.undelivered ?? 0) === 0;
  }

  /** Resolves an idle wait once what the session was told is stored (later, while the store waits for its medium). */
  private settle(resolve: () => void): void {
    if (this.sink.acknowledge) this.sink.acknowledge(false, resolve);
    else resolve();
  }

  /**
   * Where the root agent's schedules are journaled and restored from (see schedule/book.ts); none for a replay,
   * whose agent runs no timers.
   *
   * @internal
   */
  scheduleJournal(): ScheduleJournal | undefined {
    if (this.replayOf) return undefined;
    return { records: this.records, add: (record) => this.sink.add(record) };
  }

  /**
   * A supervisor's session: settles when the tree is quiet (see treeQuiet) and every member is idle with nothing
   * queued.
   */
  private treeIdle(tree: Tree): Promise<void> {
    const membersIdle = () =>
      this.members.every((member) => {
        const s = member.getSnapshot();
        return s.status !== 'active' || (s.matches('idle') && s.context.queue.length === 0);
      });
    return new Promise((resolve) => {
      let checking = false;
      const check = () => {
        if (checking) return;
        checking = true;
        setImmediate(() => {
          checking = false;
          if (this.closed || (this.treeQuiet() && membersIdle())) {
            for (const off of offs) off();
            this.settle(resolve);
          }
        });
      };
      const offs = [
        tree.bus.on('subagent_end', check),
        tree.bus.on('notification', check),
        tree.bus.on('agent_end', check),
      ];
      check();
    });
  }

  /** Writes what is buffered and lets another writer open the session. The agent stops recording. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.recorder?.stop();
    // The tree may live on: its journal, stopped, keeps nothing more.
    this.tree?.stop();
    for (const close of this.closers.splice(0)) close();
    this.link.close();
    this.sink.close?.();
  }

  private readonly closers: Array<() => void> = [];

  private restoreEnv(env: AgentEnv, context: AgentContext): void {
    const journal = this.journal;
    const count = journal.snapshot?.n ?? 0;
    addUsage(env.totalUsage, journal.usageOf(count));
    env.turnUsage = journal.usageOf(count, context.turn);
    env.bus.continueAt(journal.lastSeq);
    if (journal.compaction) env.context.restoreView(journal.compaction, env.transcript.messages);
    // Results saved to files are readable again, and the turn's calls so far count on the repetition ladder.
    const started = (callId: string) => journal.journaled.toolStarts.has(callId);
    env.toolResults.restore(env.transcript.messages, journal.firstOfTurn(context.turn, count), context.turn, started);
    env.offerResultReader();
  }

  private resume(actor: AgentActorRef, context: AgentContext): void {
    const snapshot = actor.getSnapshot();
    if (snapshot.matches({ running: { turn: { step: 'model' } } })) {
      // Restored in the middle of a model call: the request is made again, as the step's entry made it.
      requestModelAgain({ context, self: actor, system: actor.system });
    }
    this.steerAgain(actor, context);
    // Prompts submitted but neither finished nor held by the restored state are submitted again, in order.
    const held = new Set([context.current?.inputId, ...context.queue.map((input) => input.inputId)]);
    for (const [inputId, input] of this.journal.inputs) {
      if (held.has(inputId) || this.journal.journaled.turnEnds.has(inputId)) continue;
      this.prompt({ inputId, messages: input.messages, expectsOutput: input.expectsOutput });
    }
  }

  /**
   * Steers that were waiting for a step boundary are sent again once the replay of the turn has caught up with
   * the journal: sent earlier, one would join a replayed step that the recorded answers were given without.
   */
  private steerAgain(actor: AgentActorRef, context: AgentContext): void {
    const held = context.injections.filter((message) => message.source === 'steer').length;
    const waiting = this.journal.waitingSteers(held);
    if (waiting.length === 0) return;
    this.afterReplay(() => {
      for (const record of waiting) {
        this.recorder?.knowSteer(record.message);
        actor.send({ type: 'STEER', message: record.message });
      }
    });
  }

  /** Runs `run` once the resumed agent's replay has caught up with the journal (see afterCatchUp). */
  private afterReplay(run: () => void): void {
    const env = this.env;
    const actor = this.actor;
    if (!env || !actor) {
      run();
      return;
    }
    this.closers.push(afterCatchUp(env, actor, this.journal.messages.length, run));
  }

  private prompt(input: TurnInput): void {
    this.actor?.send({ type: 'PROMPT', input });
  }
}

function firstPromptText(messages: readonly Message[]): string | undefined {
  const first = messages.find((m): m is UserMessage => m.role === 'user');
  const text = first?.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return text ? text.slice(0, 80) : undefined;
}

export function newHeader(
  id: string | undefined,
  agentId: string | undefined,
  title: string | undefined,
): HeaderRecord {
  return {
    k: 'session',
    v: JOURNAL_VERSION,
    id: id ?? `session_${nanoid(10)}`,
    agentId: agentId ?? `agent_${nanoid(10)}`,
    t: Date.now(),
    ...(title === undefined ? {} : { title }),
  };
}
