import type { AgentCommand } from '../../machines/agent/index.js';
import { Budget, type BudgetLimits, exhaustionError, tightest } from './budget.js';
import type { AgentEnv } from './env.js';

/**
 * The account a batch's tasks open their turns under: the starting agent's running turn's, or, with limits of its
 * own (a swarm's budget), a new account below it that all the batch's tasks share.
 */
export function batchAccount(
  owner: AgentEnv | undefined,
  batchId: string,
  limits: BudgetLimits | undefined,
): Budget | undefined {
  const parent = owner?.budget?.isOpen ? owner.budget : undefined;
  return limits ? new Budget(`batch ${batchId}`, limits, parent) : parent;
}

/** Whether any budget covers this agent's turns: without one, a turn opens no account (and W1 pays one check). */
export function hasBudget(env: AgentEnv, perPrompt: BudgetLimits | undefined): boolean {
  return env.settings.budget !== undefined || env.budgetParent !== undefined || perPrompt !== undefined;
}

/**
 * Opens the account of turn `turn`: the agent's limits and the prompt's (the tighter of each), under the account of
 * whoever started this agent. When it (or an ancestor) runs out, the agent is sent BUDGET_EXHAUSTED for this turn.
 */
export function openTurnBudget(
  env: AgentEnv,
  self: { send(event: AgentCommand): void },
  turn: number,
  perPrompt: BudgetLimits | undefined,
): void {
  env.budget?.close();
  const budget = new Budget(env.agentId, tightest(env.settings.budget, perPrompt), env.budgetParent);
  env.budget = budget;
  budget.open((over) => {
    if (!env.stopped) self.send({ type: 'BUDGET_EXHAUSTED', turn, error: exhaustionError(over) });
  });
}
