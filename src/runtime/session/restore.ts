import type { AnyActorRef, StateValue } from 'xstate';
import { type AgentContext, agentMachine } from '../../../machines/agent/index.js';
import {
  type AssistantMessage,
  addUsage,
  emptyUsage,
  errorResult,
  type Message,
  type ToolCallPart,
  type ToolResultPart,
  type Usage,
  type UserMessage,
} from '../../protocol/index.js';
import {
  type ApprovalRecord,
  type CompactionRecord,
  type InputRecord,
  JournalError,
  type JournalRecord,
  type MessageRecord,
  SNAPSHOT_VERSION,
  type SnapshotRecord,
  type SteerRecord,
} from '../../session/index.js';
import type { BudgetLimits } from '../budget/budget.js';
import type { RestoredSpend, SpendLedger } from '../budget/ledger.js';
import type { AgentEnv } from '../env/env.js';
import type { Recording } from '../env/recording.js';
import type { JournalLink } from './link.js';
import { type Journaled, nothingJournaled } from './record-sink.js';

/** One agent's journal, read back: what a resume restores and what its workers answer from. */
export class AgentJournal implements Recording {
  /** The last compaction's view: a resumed agent sends what the projection made, not the whole history. */
  compaction?: CompactionRecord;
  /** The history, message by message, as journaled (references resolved). */
  readonly messages: Message[] = [];
  private readonly turnOf: number[] = [];
  /** Each journaled turn's input id, by turn number. */
  private readonly turnInputs = new Map<number, string>();
  /** The inputs journaled and not dropped (a snapshot taken while one waited queues it without its messages). */
  readonly inputs = new Map<string, InputRecord>();
  readonly answers = new Map<string, AssistantMessage>();
  readonly approvals = new Map<string, ApprovalRecord>();
  /** Steers journaled, in order, and how many of them joined the history. */
  readonly steers: SteerRecord[] = [];
  joinedSteers = 0;
  readonly journaled: Journaled = nothingJournaled();
  snapshot?: SnapshotRecord;
  /** The last run record said `running`: the process stopped in the middle of a run. */
  running = false;
  lastSeq = 0;
  lastTime = 0;
  /** When set (a replay), a step or call the journal has no answer for is an error instead of a live call. */
  offline = false;
  /** What the tree's budget accounts had spent, for the turns this agent replays (set on resume). */
  ledger?: SpendLedger;
  /** Where in the session's records this journal starts (a subagent's: its task's last attempt). */
  from = 0;

  constructor(
    readonly agentId: string,
    records: readonly JournalRecord[],
    /** What the records' first run started from (a subagent's resumed run numbers its messages after it). */
    history: readonly Message[] = [],
  ) {
    this.messages.push(...history);
    this.journaled.messages = history.length;
    for (const record of records) this.take(record);
    // A message record lost or renumbered would leave a hole: the history must not close over it silently.
    for (let i = 0; i < this.messages.length; i++) {
      if (this.messages[i] === undefined) {
        throw new JournalError(
          `Agent "${agentId}": the journal holds message ${this.messages.length - 1} but not ${i}`,
        );
      }
    }
  }

  /** Tokens of every answer in the journal. */
  get usage(): Usage {
    const usage = emptyUsage();
    // A history given to `createAgent({ messages })` may hold answers without usage.
    for (const message of this.messages)
      if (message.role === 'assistant' && message.usage) addUsage(usage, message.usage);
    return usage;
  }

  /** Tokens of the first `count` messages' answers that belong to turn `turn` (all turns when undefined). */
  usageOf(count: number, turn?: number): Usage {
    const usage = emptyUsage();
    for (let i = 0; i < count; i++) {
      const message = this.messages[i];
      if (message?.role === 'assistant' && message.usage && (turn === undefined || this.turnOf[i] === turn)) {
        addUsage(usage, message.usage);
      }
    }
    return usage;
  }

  /** The index of the first of the first `count` messages that belongs to turn `turn` (`count` when none does). */
  firstOfTurn(turn: number, count: number): number {
    for (let i = 0; i < count; i++) if (this.turnOf[i] === turn) return i;
    return count;
  }

  restoredTurn(turn: number, inputId: string): { budget?: BudgetLimits; spent?: RestoredSpend } | undefined {
    const budget = this.inputs.get(inputId)?.budget;
    const spent = this.ledger?.turn(this.agentId, turn);
    if (!budget && !spent) return undefined;
    return { ...(budget ? { budget } : {}), ...(spent ? { spent } : {}) };
  }

  replaying(historyLength: number): boolean {
    return historyLength < this.messages.length;
  }

  joinedAt(historyLength: number): UserMessage[] | undefined {
    let joined: UserMessage[] | undefined;
    for (let i = historyLength; i < this.messages.length; i++) {
      const message = this.messages[i] as Message;
      if (message.role !== 'user' || (message.source !== 'steer' && message.source !== 'notification')) break;
      // A turn's opening messages are its input's, not a boundary's (see notifyTurnAt).
      if (i > 0 && this.turnOf[i] !== this.turnOf[i - 1]) break;
      joined ??= [];
      joined.push(message);
      this.given.add(message);
    }
    return joined;
  }

