import { assign, fromPromise, setup } from 'xstate';
import type { TurnStopReason, Usage } from '../../src/protocol/index.js';

/** What a goal pursuit starts from: the goal, and the turns and tokens it may spend. */
export interface GoalInput {
  goal: string;
  /** Turns the pursuit may take (default 10). */
  maxTurns: number;
  /** Tokens (input + output + cache) the pursuit may spend, checked after each turn. */
  maxTokens?: number;
}

/** What one turn of the pursuit reports. */
export interface GoalTurnOutcome {
  stopReason: TurnStopReason;
  /** The model called `goal_done` during the turn. */
  met: boolean;
  summary?: string;
  /** Tokens the turn spent. */
  tokens: number;
  usage: Usage;
}

/** How a goal pursuit ended: the model declared the goal met, a budget ran out, a turn failed, or it was stopped. */
export type GoalStatus = 'achieved' | 'budget_exhausted' | 'failed' | 'interrupted';

/** A goal pursuit as it goes: the turns taken and tokens spent so far, the last turn's outcome, and how it ended. */
export interface GoalContext extends GoalInput {
  turns: number;
  tokens: number;
  last?: GoalTurnOutcome;
  status?: GoalStatus;
}

/** How a goal pursuit ended, with what it spent and the model's summary. */
export interface GoalOutput {
  status: GoalStatus;
  turns: number;
  tokens: number;
  summary?: string;
}

/** The goal chart's implementations: chart.ts is the chart a reader opens first. */
export const goalSetup = setup({
  types: {
    context: {} as GoalContext,
    input: {} as GoalInput,
    events: {} as { type: 'STOP' },
    output: {} as GoalOutput,
  },
  actors: {
    // Provided by the runtime: prompts the agent (the goal first, then a nudge to continue) and reports the turn.
    takeTurn: fromPromise<GoalTurnOutcome, { goal: string; turn: number }>(async () => {
      // Stryker disable next-line StringLiteral: the message is for a developer's stack trace; the chart keeps no error
      throw new Error('goal machine: takeTurn is provided by the runtime');
    }),
  },
  actions: {
    /** A turn was taken: it counts against the budgets, and the checks read it. */
    recordTurn: assign(({ context, event }) => {
      const outcome = (event as unknown as { output: GoalTurnOutcome }).output;
      return { turns: context.turns + 1, tokens: context.tokens + outcome.tokens, last: outcome };
    }),
    endWith: assign((_, params: { status: GoalStatus }) => ({ status: params.status })),
  },
  // The guards run in `checking`, where the turn just taken is `last`.
  // Stryker disable OptionalChaining: `last` is always set there; the chaining only satisfies its type
  guards: {
    goalMet: ({ context }) => context.last?.met === true,
    turnFailed: ({ context }) => context.last?.stopReason === 'error',
    turnInterrupted: ({ context }) => context.last?.stopReason === 'interrupted',
    // Stryker restore OptionalChaining
    budgetSpent: ({ context }) =>
      context.turns >= context.maxTurns || context.tokens >= (context.maxTokens ?? Number.POSITIVE_INFINITY),
  },
});
