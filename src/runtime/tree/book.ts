import type { Message, TaskStatus, Usage } from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';
import { type ArchivedAgent, type FinishedAgent, HistoryArchive } from './history-archive.js';
import { KeptAgents } from './kept.js';
import type { Owner, TreeNode } from './nodes.js';
import type { TreeRegistry } from './registry.js';
import type { TaskResult } from './subagent-tools.js';
import type { Limits } from './supervision-options.js';
import { TaskBook } from './tasks.js';
import { TreeUsage } from './usage.js';

/**
 * What one tree remembers: its task records and the batches waiting for them, who waits for a task's result, the
 * histories of stopped agents, the finished agents each owner keeps alive, and the usage accounts. Agents that
 * are alive are the registry's; the book answers for both the live and the archived.
 */
export class TreeBook {
  readonly tasks: TaskBook;
  private readonly archive: HistoryArchive;
  private readonly kept: KeptAgents;
  private readonly accounts: TreeUsage;
  /** Who waits for a task's result (`supervisor.result`): told once its settle is stored. */
  private readonly awaited = new Map<string, Array<(result: TaskResult) => void>>();

  constructor(
    private readonly registry: TreeRegistry,
    bus: EventBus,
    limits: Limits,
  ) {
    this.tasks = new TaskBook(limits.keepHistory);
    this.archive = new HistoryArchive(limits.keepHistory);
    this.kept = new KeptAgents(limits.keepFinished);
    this.accounts = new TreeUsage(bus, registry);
  }

  /** The caller's task, as the `task_status` tool reports it. */
  status(callerId: string, taskId: string): { status: TaskStatus; agentId: string; text?: string } | undefined {
    const record = this.tasks.get(taskId);
    if (!record || record.ownerId !== callerId) return undefined;
    return { status: record.status, agentId: record.agentId, ...(record.result ? { text: record.result.text } : {}) };
  }

  /** A promise of an open task's result, kept until its settle is stored (see TreeEffects.settleTask). */
  waitFor(taskId: string): Promise<TaskResult> {
    return new Promise((resolve) => {
      const awaited = this.awaited.get(taskId);
      if (awaited) awaited.push(resolve);
      else this.awaited.set(taskId, [resolve]);
    });
  }

  /** Whoever waits for this task's result, once. */
  takeWaiters(taskId: string): Array<(result: TaskResult) => void> | undefined {
    const awaited = this.awaited.get(taskId);
    this.awaited.delete(taskId);
    return awaited;
  }

  /** Whom a task agent answers to: the owner that started it (alive, or recorded with its archived history). */
  ownerOf(agentId: string): Owner | undefined {
    const ownerId = this.registry.node(agentId)?.env.parentId ?? this.archive.get(agentId)?.ownerId;
    return ownerId === undefined ? undefined : this.registry.owner(ownerId);
  }

  /** The history of an agent: alive, or archived after it was stopped. */
  messagesOf(agentId: string): Message[] | undefined {
    const node = this.registry.registered(agentId);
    if (node) return [...node.env.transcript.messages];
    const archived = this.archive.get(agentId);
    return archived ? [...archived.messages] : undefined;
  }

  /** A restored kept agent is alive: it is in its owner's `keepFinished` window, as it was before the restart. */
  whereIs(agentId: string): 'alive' | 'archived' | 'unknown' {
    if (this.registry.registered(agentId) || this.archive.isKept(agentId)) return 'alive';
    return this.archive.has(agentId) ? 'archived' : 'unknown';
  }

  get usage(): Usage {
    return { ...this.accounts.total };
  }

  /** Usage of one agent, or of its whole subtree (released descendants included). */
  usageOf(agentId: string, scope: 'agent' | 'subtree' = 'agent'): Usage | undefined {
    const node = this.registry.registered(agentId);
    if (node) return { ...(scope === 'agent' ? node.env.totalUsage : node.subtreeUsage) };
    const archived = this.archive.get(agentId);
    if (archived) return { ...(scope === 'agent' ? archived.usage : archived.subtreeUsage) };
    return undefined;
  }

  /** The archived history of a stopped agent, which a resume rebuilds it from. */
  archived(agentId: string): ArchivedAgent | undefined {
    return this.archive.get(agentId);
  }

  /** An agent is being rebuilt from its archived history: it leaves the archive. */
  unarchive(agentId: string): void {
    this.archive.delete(agentId);
  }

  /** A stopped agent's history, kept for a resume (a member's is not: it has no task to resume). */
  archiveNode(node: TreeNode): void {
    if (node.profile === 'member') return;
    this.archive.add(node.id, {
      messages: node.env.transcript.messages,
      usage: node.env.totalUsage,
      subtreeUsage: node.subtreeUsage,
      ownerId: node.env.parentId ?? '',
      profile: node.profile,
    });
  }

  /** A finished agent joins its owner's `keepFinished` window; returns the ones it pushes out, oldest first. */
  keep(ownerId: string, agentId: string): string[] {
    const evicted = this.kept.keep(ownerId, agentId);
    for (const agent of evicted) this.archive.retire(agent);
    return evicted;
  }

  /** The agent is no longer kept idle (it was released, resumed or stopped). */
  forgetKept(ownerId: string, agentId: string): void {
    this.kept.forget(ownerId, agentId);
  }

  /**
   * A reopened session's finished subagents, in the order their tasks settled: each goes through its owner's
   * `keepFinished` window and the archive as it did before the restart, so the same ones are readable and
   * resumable by id (a kept one is rebuilt from its history on resume, as an archived one is).
   */
  restoreFinished(agents: readonly FinishedAgent[]): void {
    for (const { agentId, kept, archived } of agents) {
      this.kept.forget(archived.ownerId, agentId);
      if (!kept) {
        this.archive.add(agentId, archived);
        continue;
      }
      this.archive.restoreKept(agentId, archived);
      this.keep(archived.ownerId, agentId);
    }
  }
}
