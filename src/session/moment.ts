// One moment of a whole tree, read from its journal alone: the inspector's timeline and `fork --at` both start from
// it. Pure and total: no model, no tool, no store; a record that refers to something the journal does not hold (a
// hostile or cut journal) is skipped and named in `gaps`, never thrown.
import type { Message, ToolResultPart, TurnStopReason, Usage } from '../protocol/index.js';
import { addUsage, emptyUsage } from '../protocol/index.js';
import type { JournalRecord } from './records.js';

/** Agent `id` as it stood at the moment. */
export interface AgentMoment {
  id: string;
  /** The agent that started it (a subagent's or member's owner); absent for the root. */
  owner?: string;
  /** The task it runs for its owner, and the profile it was started with. */
  taskId?: string;
  profile?: string;
  /** In a run (a turn or turns under way) or idle. */
  running: boolean;
  /** Turns started so far, and the stop reason of the last one that ended. */
  turns: number;
  lastStop?: TurnStopReason;
  /**
   * The agent machine's state (XState's `value`) at the moment: its last snapshot's, moved on by the facts journaled
   * after it that name a state (`stateFrom: 'journal'`: a run's end, a tool running, a question asked, a compaction).
   */
  state?: unknown;
  /** Where `state` was read: the snapshot, or the fact after it, at seq `stateAt`. */
  stateFrom?: 'snapshot' | 'journal';
  stateAt?: number;
  /** Its history as it stood: tool results and turn inputs resolved. */
  messages: Message[];
  /** Tokens of its turns that had ended. */
  usage: Usage;
  /** Tool calls started, without a result yet. */
  runningTools: Array<{ id: string; name: string }>;
  /** Calls waiting for a person's answer. */
  pendingApprovals: string[];
  /** Tasks it started, by id: `running` until their settle record. */
  tasks: Array<{ taskId: string; agentId: string; status: string }>;
  compactions: number;
}

/** The whole tree at one moment: every agent that existed by then, the root first, then in order of appearance. */
export interface TreeMoment {
  /** The seq asked for. */
  seq: number;
  /** How many records of the journal (its header included) the moment holds: a fork at `seq` keeps as many. */
  records: number;
  agents: AgentMoment[];
  /** Records skipped because what they refer to is not in the journal. */
  gaps: string[];
}

/**
 * The index of the last record that belongs to the moment `atSeq`: every record with a seq up to it, and the records
 * without a seq written right after one of those (a snapshot, an approval, a task's settle), which are the same
 * step's facts.
 */
export function cutAt(records: readonly JournalRecord[], atSeq: number): number {
  let cut = 0;
  records.forEach((record, i) => {
    if ('s' in record && record.s <= atSeq) cut = i;
    else if (!('s' in record) && i === cut + 1 && record.k !== 'session') cut = i;
  });
  return cut;
}

/** The tree as it stood at event `seq` of the journal `records` (its header first). */
export function momentAt(records: readonly JournalRecord[], seq: number): TreeMoment {
  const cut = cutAt(records, seq);
  const reader = new MomentReader();
  // Sliced, so an empty journal (whose cut is 0 too) holds no record.
  const held = records.slice(0, cut + 1);
  for (const record of held) reader.read(record);
  return { seq, records: held.length, agents: reader.agents(), gaps: reader.gaps };
}

/** What one agent's records add up to; messages kept by their index in its history. */
interface AgentState extends Omit<AgentMoment, 'messages' | 'runningTools' | 'pendingApprovals' | 'tasks'> {
  history: Message[];
  tools: Map<string, string>;
  asked: Set<string>;
  started: Map<string, { taskId: string; agentId: string; status: string }>;
}

const step = (inner: unknown) => ({ running: { turn: { step: inner } } });

/** The state a fact puts its agent in, for the facts that name one. */
function stateOfFact(record: JournalRecord): unknown {
  switch (record.k) {
    case 'run':
      return record.running ? { running: 'nextTurn' } : 'idle';
    case 'tool_start':
      return step({ tools: 'executing' });
    case 'asked':
      return step({ tools: 'awaitingApproval' });
    case 'compaction':
      return step('compacting');
    default:
      return undefined;
  }
}

class MomentReader {
  readonly gaps: string[] = [];
  /** The seq of the last record read that had one: a record without a seq belongs to it. */
  private seq = -1;
  private readonly byId = new Map<string, AgentState>();
  private readonly inputs = new Map<string, Message[]>();
  /** Results by agent and call id: a call id is unique only within its agent. */
  private readonly results = new Map<string, ToolResultPart>();

