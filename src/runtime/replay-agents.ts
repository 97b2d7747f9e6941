import {
  type AgentEvent,
  type AssistantMessage,
  type Model,
  ModelError,
  type ModelErrorCode,
  type SerializedError,
} from '../protocol/index.js';
import type { HeaderRecord, JournalRecord } from '../session/index.js';
import { type AnyTool, defineTool, jsonSchema } from '../tools/index.js';
import { createAgent } from './agent/agent.js';
import type { AgentConfig } from './agent/config.js';
import { agentOf, ownerFacts, ReplaySink } from './session/replay.js';
import type { AgentJournal } from './session/restore.js';
import { Session } from './session/session.js';

/** What a replay is given: the agents' config, without a session; its model is never called. */
export type ReplayConfig = Omit<AgentConfig, 'session' | 'model'> & { model?: Model };

/** One agent's replay: the events it published and the records it wrote (in memory). */
export interface AgentReplay {
  agentId: string;
  events: AgentEvent[];
  records: JournalRecord[];
}

/**
 * Replays every agent of a session, one after another, each alone (see docs/architecture/journal.md): its inputs,
 * steers and approvals given as recorded, each turn opened as the journal opened it (a prompt, a task, notifications),
 * every model answer and tool result taken from its own journal. A subagent tool's call is answered by its journaled
 * result, not by running the subagents again: they replay on their own, so no agent's replay depends on when another's
 * ends; the tree's facts about an owner's tasks are published in its replay where they happened (see feedInputs).
 * A restarted task's agent replays each attempt in turn, the failed ones too. A supervisor's session has no root
 * agent: the supervisor comes first with its task facts, in journal order. Then the root (when the session has one),
 * then the others in the order they first appear in the journal.
 */
export async function replayAgents(
  header: HeaderRecord,
  records: readonly JournalRecord[],
  config: ReplayConfig,
  model: Model,
): Promise<AgentReplay[]> {
  const replays: AgentReplay[] = [];
  const agents = agentsOf(records);
  for (const ownerId of ownersOf(records)) {
    if (!agents.includes(ownerId)) replays.push(replayOwner(records, ownerId));
  }
  for (const agentId of agents) {
    for (const attempt of attemptsOf(records, agentId)) {
      replays.push(await replayAgent(header, attempt, agentId, config, model));
    }
  }
  return replays;
}

/** One agent's replay (one attempt of a restarted task's agent: `records` hold that attempt's facts of it only). */
async function replayAgent(
  header: HeaderRecord,
  records: readonly JournalRecord[],
  agentId: string,
  config: ReplayConfig,
  model: Model,
): Promise<AgentReplay> {
  const sink = new ReplaySink();
  const session = new Session({ ...header, agentId }, records, sink, records);
  const { subagents: _subagents, ...rest } = config;
  const agent = createAgent({
    ...rest,
    id: agentId,
    tools: toolsOf(session.journal, config),
    model: config.model ?? replayModel(records, agentId, model),
    retry: false,
    session,
  });
  const events: AgentEvent[] = [];
  agent.on('*', (event) => {
    if (event.type === 'message_update') return;
    events.push(event);
    sink.heard();
  });
  try {
    await session.idle();
    sink.finish();
  } finally {
    session.close();
    await agent.stop();
  }
  return { agentId, events, records: sink.records };
}

/**
 * The model of an agent's replay, asked only where the journal holds no answer: where the original's model call
 * failed (its turn's end journals the error) it fails alike, failure after failure, and past those as `offline`
 * does (the replay went off its recording). It bears the name of the model the journal's answers came from.
 */