  /** Messages `joinedAt` gave back: already journaled (a steer among them is not journaled again). */
  private readonly given = new WeakSet<Message>();

  gave(message: Message): boolean {
    return this.given.has(message);
  }

  /** The journaled turns in order, each with its input id (`notify.<taskId>` for a turn notifications opened). */
  turnOrder(): Array<{ turn: number; inputId: string }> {
    return [...this.turnInputs].sort(([a], [b]) => a - b).map(([turn, inputId]) => ({ turn, inputId }));
  }

  /**
   * The turn that notifications opened at this length of the history, when the journal has one there: an idle
   * agent woken by its background results (`NOTIFY`; such a turn has no `input` record, its inputId is
   * `notify.<taskId>`). A replay that went idle there is sent the same notifications again.
   */
  notifyTurnAt(historyLength: number): { inputId: string; messages: UserMessage[] } | undefined {
    const opened = this.turnOpenedAt(historyLength);
    return opened?.inputId.startsWith('notify.') ? opened : undefined;
  }

  /**
   * The turn that opens at this length of the history without an `input` record, when the journal has one there:
   * one its notifications opened (`notify.<taskId>`), or a subagent's task (its inputId the task's id, its prompt
   * the turn's first message). A replay sends it again when it goes idle there.
   */
  turnOpenedAt(historyLength: number): { inputId: string; messages: UserMessage[] } | undefined {
    const turn = this.turnOf[historyLength];
    if (turn === undefined || (historyLength > 0 && this.turnOf[historyLength - 1] === turn)) return undefined;
    const inputId = this.turnInputs.get(turn);
    if (inputId === undefined || this.inputs.has(inputId)) return undefined;
    const messages: UserMessage[] = [];
    for (let i = historyLength; i < this.messages.length && this.turnOf[i] === turn; i++) {
      const message = this.messages[i] as Message;
      if (message.role !== 'user') break;
      messages.push(message);
    }
    return messages.length > 0 ? { inputId, messages } : undefined;
  }

  answer(turn: number, step: number): AssistantMessage | undefined {
    return this.answers.get(`${turn}.${step}`);
  }

  toolResult(call: ToolCallPart, safeToRepeat: boolean): ToolResultPart | undefined {
    const result = this.journaled.toolEnds.get(call.id);
    if (result) return result;
    if (this.offline) return errorResult(call, `Replay: the journal holds no result for tool call ${call.id}.`);
    if (!this.journaled.toolStarts.has(call.id) || safeToRepeat) return undefined;
    return errorResult(
      call,
      `Tool ${call.name} was interrupted by a restart before it finished; it may or may not have taken effect, ` +
        'and it was not run again.',
    );
  }

  /**
   * Steers journaled that had not joined the history when the process stopped, and are not held by the restored
   * state either (`held` of them are): they are sent again. Steers join in the order sent.
   */
  waitingSteers(held: number): SteerRecord[] {
    return this.steers.filter((record) => record.n >= this.joinedSteers + held);
  }

  /** The snapshot to restore, with its inputs' messages put back; undefined for a new agent. */
  restoredSnapshot(): { snapshot: unknown; context: AgentContext } | undefined {
    const record = this.snapshot;
    if (!record) return undefined;
    if (record.v !== SNAPSHOT_VERSION) {
      throw new JournalError(
        `Agent "${this.agentId}": its snapshot has version ${record.v}, this Troupe restores version ${SNAPSHOT_VERSION}`,
      );
    }
    const persisted = record.snapshot as { value: StateValue; context: AgentContext };
    try {
      // A state the machine does not have (its name damaged) would fail later, inside the actor.
      agentMachine.resolveState({ value: persisted.value, context: persisted.context });
    } catch (error) {
      throw new JournalError(`Agent "${this.agentId}": its snapshot names a state it cannot be restored to (${error})`);
    }
    const fill = <T extends { inputId: string; messages: AgentContext['queue'][number]['messages'] }>(input: T): T =>
      input.messages.length === 0 && this.inputs.has(input.inputId)
        ? { ...input, messages: this.inputs.get(input.inputId)?.messages ?? [] }
        : input;
    const { context } = persisted;
    const restored: AgentContext = {
      ...context,
      queue: context.queue.map(fill).filter((input) => input.messages.length > 0),
      ...(context.current ? { current: fill(context.current) } : {}),
    };
    return { snapshot: { ...persisted, context: restored }, context: restored };
  }

