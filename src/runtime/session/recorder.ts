import type { AnyActorRef } from 'xstate';
import type { AgentActorRef, AgentContext } from '../../../machines/agent/index.js';
import type { AgentEvent, AgentEventOf, Message, ToolResultPart, UserMessage } from '../../protocol/index.js';
import { type ResultRef, SNAPSHOT_VERSION, type StoredMessage, type Urgency } from '../../session/index.js';
import type { AgentEnv } from '../env/env.js';
import { PromptDigests } from './prompt-digest.js';
import type { Journaled, RecordSink } from './record-sink.js';

const DENIED = 'The user denied this tool call';

/**
 * Turns one agent's events into journal records: the journal is the durable form of the event bus, written by a
 * listener on it. Deltas are never journaled (the message they build is, whole, at its `message_end`). Besides
 * events it watches the actor for two facts the bus does not carry: the machine's snapshot at each step start
 * (what a resume restores) and a person's answers to approvals.
 */
export class SessionRecorder {
  private readonly offs: Array<() => void> = [];
  /** Each input's messages, so a turn's opening message is stored as a reference to its input. */
  private readonly inputMessages = new WeakMap<Message, { input: string; n: number }>();
  private lastCalls?: AgentContext['calls'];
  private watching = false;
  /** A fact joined the history that a replay could not reproduce: the next step's start is snapshotted. */
  private snapshotDue = false;
  private lastInjections?: AgentContext['injections'];
  /** Steers already journaled (or restored): a steer is journaled once, when it starts waiting for a boundary. */
  private readonly steers = new WeakSet<Message>();
  private readonly prompts = new PromptDigests();

  /**
   * How soon an input, a turn's end and a run's end are stored: at once for an agent a program prompts (it may
   * exit when its prompt resolves), with the tick's write for a subagent task's agent, whose work a program sees
   * only as its task's settle.
   */
  private readonly ends: Urgency | undefined;
  private stopped = false;

  constructor(
    private readonly env: AgentEnv,
    private readonly sink: RecordSink,
    readonly journaled: Journaled,
    options: { task?: boolean } = {},
  ) {
    this.ends = options.task ? undefined : 'now';
    const { bus, agentId } = env;
    // Listening by agent id: the bus keeps one agent's listeners apart, so a tree of many recorders costs one
    // lookup per event, not a filter per recorder; as its journal, so a fact is recorded before anyone hears of it.
    this.offs.push(
      bus.journal('message_end', (event) => this.message(event), agentId),
      bus.journal('tool_execution_start', (event) => this.toolStart(event), agentId),
      bus.journal('tool_execution_end', (event) => this.toolEnd(event), agentId),
      bus.journal('approval_requested', (event) => this.asked(event), agentId),
      bus.journal('turn_start', (event) => this.turnStart(event), agentId),
      bus.journal('turn_end', (event) => this.turnEnd(event), agentId),
      bus.journal('compaction_end', (event) => this.compaction(event), agentId),
      bus.journal('agent_start', (event) => this.run(event, true), agentId),
      bus.journal('agent_end', (event) => this.run(event, false), agentId),
    );
  }

  /** Settles once a tool's start, just announced, is stored, when the session groups tool starts into one write. */
  durable(): Promise<void> | undefined {
    return this.stopped ? undefined : this.sink.durable?.();
  }

  /**
   * Resolves a turn's promise once its records are stored: a program awaits this agent's turns (a task's agent is
   * reported by its task's settle instead).
   */
  stored<T>(resolve: (value: T) => void, value: T): void {
    if (this.stopped || this.ends === undefined || !this.sink.acknowledge) resolve(value);
    else this.sink.acknowledge(false, () => resolve(value));
  }

  /** A person's answer to a call waiting for approval, given through `approve()` / `deny()`. */
  answered(id: string, approved: boolean, reason?: string, askedAt?: number): void {
    if (this.stopped) return;
    // Answered from a listener that heard the question before this recorder did: the question goes first.
    if (askedAt !== undefined) this.asked({ seq: askedAt, agentId: this.env.agentId, toolCallId: id });
    if (this.journaled.asked.has(id) && !this.journaled.approvals.has(id)) this.approval(id, approved, reason);
  }

