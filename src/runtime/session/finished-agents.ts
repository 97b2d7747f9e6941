import { addUsage, emptyUsage } from '../../protocol/index.js';
import type { JournalRecord } from '../../session/index.js';
import type { ArchivedAgent, FinishedAgent } from '../tree/history-archive.js';
import { AgentJournal } from './restore.js';

/**
 * The finished subagents of a journaled tree, in the order their tasks settled, each with its whole history (all
 * its tasks, a restarted attempt's messages in place of the failed one's) and its own and its subtree's usage: what
 * a reopened tree keeps of them, so that they are readable and resumable by id as before the restart. An agent
 * whose last task had not settled is left out: its task's replay rebuilds it.
 */
export function finishedAgents(records: readonly JournalRecord[]): FinishedAgent[] {
  const tasks = new Map<string, { agentId: string; owner: string; profile: string }>();
  /** Each task agent's history length as journaled so far, and where each task's first attempt started. */
  const lengths = new Map<string, number>();
  const starts = new Map<string, number>();
  const lastTask = new Map<string, string>();
  /** Settled agents by id in settle order (a Map keeps insertion order), with whether they were kept. */
  const settled = new Map<string, boolean>();
  const own = new Map<string, JournalRecord[]>();
  for (const record of records) {
    if (record.k === 'batch') {
      for (const task of record.tasks) tasks.set(task.taskId, { ...task, owner: record.a });
    } else if (record.k === 'task' && tasks.has(record.taskId)) {
      const { agentId } = record;
      if (record.ev === 'started') {
        const at = (record.attempt ?? 0) === 0 ? (lengths.get(agentId) ?? 0) : (starts.get(record.taskId) ?? 0);
        if ((record.attempt ?? 0) === 0) starts.set(record.taskId, at);
        lengths.set(agentId, at);
        lastTask.set(agentId, record.taskId);
        settled.delete(agentId);
      } else if (lastTask.get(agentId) === record.taskId) {
        settled.delete(agentId);
        settled.set(agentId, record.status !== 'cancelled');
      }
    }
    if (!('a' in record)) continue;
    if (record.k === 'msg' && lengths.has(record.a)) lengths.set(record.a, record.i + 1);
    let list = own.get(record.a);
    if (!list) {
      list = [];
      own.set(record.a, list);
    }
    list.push(record);
  }
  const agents = new Map<string, ArchivedAgent>();
  for (const agentId of settled.keys()) {
    const task = tasks.get(lastTask.get(agentId) ?? '');
    if (!task) continue;
    const journal = new AgentJournal(agentId, own.get(agentId) ?? []);
    const messages = journal.messages.slice(0, lengths.get(agentId) ?? 0);
    const usage = emptyUsage();
    for (const message of messages) if (message.role === 'assistant') addUsage(usage, message.usage);
    agents.set(agentId, { messages, usage, subtreeUsage: { ...usage }, ownerId: task.owner, profile: task.profile });
  }
  // A finished agent's subtree holds its finished descendants' usage (the live ones report to a live owner).
  for (const agent of agents.values()) {
    for (let owner = agents.get(agent.ownerId); owner; owner = agents.get(owner.ownerId)) {
      addUsage(owner.subtreeUsage, agent.usage);
    }
  }
  return [...settled].flatMap(([agentId, kept]) => {
    const archived = agents.get(agentId);
    return archived ? [{ agentId, kept, archived }] : [];
  });
}