  private take(record: JournalRecord): void {
    if ('a' in record && record.a !== this.agentId) return;
    if ('s' in record && record.s > this.lastSeq) this.lastSeq = record.s;
    if ('t' in record && record.t > this.lastTime) this.lastTime = record.t;
    const { journaled } = this;
    switch (record.k) {
      case 'input':
        this.inputs.set(record.inputId, record);
        journaled.inputs.add(record.inputId);
        break;
      case 'dropped':
        this.inputs.delete(record.inputId);
        break;
      case 'msg':
        this.message(record);
        break;
      case 'tool_start':
        journaled.toolStarts.add(record.id);
        break;
      case 'tool_end':
        journaled.toolEnds.set(record.id, record.result);
        break;
      case 'asked':
        journaled.asked.add(record.id);
        break;
      case 'approval':
        this.approvals.set(record.id, record);
        journaled.approvals.add(record.id);
        break;
      case 'turn_start':
        journaled.turnStarts.add(record.inputId);
        this.turnInputs.set(record.turn, record.inputId);
        break;
      case 'turn_end':
        journaled.turnEnds.add(record.inputId);
        break;
      case 'run':
        this.running = record.running;
        journaled.running = record.running;
        break;
      case 'snapshot':
        this.snapshot = record;
        break;
      case 'compaction':
        this.compaction = record;
        break;
      case 'steer':
        this.steers.push(record);
        journaled.steers = Math.max(journaled.steers, record.n + 1);
        break;
    }
  }

  private message(record: MessageRecord): void {
    const stored = record.m;
    let message: Message;
    if ('input' in stored) {
      const input = this.inputs.get(stored.input)?.messages[stored.n];
      if (!input) throw new JournalError(`Agent "${this.agentId}": message ${record.i} refers to a missing input`);
      message = input;
    } else if (stored.role === 'tool') {
      const content = stored.content.map((part) => {
        if (!('ref' in part)) return part;
        const result = this.journaled.toolEnds.get(part.ref);
        if (!result) throw new JournalError(`Agent "${this.agentId}": message ${record.i} refers to a missing result`);
        return result;
      });
      message = { role: 'tool', content };
    } else {
      message = stored;
      if (message.role === 'user' && message.source === 'steer') this.joinedSteers++;
    }
    this.messages[record.i] = message;
    this.turnOf[record.i] = record.turn;
    this.journaled.messages = Math.max(this.journaled.messages, record.i + 1);
    if (message.role === 'assistant') this.answers.set(`${record.turn}.${record.step}`, message);
  }
}

/**
 * Marks the events a resumed agent publishes again while it replays its journal (`replayed: true`): those of the
 * messages the journal holds and of the steps that made them, a tool call's start and end when the journal holds
 * them, an approval asked again whose answer the journal holds. A live fact is never marked: an approval still
 * unanswered is a real question for whoever listens now, and the step after the journal is new. Until the agent's
 * next live step starts (or its run ends); returns the way to stop earlier.
 */
export function markReplayed(env: AgentEnv, journal: AgentJournal, link: JournalLink): () => void {
  const count = journal.messages.length;
  const { toolStarts, toolEnds } = journal.journaled;
  const behind = () => env.transcript.length < count;
  const unmark = link.markReplayed((body) => {
    switch (body.type) {
      case 'tool_execution_start':
        return toolStarts.has(body.toolCallId);
      case 'tool_execution_end':
        return toolEnds.has(body.toolCallId);
      case 'approval_requested':
        return journal.approvals.has(body.toolCallId);
      case 'message_end':
      case 'usage':
        // Announced right after a message joins the history (usage after its answer): the journal's last message
        // is the one at count - 1.
        return env.transcript.length <= count;
      default:
        return behind();
    }
  });
  const stop = () => {
    offStep();
    offEnd();
    unmark();
  };
  const offStep = env.bus.on(
    'step_start',
    () => {
      if (!behind()) stop();
    },
    env.agentId,
  );
  // A run's end stops it, unless the journal goes on with a turn that notifications opened (a subagent woken).
  const offEnd = env.bus.on(
    'agent_end',
    () => {
      if (!behind() || !journal.notifyTurnAt(env.transcript.length)) stop();
    },
    env.agentId,
  );
  return stop;
}

/**
 * Runs `run` once the agent's history holds the journal's first `count` messages: its replay has caught up, and a
 * user message sent from then on joins a live step. Sent earlier (a steer, a background result), it would join a
 * replayed step whose journaled answer was made without it, and the journaled answer would follow it again: a
 * history with a step twice and a tool call without its result. Run at the latest when the agent goes idle (a
 * replay that ended short of the journal), unless `waitAtIdle` says the replay goes on from there (a turn the
 * journal says a notification opened). Returns the way to stop waiting.
 */
export function afterCatchUp(
  env: AgentEnv,
  actor: AnyActorRef,
  count: number,
  run: () => void,
  waitAtIdle: () => boolean = () => false,
): () => void {
  if (env.transcript.length >= count) {
    run();
    return () => {};
  }
  let done = false;
  const stop = () => {
    off();
    subscription.unsubscribe();
  };
  const fire = () => {
    if (done) return;
    done = true;
    stop();
    run();
  };
  const off = env.bus.on(
    'message_end',
    () => {
      if (env.transcript.length >= count) fire();
    },
    env.agentId,
  );
  const subscription = actor.subscribe({
    next: (snapshot: { matches(state: string): boolean }) => {
      if (snapshot.matches('idle') && !waitAtIdle()) fire();
    },
    error: () => {},
  });
  return stop;
}
