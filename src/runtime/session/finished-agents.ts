import { addUsage, emptyUsage } from '../../protocol/index.js';
import type { JournalRecord } from '../../session/index.js';
import type { ArchivedAgent, FinishedAgent } from '../tree/history-archive.js';
import type { AgentHistories } from './agent-histories.js';

/**
 * The finished subagents of a journaled tree, in the order their tasks settled, each with its whole history (all
 * its tasks, a restarted attempt's messages in place of the failed one's) and its own and its subtree's usage: what
 * a reopened tree keeps of them, so that they are readable and resumable by id as before the restart. An agent
 * whose last task had not settled is left out: its task's replay rebuilds it.
 */
export function finishedAgents(records: readonly JournalRecord[], histories: AgentHistories): FinishedAgent[] {
  const tasks = new Map<string, { agentId: string; owner: string; profile: string }>();
  const lastTask = new Map<string, string>();
  /** Settled agents by id in settle order (a Map keeps insertion order), with whether they were kept. */
  const settled = new Map<string, boolean>();
  for (const record of records) {
    if (record.k === 'batch') {
      for (const task of record.tasks) tasks.set(task.taskId, { ...task, owner: record.a });
    } else if (record.k === 'task' && tasks.has(record.taskId)) {
      const { agentId } = record;
      if (record.ev === 'started') {
        lastTask.set(agentId, record.taskId);
        settled.delete(agentId);
      } else if (lastTask.get(agentId) === record.taskId) {
        settled.delete(agentId);
        settled.set(agentId, record.status !== 'cancelled');
      }
    }
  }
  const agents = new Map<string, ArchivedAgent>();
  for (const agentId of settled.keys()) {
    const task = tasks.get(lastTask.get(agentId) ?? '');
    if (!task) continue;
    const messages = histories.historyOf(agentId);
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