  /** Starts watching the actor's snapshots (after it started, so the first one is the restored state). */
  watch(actor: AgentActorRef, snapshots = true): void {
    if (this.watching) return;
    this.watching = true;
    const { context } = actor.getSnapshot();
    this.lastCalls = context.calls;
    this.lastInjections = context.injections;
    for (const message of context.injections) this.steers.add(message);
    const subscription = actor.subscribe({
      next: (snapshot) => this.onSnapshot(actor, snapshot, snapshots),
      error: () => {},
    });
    this.offs.push(() => subscription.unsubscribe());
  }

  /**
   * Watches a subagent for a person's answers only: a subagent is never restored from a snapshot (its task's
   * agent replays its journal instead).
   */
  watchApprovals(actor: AnyActorRef): void {
    this.watch(actor as AgentActorRef, false);
  }

  /** An input was submitted: written before the prompt reaches the actor, so a queued prompt survives a crash. */
  input(inputId: string, messages: UserMessage[], expectsOutput: boolean): void {
    if (this.stopped) return;
    messages.forEach((message, n) => {
      this.inputMessages.set(message, { input: inputId, n });
    });
    if (this.journaled.inputs.has(inputId)) return;
    this.journaled.inputs.add(inputId);
    // At once: a prompt is durable when `prompt()` returns, whatever the process does next. A subagent's input
    // is its task's prompt, already in its batch record: it goes with the tick's write.
    const budget = this.env.pending.get(inputId)?.budget;
    this.sink.add(
      { k: 'input', a: this.env.agentId, inputId, messages, expectsOutput, ...(budget ? { budget } : {}) },
      this.ends,
    );
  }

  /** A queued input left without a turn: stored as soon as the input itself, since its caller hears of it. */
  dropped(inputId: string): void {
    if (this.stopped) return;
    this.sink.add({ k: 'dropped', a: this.env.agentId, inputId }, this.ends);
  }

  /** Makes restored input messages known, so that their turn stores references again. */
  knowInput(inputId: string, messages: readonly UserMessage[]): void {
    messages.forEach((message, n) => {
      this.inputMessages.set(message, { input: inputId, n });
    });
  }

  /** A steer sent again after a restart: already journaled. */
  knowSteer(message: Message): void {
    this.steers.add(message);
  }

  /** Writes the snapshot of the actor's current state now (a new session's first state). */
  snapshotNow(actor: AgentActorRef): void {
    this.writeSnapshot(actor, 'idle');
  }

  stop(): void {
    for (const off of this.offs.splice(0)) off();
    this.stopped = true;
  }

  private message(event: AgentEventOf<'message_end'>): void {
    if (event.discarded) return;
    // The bus announces a message right after appending it, so it is the last of the history.
    const i = this.env.transcript.length - 1;
    if (i < this.journaled.messages) return;
    this.journaled.messages = i + 1;
    // A user message (a prompt, a steer, a notification, output feedback) is what a replay cannot make again
    // from the journal's answers and results: the next step's state is snapshotted, and a resume starts there.
    if (event.message.role === 'user') this.snapshotDue = true;
    if (event.message.role === 'tool') this.denials(event.message.content);
    const ref = this.inputMessages.get(event.message);
    this.sink.add({
      k: 'msg',
      s: event.seq,
      a: event.agentId,
      i,
      turn: event.turn,
      step: event.step,
      m: ref ?? this.asStored(event.message),
    });
  }

  /** A tool message's results that a `tool_end` record holds are stored as references to it. */
  private asStored(message: Message): StoredMessage {
    if (message.role !== 'tool') return message;
    const { toolEnds } = this.journaled;
    let refs = false;
    const content = message.content.map((part): ToolResultPart | ResultRef => {
      if (toolEnds.get(part.toolCallId) !== part) return part;
      refs = true;
      return { ref: part.toolCallId };
    });
    return refs ? { role: 'tool', content } : message;
  }

