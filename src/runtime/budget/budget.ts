import type {
  AccountView,
  BudgetExhaustion,
  BudgetLimit,
  BudgetLimits,
  BudgetView,
  SerializedError,
  Usage,
} from '../../protocol/index.js';

export type { BudgetExhaustion, BudgetLimits, BudgetView };

/** The sum every token budget counts: what the provider bills (reasoning is part of `output`). */
function tokensOf(usage: Usage): number {
  return usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/** Checks limits as given by a user: a typo must not become an unlimited budget. */
export function checkLimits(limits: BudgetLimits, where: string): BudgetLimits {
  for (const [name, value] of Object.entries(limits)) {
    if (!['tokens', 'costUsd', 'timeMs'].includes(name)) throw new RangeError(`${where}: unknown budget "${name}"`);
    if (value !== undefined && (typeof value !== 'number' || !(value >= 0)))
      throw new RangeError(`${where}: budget ${name} must be a number ≥ 0, got ${String(value)}`);
  }
  return limits;
}

/** A lifetime's limits: tokens and cost; wall time is a turn's (an agent's age is no budget). */
export function checkTotalLimits(limits: BudgetLimits): BudgetLimits {
  checkLimits(limits, 'totalBudget');
  if (limits.timeMs !== undefined) {
    throw new RangeError('totalBudget: wall time is budgeted per turn (budget.timeMs), not over a lifetime');
  }
  return limits;
}

/** A view as it will stand once `usage` (costing `cost`) is charged: what MODEL_DONE carries for the inspector. */
export function viewAfter(view: BudgetView, usage: Usage, cost: number | undefined): BudgetView {
  const tokens = tokensOf(usage);
  const usd = cost ?? 0;
  view.spent.tokens += tokens;
  view.spent.costUsd += usd;
  if (view.left.tokens !== undefined) view.left.tokens = Math.max(0, view.left.tokens - tokens);
  if (view.left.costUsd !== undefined) view.left.costUsd = Math.max(0, view.left.costUsd - usd);
  return view;
}

/** The tighter of two sets of limits, field by field. */
export function tightest(a: BudgetLimits | undefined, b: BudgetLimits | undefined): BudgetLimits {
  if (!a) return b ?? {};
  if (!b) return a;
  const min = (x: number | undefined, y: number | undefined) =>
    x === undefined ? y : y === undefined ? x : Math.min(x, y);
  const out: BudgetLimits = {};
  const tokens = min(a.tokens, b.tokens);
  const costUsd = min(a.costUsd, b.costUsd);
  const timeMs = min(a.timeMs, b.timeMs);
  if (tokens !== undefined) out.tokens = tokens;
  if (costUsd !== undefined) out.costUsd = costUsd;
  if (timeMs !== undefined) out.timeMs = timeMs;
  return out;
}

const LABELS: Record<BudgetLimit, string> = { tokens: 'token', cost: 'cost', time: 'wall-time' };
const UNITS: Record<BudgetLimit, (n: number) => string> = {
  tokens: (n) => `${n} tokens`,
  cost: (n) => `$${n.toFixed(4)}`,
  time: (n) => `${Math.round(n)} ms`,
};

/** The turn's error when a budget ends it: what ran out, whose, and by how much. */
export function exhaustionError(over: BudgetExhaustion): SerializedError {
  const unit = UNITS[over.limit];
  return {
    name: 'BudgetExhausted',
    code: 'budget_exhausted',
    message: `The ${LABELS[over.limit]} budget of ${over.account} (${unit(over.max)}) is spent: ${unit(over.spent)} used`,
  };
}

/**
 * One account: a turn's (an agent's own limits), or a swarm's. Accounts form a tree that follows the supervision
 * tree: a subagent's turn opens its account under the account of the turn (or swarm) that started it, so every
 * charge counts against each ancestor, and each check asks the whole chain: a child has at most what its parent has
 * left. An account that runs out tells every open account below it (their agents' turns end), once.
 *
 * An account outlives its own turn while accounts below it are open: a background subagent keeps charging the turn
 * that started it, and is stopped when that turn's budget is spent.
 */
export class Budget {
  tokens = 0;
  cost = 0;
  readonly startedAt: number;
  /** When the wall-time limit ends, the earliest over the chain (Infinity: none). */
  readonly deadline: number;
  exhausted?: BudgetExhaustion;
  /** Open accounts below this one, told when this one runs out. */
  private readonly children = new Set<Budget>();
  private listener?: (over: BudgetExhaustion) => void;
  private timer?: ReturnType<typeof setTimeout>;

  constructor(
    readonly account: string,
    readonly limits: BudgetLimits,
    readonly parent?: Budget,
    /** When the turn began: now, or, for a turn restored after a restart, when it first started. */
    startedAt = Date.now(),
  ) {
    this.startedAt = startedAt;
    const own = limits.timeMs === undefined ? Number.POSITIVE_INFINITY : this.startedAt + limits.timeMs;
    this.deadline = parent ? Math.min(own, parent.deadline) : own;
    // Below its parent from the start: a swarm's account is never opened, yet its tasks' accounts must hear the
    // parent run out through it.
    parent?.children.add(this);
  }

  /**
   * The account's turn is running: `listener` is told when this account or an ancestor runs out. A finite deadline
   * sets a timer for the turn.
   */
  open(listener: (over: BudgetExhaustion) => void): void {
    this.listener = listener;
    if (this.deadline !== Number.POSITIVE_INFINITY) {
      this.timer = setTimeout(() => this.onDeadline(), Math.max(0, this.deadline - Date.now()));
    }
  }

  /** The turn is over: nobody listens here any more, and nothing below counts on it as a live turn. */
  close(): void {
    this.listener = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.parent?.children.delete(this);
  }

  get isOpen(): boolean {
    return this.listener !== undefined;
  }

  /** Spending by this account's agent: counted here and in every ancestor; any of them may run out now. */
  charge(usage: Usage, cost: number | undefined): void {
    this.add(tokensOf(usage), cost ?? 0);
  }

  /** Spending counted in tokens and dollars: a charge, or what a restored account had spent before a restart. */
  add(tokens: number, usd: number): void {
    for (let account: Budget | undefined = this; account; account = account.parent) {
      account.tokens += tokens;
      account.cost += usd;
      if (account.exhausted) continue;
      const over = account.overOwn(Date.now());
      if (over) account.exhaust(over);
    }
  }

  /**
   * The accounts of the chain with a token or dollar limit, this one first: what a child run in another process
   * opens under (`Budget.mirror`).
   */
  chain(): AccountView[] {
    const chain: AccountView[] = [];
    for (let account: Budget | undefined = this; account; account = account.parent) {
      const { tokens, costUsd } = account.limits;
      if (tokens === undefined && costUsd === undefined) continue;
      const limits = { ...(tokens === undefined ? {} : { tokens }), ...(costUsd === undefined ? {} : { costUsd }) };
      chain.push({ account: account.account, limits, spent: { tokens: account.tokens, costUsd: account.cost } });
    }
    return chain;
  }

  /** Accounts standing in for a `chain()` of another process, nearest last built: the nearest, or none. */
  static mirror(chain: readonly AccountView[]): Budget | undefined {
    let nearest: Budget | undefined;
    for (const view of [...chain].reverse()) {
      nearest = new Budget(view.account, view.limits, nearest);
      nearest.tokens = view.spent.tokens;
      nearest.cost = view.spent.costUsd;
    }
    return nearest;
  }

  /** The first account of the chain that has run out (this one first), if any. */
  exhaustion(): BudgetExhaustion | undefined {
    const now = Date.now();
    for (let account: Budget | undefined = this; account; account = account.parent) {
      const over = account.exhausted ?? account.overOwn(now);
      if (over) return over;
    }
    return undefined;
  }

  view(): BudgetView {
    const now = Date.now();
    const left: BudgetLimits = {};
    for (let account: Budget | undefined = this; account; account = account.parent) {
      const { tokens, costUsd } = account.limits;
      if (tokens !== undefined) left.tokens = Math.min(left.tokens ?? Infinity, Math.max(0, tokens - account.tokens));
      if (costUsd !== undefined) left.costUsd = Math.min(left.costUsd ?? Infinity, Math.max(0, costUsd - account.cost));
    }
    if (this.deadline !== Number.POSITIVE_INFINITY) left.timeMs = Math.max(0, this.deadline - now);
    const view: BudgetView = {
      limits: { ...this.limits },
      spent: { tokens: this.tokens, costUsd: this.cost, timeMs: now - this.startedAt },
      left,
    };
    const exhausted = this.exhaustion();
    if (exhausted) view.exhausted = exhausted;
    return view;
  }

  /** This account's own limits against what its subtree spent. */
  private overOwn(now: number): BudgetExhaustion | undefined {
    const { tokens, costUsd, timeMs } = this.limits;
    if (tokens !== undefined && this.tokens >= tokens)
      return { limit: 'tokens', account: this.account, max: tokens, spent: this.tokens };
    if (costUsd !== undefined && this.cost >= costUsd)
      return { limit: 'cost', account: this.account, max: costUsd, spent: this.cost };
    if (timeMs !== undefined && now - this.startedAt >= timeMs)
      return { limit: 'time', account: this.account, max: timeMs, spent: now - this.startedAt };
    return undefined;
  }

  /** Runs out once: this account's turn and every open account below it are told. */
  private exhaust(over: BudgetExhaustion): void {
    this.exhausted = over;
    this.tell(over);
  }

  private tell(over: BudgetExhaustion): void {
    this.listener?.(over);
    for (const child of [...this.children]) child.tell(over);
  }

  /** The earliest deadline of the chain has passed: the accounts whose own time is up run out. */
  private onDeadline(): void {
    this.timer = undefined;
    const now = Date.now();
    for (let account: Budget | undefined = this; account; account = account.parent) {
      if (account.exhausted) continue;
      const over = account.overOwn(now);
      if (over?.limit === 'time') account.exhaust(over);
    }
    // A timer may fire a little early: still open and nothing ran out, it waits for the rest.
    if (this.listener && !this.exhaustion()) {
      this.timer = setTimeout(() => this.onDeadline(), Math.max(1, this.deadline - now));
    }
  }
}