function replayModel(records: readonly JournalRecord[], agentId: string, offline: Model): Model {
  const failures: SerializedError[] = [];
  let answered: AssistantMessage | undefined;
  for (const record of records) {
    if (record.k === 'turn_end' && record.a === agentId && record.error?.name === 'ModelError') {
      failures.push(record.error);
    } else if (!answered && record.k === 'msg' && record.a === agentId && 'role' in record.m) {
      if (record.m.role === 'assistant') answered = record.m;
    }
  }
  return {
    id: answered?.model ?? offline.id,
    provider: answered?.provider ?? offline.provider,
    async *stream(request, signal) {
      const failure = failures.shift();
      if (!failure) {
        yield* offline.stream(request, signal);
        return;
      }
      const { name: _name, code, ...rest } = failure;
      throw new ModelError({ ...rest, code: code as ModelErrorCode, provider: answered?.provider ?? offline.provider });
    },
  };
}

/** A supervisor's replay: the events it published about its tasks, from their records. */
function replayOwner(records: readonly JournalRecord[], ownerId: string): AgentReplay {
  let seq = 0;
  const events = ownerFacts(records, ownerId).map(
    (body) => ({ seq: ++seq, time: Date.now(), agentId: ownerId, turn: 0, step: 0, ...body }) as AgentEvent,
  );
  return { agentId: ownerId, events, records: [] };
}

/** The agents with facts of their own in the journal, in the order they first appear (the root's come first). */
function agentsOf(records: readonly JournalRecord[]): string[] {
  const agents = new Set<string>();
  for (const record of records) {
    const agent = agentOf(record);
    if (agent !== undefined) agents.add(agent);
  }
  return [...agents];
}

/** The owners of the journal's batches, in the order they first appear. */
function ownersOf(records: readonly JournalRecord[]): string[] {
  const owners = new Set<string>();
  for (const record of records) if (record.k === 'batch') owners.add(record.a);
  return [...owners];
}

/**
 * The journal as each attempt of an agent's tasks sees it: a restart (a task's start with `attempt > 0`) begins the
 * agent anew from its task's prompt, so each attempt holds the agent's records from its start to the next one's,
 * with every record of the other agents. One list when the agent never restarted.
 */
function attemptsOf(records: readonly JournalRecord[], agentId: string): JournalRecord[][] {
  const restarts: number[] = [];
  records.forEach((record, i) => {
    if (record.k === 'task' && record.ev === 'started' && record.agentId === agentId && (record.attempt ?? 0) > 0) {
      restarts.push(i);
    }
  });
  if (restarts.length === 0) return [records as JournalRecord[]];
  const bounds = [0, ...restarts, records.length];
  return restarts.concat(records.length).map((_, n) => {
    const [from, to] = [bounds[n] ?? 0, bounds[n + 1] ?? records.length];
    return records.filter((record, i) => agentOf(record) !== agentId || (i >= from && i < to));
  });
}

/**
 * The tools an agent's replay validates its calls against: the config's own (or a profile's) by the names the
 * journal shows it calling, and for a name the config does not hold (a subagent tool, an MCP server's) a stand-in
 * that takes any arguments and never runs. No call runs in a replay: its result comes from the journal.
 */
function toolsOf(journal: AgentJournal, config: ReplayConfig): AnyTool[] {
  const known = new Map<string, AnyTool>();
  for (const profile of Object.values(config.subagents?.profiles ?? {})) {
    for (const tool of profile.tools ?? []) if (typeof tool !== 'string') known.set(tool.name, tool);
  }
  for (const tool of config.tools ?? []) known.set(tool.name, tool);
  const tools = new Map<string, AnyTool>();
  for (const tool of config.tools ?? []) tools.set(tool.name, tool);
  for (const message of journal.messages) {
    if (message?.role !== 'assistant') continue;
    for (const part of message.content) {
      if (part.type === 'tool_call' && !tools.has(part.name)) {
        tools.set(part.name, known.get(part.name) ?? standIn(part.name));
      }
    }
  }
  return [...tools.values()];
}

/** A tool the replay knows only by name: its results come from the journal. */
function standIn(name: string): AnyTool {
  return defineTool({
    name,
    description: `${name} (replayed from a journal)`,
    schema: jsonSchema({ type: 'object', additionalProperties: true }),
    execute: () => {
      throw new Error(`${name} cannot run in a replay`);
    },
  });
}
