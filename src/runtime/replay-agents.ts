import type { AgentEvent, Model } from '../protocol/index.js';
import type { HeaderRecord, JournalRecord } from '../session/index.js';
import { type AnyTool, defineTool, jsonSchema } from '../tools/index.js';
import { createAgent } from './agent/agent.js';
import type { AgentConfig } from './agent/config.js';
import { NOT_AGENTS, ReplaySink } from './session/replay.js';
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
 * ends. The root comes first (when the session has one: a supervisor's has only its agents), then the others in the
 * order they first appear in the journal.
 */
export async function replayAgents(
  header: HeaderRecord,
  records: readonly JournalRecord[],
  config: ReplayConfig,
  model: Model,
): Promise<AgentReplay[]> {
  const replays: AgentReplay[] = [];
  for (const agentId of agentsOf(records)) {
    const sink = new ReplaySink();
    const session = new Session({ ...header, agentId }, records, sink, records);
    const { subagents: _subagents, ...rest } = config;
    const agent = createAgent({
      ...rest,
      id: agentId,
      tools: toolsOf(session.journal, config),
      model: config.model ?? model,
      retry: false,
      session,
    });
    const events: AgentEvent[] = [];
    agent.on('*', (event) => {
      if (event.type !== 'message_update') events.push(event);
    });
    try {
      await session.idle();
    } finally {
      session.close();
      await agent.stop();
    }
    replays.push({ agentId, events, records: sink.records });
  }
  return replays;
}

/** The agents with facts of their own in the journal, in the order they first appear (the root's come first). */
function agentsOf(records: readonly JournalRecord[]): string[] {
  const agents = new Set<string>();
  for (const record of records) if (!NOT_AGENTS.has(record.k) && 'a' in record) agents.add(record.a);
  return [...agents];
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
