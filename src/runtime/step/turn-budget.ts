import type { AgentCommand, AgentContext } from '../../../machines/agent/index.js';
import { modelInfo } from '../../context/index.js';
import type { JournalRecord } from '../../session/index.js';
import { Budget, type BudgetExhaustion, type BudgetLimits, exhaustionError, tightest } from '../budget/budget.js';
import { type RestoredSpend, SpendLedger } from '../budget/ledger.js';
import type { AgentEnv } from '../env/env.js';

type Self = { send(event: AgentCommand): void };

/**
 * The account a batch's tasks open their turns under: the starting agent's running turn's, or, with limits of its
 * own (a swarm's budget), a new account below it that all the batch's tasks share. A batch started again after a
 * restart while its owner is idle opens under what the owner's turns open under (a root's lifetime account).
 */
export function batchAccount(
  owner: AgentEnv | undefined,
  batchId: string,
  limits: BudgetLimits | undefined,
  spent?: RestoredSpend,
): Budget | undefined {
  const parent = owner?.budget?.isOpen ? owner.budget : owner?.budgetParent;
  if (!limits) return parent;
  const account = new Budget(`batch ${batchId}`, limits, parent);
  if (spent) account.add(spent.tokens, spent.cost);
  return account;
}

/** Whether any budget covers this agent's turns: without one, a turn opens no account (and W1 pays one check). */
function hasBudget(env: AgentEnv, perPrompt: BudgetLimits | undefined): boolean {
  return env.settings.budget !== undefined || env.budgetParent !== undefined || perPrompt !== undefined;
}

/**
 * Opens the account of turn `turn` (the runtime's `startTurn`), when a budget covers it. A turn replayed after a
 * restart takes its prompt's budget from the journal, and starts from what it had spent and from its first start.
 */
export function startTurnBudget(
  env: AgentEnv,
  self: Self,
  turn: number,
  inputId: string,
  perPrompt: BudgetLimits | undefined,
): void {
  const restored = env.journal.restoredTurn(turn, inputId);
  const limits = perPrompt ?? restored?.budget;
  if (hasBudget(env, limits)) openTurnBudget(env, self, turn, limits, restored?.spent);
}

/**
 * Opens the account of turn `turn`: the agent's limits and the prompt's (the tighter of each), under the account of
 * whoever started this agent. When it (or an ancestor) runs out, the agent is sent BUDGET_EXHAUSTED for this turn.
 */
function openTurnBudget(
  env: AgentEnv,
  self: Self,
  turn: number,
  perPrompt: BudgetLimits | undefined,
  restored?: RestoredSpend,
): Budget {
  env.budget?.close();
  const budget = new Budget(
    env.agentId,
    tightest(env.settings.budget, perPrompt),
    env.budgetParent,
    restored?.startedAt,
  );
  if (restored) budget.add(restored.tokens, restored.cost);
  env.budget = budget;
  budget.open((over) => tellAgent(env, self, turn, over));
  return budget;
}

/**
 * The agent's turn `turn` ends on `over`. An agent rebuilding its history from the journal hears it once the
 * replay has caught up: ended in the middle, its history would stop short of what the journal already holds.
 */
function tellAgent(env: AgentEnv, self: Self, turn: number, over: BudgetExhaustion): void {
  const send = () => {
    if (!env.stopped) self.send({ type: 'BUDGET_EXHAUSTED', turn, error: exhaustionError(over) });
  };
  const replaying = () => env.journal.replaying(env.transcript.length) === true;
  if (!replaying()) {
    send();
    return;
  }
  const off = env.bus.on(
    'message_end',
    () => {
      if (replaying()) return;
      off();
      send();
    },
    env.agentId,
  );
}

/**
 * A root agent reopened from its session: its lifetime account (`totalBudget`) gets back everything the journal
 * says was spent, and the turn in flight (if any) its account, with what it and its subtree had spent and its
 * original start, so a deadline that passed during the downtime ends it at once. Returns the ledger, which the
 * replaying subagents' turns are restored from.
 */
export function restoreBudgets(
  env: AgentEnv,
  self: Self,
  records: readonly JournalRecord[],
  /** The restored context when a turn was in flight. */
  context: AgentContext | undefined,
  snapshotMessages: number,
): SpendLedger {
  const models = env.settings.context?.models;
  const inTurn = context?.current ? { turn: context.turn, replayFrom: snapshotMessages } : undefined;
  const ledger = new SpendLedger(records, env.agentId, inTurn, (model) => modelInfo(model, models)?.prices);
  const { unclaimed } = ledger;
  if (unclaimed.tokens > 0 || unclaimed.cost > 0) env.budgetParent?.add(unclaimed.tokens, unclaimed.cost);
  if (!context?.current) return ledger;
  const inputId = context.current.inputId;
  const perPrompt = env.journal.restoredTurn(context.turn, inputId)?.budget;
  if (!hasBudget(env, perPrompt)) return ledger;
  const budget = openTurnBudget(env, self, context.turn, perPrompt, ledger.turn(env.agentId, context.turn));
  // Spent already (a deadline passed during the downtime): the turn ends once the caller has had a chance to listen
  // (the resume's own tick) and the replay of its steps has caught up.
  setImmediate(() => {
    const over = budget.isOpen ? budget.exhaustion() : undefined;
    if (over) tellAgent(env, self, context.turn, over);
  });
  return ledger;
}

/** A supervisor reopened from its session: its batches' accounts and its tasks' turns are restored from this. */
export function supervisorLedger(records: readonly JournalRecord[], supervisorId: string): SpendLedger {
  return new SpendLedger(records, supervisorId, undefined, (model) => modelInfo(model)?.prices);
}