  agents(): AgentMoment[] {
    return [...this.byId.values()].map(({ history, tools, asked, started, ...rest }) => ({
      ...rest,
      messages: [...history],
      runningTools: [...tools].map(([id, name]) => ({ id, name })),
      pendingApprovals: [...asked],
      tasks: [...started.values()].map((task) => ({ ...task })),
    }));
  }

  private agent(id: string): AgentState {
    let state = this.byId.get(id);
    if (!state) {
      state = {
        id,
        running: false,
        turns: 0,
        usage: emptyUsage(),
        compactions: 0,
        history: [],
        tools: new Map(),
        asked: new Set(),
        started: new Map(),
      };
      this.byId.set(id, state);
    }
    return state;
  }

  read(record: JournalRecord): void {
    if ('s' in record && Number.isSafeInteger(record.s)) this.seq = Math.max(this.seq, record.s);
    const named = stateOfFact(record);
    if (named !== undefined && 'a' in record) {
      const agent = this.agent(record.a);
      Object.assign(agent, { state: named, stateFrom: 'journal', stateAt: this.seq });
    }
    switch (record.k) {
      case 'session':
        this.agent(record.agentId);
        return;
      case 'input':
        this.agent(record.a);
        this.inputs.set(record.inputId, record.messages);
        return;
      case 'msg':
        this.message(record);
        return;
      case 'tool_start':
        this.agent(record.a).tools.set(record.id, record.name);
        return;
      case 'tool_end':
        this.agent(record.a).tools.delete(record.id);
        this.results.set(`${record.a}\0${record.id}`, record.result);
        return;
      case 'asked':
        this.agent(record.a).asked.add(record.id);
        return;
      case 'approval':
        this.agent(record.a).asked.delete(record.id);
        return;
      case 'turn_start':
        this.agent(record.a).turns++;
        return;
      case 'turn_end': {
        const agent = this.agent(record.a);
        agent.lastStop = record.stopReason;
        addUsage(agent.usage, record.usage);
        return;
      }
      case 'run':
        this.agent(record.a).running = record.running;
        return;
      case 'snapshot': {
        const snapshot = record.snapshot;
        const agent = this.agent(record.a);
        agent.state =
          typeof snapshot === 'object' && snapshot !== null && 'value' in snapshot ? snapshot.value : undefined;
        agent.stateFrom = 'snapshot';
        agent.stateAt = this.seq;
        return;
      }
      case 'batch':
        for (const task of record.tasks) {
          this.agent(record.a).started.set(task.taskId, {
            taskId: task.taskId,
            agentId: task.agentId,
            status: 'running',
          });
          const child = this.agent(task.agentId);
          child.owner = record.a;
          child.taskId = task.taskId;
          child.profile = task.profile;
        }
        return;
      case 'task': {
        const owner = this.agent(record.a);
        const child = this.agent(record.agentId);
        child.owner ??= record.a;
        child.taskId ??= record.taskId;
        const task = owner.started.get(record.taskId) ?? { taskId: record.taskId, agentId: record.agentId, status: '' };
        task.status = record.ev === 'settled' ? (record.status ?? 'settled') : 'running';
        owner.started.set(record.taskId, task);
        return;
      }
      case 'compaction':
        this.agent(record.a).compactions++;
        return;
      default:
        // steer, notice, schedule, remember: facts of an agent that change none of the above.
        this.agent(record.a);
    }
  }

  private message(record: Extract<JournalRecord, { k: 'msg' }>): void {
    const agent = this.agent(record.a);
    const stored = record.m;
    let message: Message | undefined;
    if ('input' in stored) {
      message = this.inputs.get(stored.input)?.[stored.n];
    } else if (stored.role === 'tool') {
      const content: ToolResultPart[] = [];
      for (const part of stored.content) {
        const result = 'ref' in part ? this.results.get(`${record.a}\0${part.ref}`) : part;
        if (!result) break;
        content.push(result);
      }
      message = content.length === stored.content.length ? { role: 'tool', content } : undefined;
    } else {
      message = stored;
    }
    if (!message || !Number.isSafeInteger(record.i) || record.i < 0) {
      this.gaps.push(`agent "${record.a}": message ${record.i} refers to what the journal does not hold`);
      return;
    }
    // Messages join a history in order: one past its end (a hostile index) would leave a hole, so it is a gap.
    if (record.i > agent.history.length) {
      this.gaps.push(`agent "${record.a}": message ${record.i} comes after a missing one`);
      return;
    }
    agent.history[record.i] = message;
  }
}
