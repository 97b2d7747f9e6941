import { costOf, type Prices } from '../../context/index.js';
import type { Usage } from '../../protocol/index.js';
import type { JournalRecord } from '../../session/index.js';

/** What a restored account starts from: what was spent before the restart, and since when its turn ran. */
export interface RestoredSpend {
  tokens: number;
  cost: number;
  /** When the turn started (ms since the epoch, from its `turn_start` record): its wall time counts the downtime. */
  startedAt?: number;
}

/** An answer as the journal holds it: who spent what, where. */
interface Spent {
  agentId: string;
  /** Its record's position: a replaying subagent replays what follows its task's last start. */
  at: number;
  /** Its index in its agent's history (the root replays from its last snapshot's). */
  index: number;
  turn: number;
  tokens: number;
  cost: number;
}

/** A task's agent was started by `owner`'s turn `turn` (the batch record at position `at`). */
interface OwnerLink {
  owner: string;
  batchId: string;
  turn: number | undefined;
  at: number;
}

const tokensOf = (usage: Usage) => usage.input + usage.output + usage.cacheRead + usage.cacheWrite;

/**
 * Budgets are not journaled: what an account had spent is derived, on resume, from the answers the journal holds
 * (each carries its usage; cost comes from the price table). A restored tree replays part of it: the root the steps
 * after its last snapshot, each unsettled task's agent everything since its task started; those answers charge
 * their accounts again as they replay. Every other answer is charged once, to the account that would have counted
 * it and is open again: the turn of the nearest replaying ancestor that spent it (the root's turn in flight, or a
 * replaying subagent's turn, opened as its replay reaches it), from where it counts up the chain like any charge;
 * what no open account claims (the root's earlier turns, settled work of those turns) counts only towards the
 * agent's lifetime account.
 */
export class SpendLedger {
  private readonly claims = new Map<string, RestoredSpend>();
  private readonly unclaimedSpend: RestoredSpend = { tokens: 0, cost: 0 };
  private readonly turnStarts = new Map<string, number>();
  private readonly owners = new Map<string, OwnerLink[]>();
  /** Batches with a budget of their own and open tasks: a restore opens their account again. */
  private readonly reopened = new Set<string>();
  /** Agents of tasks that had not settled (they replay), and where their last attempt started. */
  private readonly replayFrom = new Map<string, number>();

  constructor(
    records: readonly JournalRecord[],
    private readonly rootId: string,
    /** The root's turn in flight at the restart (undefined when it was idle), and its replay's first message. */
    private readonly root: { turn: number; replayFrom: number } | undefined,
    pricesOf: (model: string) => Prices | undefined,
  ) {
    const turnOf = new Map<string, number>();
    const agentOfTask = new Map<string, string>();
    const settled = new Set<string>();
    const lastStart = new Map<string, number>();
    const spent: Spent[] = [];
    const budgeted = new Map<string, ReadonlyArray<{ taskId: string }>>();
    records.forEach((record, at) => {
      switch (record.k) {
        case 'turn_start':
          turnOf.set(record.a, record.turn);
          this.turnStarts.set(`${record.a}/${record.turn}`, record.t);
          break;
        case 'batch':
          if (record.budget) budgeted.set(record.batchId, record.tasks);
          for (const task of record.tasks) {
            agentOfTask.set(task.taskId, task.agentId);
            const links = this.owners.get(task.agentId) ?? [];
            links.push({ owner: record.a, batchId: record.batchId, turn: turnOf.get(record.a), at });
            this.owners.set(task.agentId, links);
          }
          break;
        case 'task':
          if (record.ev === 'settled') settled.add(record.taskId);
          else lastStart.set(record.agentId, at);
          break;
        case 'msg': {
          const message = record.m;
          if (!('role' in message) || message.role !== 'assistant') break;
          spent.push({
            agentId: record.a,
            at,
            index: record.i,
            turn: record.turn,
            tokens: tokensOf(message.usage),
            cost: costOf(message.usage, pricesOf(message.model)) ?? 0,
          });
          break;
        }
      }
    });
    for (const [taskId, agentId] of agentOfTask) {
      if (!settled.has(taskId)) this.replayFrom.set(agentId, lastStart.get(agentId) ?? Number.POSITIVE_INFINITY);
    }
    // A batch with a budget of its own that is started again (it has open tasks) counts its settled tasks itself.
    for (const [batchId, tasks] of budgeted) {
      if (tasks.some((task) => !settled.has(task.taskId))) this.reopened.add(batchId);
    }
    for (const answer of spent) {
      if (this.replays(answer)) continue;
      const key = this.claimOf(answer.agentId, answer.at, answer.turn);
      const into = key === undefined ? this.unclaimedSpend : this.claim(key);
      into.tokens += answer.tokens;
      into.cost += answer.cost;
    }
  }

  /** What turn `turn` of `agentId` had spent (its subtree's answers that will not replay), and when it started. */
  turn(agentId: string, turn: number): RestoredSpend | undefined {
    const key = `${agentId}/${turn}`;
    const claimed = this.claims.get(key);
    const startedAt = this.turnStarts.get(key);
    if (!claimed && startedAt === undefined) return undefined;
    const restored: RestoredSpend = { tokens: claimed?.tokens ?? 0, cost: claimed?.cost ?? 0 };
    if (startedAt !== undefined) restored.startedAt = startedAt;
    return restored;
  }

  /** What the settled tasks of batch `batchId` (with a budget of its own, started again) had spent. */
  batch(batchId: string): RestoredSpend | undefined {
    return this.claims.get(`batch ${batchId}`);
  }

  /** What no restored turn counts: charged to the agent's lifetime account alone. */
  get unclaimed(): RestoredSpend {
    return this.unclaimedSpend;
  }

  private replays(answer: Spent): boolean {
    if (answer.agentId === this.rootId) return this.root !== undefined && answer.index >= this.root.replayFrom;
    const from = this.replayFrom.get(answer.agentId);
    return from !== undefined && answer.at >= from;
  }

  /** The turn whose account counts spending by `agentId` at record `at` in its turn `turn`, walking up the tree. */
  private claimOf(agentId: string, at: number, turn: number): string | undefined {
    for (let agent = agentId, position = at, inTurn = turn; ; ) {
      if (agent === this.rootId) return this.root?.turn === inTurn ? `${agent}/${inTurn}` : undefined;
      const from = this.replayFrom.get(agent);
      if (from !== undefined && position >= from) return `${agent}/${inTurn}`;
      const link = this.ownerAt(agent, position);
      if (!link) return undefined;
      if (this.reopened.has(link.batchId)) return `batch ${link.batchId}`;
      // A supervisor's batch: no turn of its own counts it.
      if (link.turn === undefined) return undefined;
      agent = link.owner;
      position = link.at;
      inTurn = link.turn;
    }
  }

  /** The batch that started `agentId`'s task in effect at record `at` (an agent id can be resumed by a later task). */
  private ownerAt(agentId: string, at: number): OwnerLink | undefined {
    const links = this.owners.get(agentId);
    if (!links) return undefined;
    let found: OwnerLink | undefined;
    for (const link of links) if (link.at <= at) found = link;
    return found;
  }

  private claim(key: string): RestoredSpend {
    let claimed = this.claims.get(key);
    if (!claimed) {
      claimed = { tokens: 0, cost: 0 };
      this.claims.set(key, claimed);
    }
    return claimed;
  }
}