  private toolStart(event: AgentEventOf<'tool_execution_start'>): void {
    if (this.journaled.toolStarts.has(event.toolCallId)) return;
    // A call that was asked about and now runs was approved, even when the answer and the run came in one
    // macrostep and no snapshot in between showed it.
    const id = event.toolCallId;
    if (this.journaled.asked.has(id) && !this.journaled.approvals.has(id)) this.approval(id, true);
    this.journaled.toolStarts.add(event.toolCallId);
    // Stored before the tool runs (the tool worker waits for `durable()` when starts are grouped): a crash while
    // it runs is then known as one, and the tool is not run blind again.
    this.sink.add(
      { k: 'tool_start', s: event.seq, a: event.agentId, id: event.toolCallId, name: event.toolName },
      'effect',
    );
  }

  private toolEnd(event: AgentEventOf<'tool_execution_end'>): void {
    const known = this.journaled.toolEnds.get(event.toolCallId);
    this.journaled.toolEnds.set(event.toolCallId, event.result);
    if (known) return;
    this.sink.add({ k: 'tool_end', s: event.seq, a: event.agentId, id: event.toolCallId, result: event.result });
  }

  private asked(event: Pick<AgentEventOf<'approval_requested'>, 'seq' | 'agentId' | 'toolCallId'>): void {
    if (this.journaled.asked.has(event.toolCallId)) return;
    this.journaled.asked.add(event.toolCallId);
    this.sink.add({ k: 'asked', s: event.seq, a: event.agentId, id: event.toolCallId });
  }

  private turnStart(event: AgentEventOf<'turn_start'>): void {
    if (this.journaled.turnStarts.has(event.inputId)) return;
    this.journaled.turnStarts.add(event.inputId);
    const { env } = this;
    const specs = env.settings.toolIntent ? env.tools.specsWithIntent : env.tools.specs;
    const p = this.prompts.next(env.systemPrompt.fixed, specs);
    this.sink.add({
      k: 'turn_start',
      s: event.seq,
      a: event.agentId,
      turn: event.turn,
      inputId: event.inputId,
      t: event.time,
      ...(p && { p }),
    });
  }

  private turnEnd(event: AgentEventOf<'turn_end'>): void {
    if (this.journaled.turnEnds.has(event.inputId)) return;
    this.journaled.turnEnds.add(event.inputId);
    this.sink.add(
      {
        k: 'turn_end',
        s: event.seq,
        a: event.agentId,
        turn: event.turn,
        inputId: event.inputId,
        stopReason: event.stopReason,
        usage: event.usage,
        ...(event.error ? { error: event.error } : {}),
        t: event.time,
      },
      this.ends,
    );
  }

  /** The view a compaction made: a resume sends it instead of the uncompacted history. */
  private compaction(event: AgentEventOf<'compaction_end'>): void {
    const view = this.env.context.compactedView;
    if (!view) return;
    this.sink.add({ k: 'compaction', s: event.seq, a: event.agentId, ...view });
    this.snapshotDue = true;
  }

  private run(event: AgentEvent, running: boolean): void {
    if (this.journaled.running === running) return;
    this.journaled.running = running;
    // A run's end is stored at once: a program that exits when its prompt resolves keeps its last turn.
    this.sink.add(
      { k: 'run', s: event.seq, a: event.agentId, running, t: event.time },
      running ? undefined : this.ends,
    );
  }

  private onSnapshot(
    actor: AgentActorRef,
    snapshot: ReturnType<AgentActorRef['getSnapshot']>,
    snapshots: boolean,
  ): void {
    const { context } = snapshot;
    if (context.calls !== this.lastCalls) {
      this.approvals(this.lastCalls, context.calls);
      this.lastCalls = context.calls;
    }
    if (context.injections !== this.lastInjections) {
      this.lastInjections = context.injections;
      this.steered(context.injections);
    }
    if (!snapshots) return;
    // Not at every step: a resume replays the steps after the last snapshot from the journal (answers by turn and
    // step, results by call id), so a snapshot is needed only where the journal alone cannot lead (see
    // docs/architecture/decisions/0002-snapshots-where-the-journal-cannot-lead.md).
    if (snapshot.value === 'idle') this.writeSnapshot(actor, 'idle');
    else if (this.snapshotDue && snapshot.matches({ running: { turn: { step: 'model' } } })) {
      this.snapshotDue = false;
      this.writeSnapshot(actor, `${context.turn}.${context.step}`);
    }
  }

