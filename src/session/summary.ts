import { addUsage, emptyUsage, type Usage, type UserMessage } from '../protocol/index.js';
import type { ForkPoint, HeaderRecord, JournalRecord } from './records.js';

/** The version of a saved summary: another is not read (the journal is, whole). */
const SUMMARY_VERSION = 2;

/** What `list()` shows of a session, folded record by record from its journal. */
export interface SummaryState {
  /** The root's id (an agent, or a supervisor). */
  agentId: string;
  title?: string;
  /** Milliseconds since the epoch: the header's time, then the root's last timed record. */
  lastActivity: number;
  /** Tokens of the whole tree: every answer of the root and of its subagents. */
  usage: Usage;
  /** Messages in the root's history. */
  messages: number;
  /** The root's last run record said `running`: the process stopped in the middle of a run. */
  running: boolean;
  /** The root is an agent (it has a machine snapshot); without one, a supervisor (or nothing yet). */
  agent: boolean;
  /** Subagent tasks of the tree's batches, and how many of them settled. */
  tasks: number;
  settled: number;
  forkOf?: ForkPoint;
  /** The root's first user message was seen: the title is its text (none when it had no text). */
  titled?: true;
}

/**
 * The summary of a session's journal, kept as records are written: the writer saves it beside the journal now and
 * then (a store's index), so that listing many long sessions reads each one's summary and the few records after it,
 * not every journal whole. Only the root's facts count, as the journal's reader counts them, but for the tokens: the
 * whole tree's, as a run totals them.
 */
export class SessionSummary {
  readonly state: SummaryState;
  /** Input messages of the root not yet in its history: the title is the first prompt's text, when it joins. */
  private readonly inputs = new Map<string, UserMessage[]>();

  constructor(from: HeaderRecord | SummaryState) {
    if ('k' in from) {
      this.state = {
        agentId: from.agentId,
        lastActivity: from.t,
        usage: emptyUsage(),
        messages: 0,
        running: false,
        agent: false,
        tasks: 0,
        settled: 0,
        ...(from.title === undefined ? {} : { title: from.title }),
        ...(from.forkOf ? { forkOf: from.forkOf } : {}),
      };
    } else this.state = { ...from, usage: { ...from.usage } };
  }

  /** A summary saved by {@link toJSON}; undefined when the text is not one. */
  static parse(text: string): SessionSummary | undefined {
    try {
      const { v, ...state } = JSON.parse(text) as SummaryState & { v?: number };
      if (v !== SUMMARY_VERSION || typeof state.agentId !== 'string' || typeof state.lastActivity !== 'number') {
        return undefined;
      }
      return new SessionSummary(state);
    } catch {
      return undefined;
    }
  }

  toJSON(): SummaryState & { v: number } {
    return { v: SUMMARY_VERSION, ...this.state };
  }

  take(record: JournalRecord): void {
    const state = this.state;
    switch (record.k) {
      case 'batch':
        state.tasks += record.tasks.length;
        return;
      case 'task':
        if (record.ev === 'settled') state.settled++;
        return;
      case 'session':
        return;
      case 'msg':
        if ('role' in record.m && record.m.role === 'assistant' && record.m.usage)
          addUsage(state.usage, record.m.usage);
        break;
    }
    if (record.a !== state.agentId) return;
    if ('t' in record && record.t > state.lastActivity) state.lastActivity = record.t;
    switch (record.k) {
      case 'input':
        if (!state.titled) this.inputs.set(record.inputId, record.messages);
        break;
      case 'msg': {
        if (record.i + 1 > state.messages) state.messages = record.i + 1;
        const m = record.m;
        if ('input' in m) {
          if (!state.titled) this.titleFrom(this.inputs.get(m.input)?.[m.n]);
        } else if (m.role === 'user' && !state.titled) this.titleFrom(m);
        break;
      }
      case 'run':
        state.running = record.running;
        break;
      case 'snapshot':
        state.agent = true;
        break;
    }
  }

  private titleFrom(message: UserMessage | undefined): void {
    if (!message) return;
    this.state.titled = true;
    this.inputs.clear();
    if (this.state.title !== undefined) return; // the header's
    const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    if (text) this.state.title = text.slice(0, 80);
  }
}
