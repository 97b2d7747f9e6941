// Budgets as events, machine events and getState() show them; the accounts are src/runtime/budget/budget.ts.

/**
 * What a turn (and everything it starts) may spend. `tokens` counts every token billed (input, output, cache reads
 * and writes); `costUsd` uses the model's prices (src/context's table; a model without known prices costs 0);
 * `timeMs` is wall time from the turn's start.
 */
export interface BudgetLimits {
  tokens?: number;
  costUsd?: number;
  timeMs?: number;
}

export type BudgetLimit = 'tokens' | 'cost' | 'time';

/** Which account ran out, of what: the agent's own, or an ancestor's (a parent's turn, a swarm's). */
export interface BudgetExhaustion {
  limit: BudgetLimit;
  /** The account that ran out: an agent id (its turn), `batch <id>` for a swarm's, `total <id>` for a lifetime. */
  account: string;
  max: number;
  spent: number;
}

/**
 * One account of a chain as another process sees it: a hosted parent's, which its child's turn (run elsewhere)
 * opens under, so the child stops when it runs out and says whose it was, as an embedded child does.
 */
export interface AccountView {
  /** Its name, as a budget's exhaustion names it (`BudgetExhaustion.account`). */
  account: string;
  /** Its token and dollar limits (wall time is each turn's own). */
  limits: Pick<BudgetLimits, 'tokens' | 'costUsd'>;
  /** What it has counted so far. */
  spent: { tokens: number; costUsd: number };
}

/** An account at a glance (`getState().budget`, the inspector's usage table). */
export interface BudgetView {
  /** This account's own limits (a child may have none and live on its ancestors'). */
  limits: BudgetLimits;
  /** Spent by this account's subtree: the agent's turn and every subagent it started. */
  spent: { tokens: number; costUsd: number; timeMs: number };
  /** What is left, the tightest over this account and its ancestors: a child never has more than its parent. */
  left: BudgetLimits;
  exhausted?: BudgetExhaustion;
}