  /**
   * Steers waiting for the next step boundary, journaled at once (as a prompt is): one still waiting when the
   * process dies is sent again after the restart, instead of being lost.
   */
  private steered(injections: AgentContext['injections']): void {
    for (const message of injections) {
      if (message.source !== 'steer' || this.steers.has(message) || this.env.journal.gave(message)) continue;
      this.steers.add(message);
      this.sink.add({ k: 'steer', a: this.env.agentId, n: this.journaled.steers++, message }, 'now');
    }
  }

  /** Calls that waited for approval and no longer do: a person answered. */
  private approvals(before: AgentContext['calls'] | undefined, after: AgentContext['calls']): void {
    if (!before) return;
    for (const state of after) {
      const id = state.call.id;
      if (this.journaled.approvals.has(id)) continue;
      const was = before.find((b) => b.call.id === id);
      if (was?.status !== 'awaiting' || state.status === 'awaiting') continue;
      if (state.status === 'open') this.approval(id, true);
      else {
        const text = state.result?.content[0]?.type === 'text' ? state.result.content[0].text : '';
        if (!text.startsWith(DENIED)) continue; // closed by an interrupt, not answered
        const reason = text.slice(DENIED.length + 2);
        this.approval(id, false, reason || undefined);
      }
    }
  }

  /**
   * Denied calls whose answer no snapshot showed: a denial that closes a step's last waiting call goes on to the
   * step's end in the same macrostep. Its result, joining the history, says it.
   */
  private denials(results: readonly ToolResultPart[]): void {
    for (const part of results) {
      const id = part.toolCallId;
      if (!this.journaled.asked.has(id) || this.journaled.approvals.has(id)) continue;
      const text = part.content[0]?.type === 'text' ? part.content[0].text : '';
      if (text.startsWith(DENIED)) this.approval(id, false, text.slice(DENIED.length + 2) || undefined);
    }
  }

  private approval(id: string, approved: boolean, reason?: string): void {
    this.journaled.approvals.add(id);
    if (approved) this.remembered(id);
    this.sink.add(
      { k: 'approval', a: this.env.agentId, id, approved, ...(reason === undefined ? {} : { reason }) },
      'now',
    );
  }

  /** Approvals a person asked to remember ("allow always") with this answer: restored with the session. */
  private remembered(id: string): void {
    const now = this.env.settings.permissions.rememberedRules;
    const rules = now.filter((rule) => !this.journaled.remembered.has(rule));
    if (rules.length === 0) return;
    for (const rule of rules) this.journaled.remembered.add(rule);
    this.sink.add({ k: 'remember', a: this.env.agentId, id, rules }, 'now');
  }

  private writeSnapshot(actor: AgentActorRef, at: string): void {
    if (this.journaled.lastSnapshot === at) return;
    this.journaled.lastSnapshot = at;
    const persisted = persistedWithoutSubagents(actor);
    const { context } = persisted;
    // Inputs are stored once, in their `input` records: the snapshot keeps their ids.
    const inputs = this.journaled.inputs;
    const strip = <T extends { inputId: string; messages: UserMessage[] }>(input: T): T =>
      inputs.has(input.inputId) ? { ...input, messages: [] } : input;
    const snapshot = {
      ...persisted,
      context: {
        ...context,
        queue: context.queue.map(strip),
        ...(context.current ? { current: strip(context.current) } : {}),
      },
    };
    this.sink.add({ k: 'snapshot', a: this.env.agentId, v: SNAPSHOT_VERSION, n: this.env.transcript.length, snapshot });
  }
}

/**
 * The agent's persisted snapshot without its supervisor: the subagents are rebuilt from the journal's task records,
 * not from a snapshot (a spawned child machine cannot be persisted), so the restored agent starts a new supervisor
 * with its first command.
 */
function persistedWithoutSubagents(actor: AgentActorRef): { context: AgentContext } {
  const snapshot = actor.getSnapshot();
  if (!snapshot.children.supervisor) return actor.getPersistedSnapshot() as unknown as { context: AgentContext };
  const { supervisor: _, ...children } = snapshot.children;
  const logic = (actor as unknown as { logic: { getPersistedSnapshot(snapshot: unknown): unknown } }).logic;
  const persisted = logic.getPersistedSnapshot({ ...snapshot, children }) as { context: AgentContext };
  return { ...persisted, context: { ...persisted.context, supervising: false } };
}
