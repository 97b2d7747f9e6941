import { assign, fromPromise, setup } from 'xstate';
import type { TurnStopReason, Usage } from '../src/protocol/index.js';

/**
 * Goal mode: an agent keeps taking turns towards a goal until the model declares it met (the `goal_done` tool) or
 * a budget of turns or tokens is spent. Each turn is the agent's own; this chart only decides whether to take
 * another, so the inspector shows a pursuit as `pursuing.turn` / `pursuing.checking` and how it ended.
 */

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

export type GoalStatus = 'achieved' | 'budget_exhausted' | 'failed' | 'interrupted';

export interface GoalContext extends GoalInput {
  turns: number;
  tokens: number;
  last?: GoalTurnOutcome;
  status?: GoalStatus;
}

export interface GoalOutput {
  status: GoalStatus;
  turns: number;
  tokens: number;
  summary?: string;
}

export const goalMachine = setup({
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
}).createMachine({
  id: 'goal',
  context: ({ input }) => ({ ...input, turns: 0, tokens: 0 }),
  initial: 'pursuing',
  states: {
    pursuing: {
      initial: 'turn',
      on: { STOP: '#goal.interrupted' },
      states: {
        turn: {
          invoke: {
            src: 'takeTurn',
            input: ({ context }) => ({ goal: context.goal, turn: context.turns + 1 }),
            onDone: {
              target: 'checking',
              actions: assign(({ context, event }) => ({
                turns: context.turns + 1,
                tokens: context.tokens + event.output.tokens,
                last: event.output,
              })),
            },
            onError: '#goal.failed',
          },
        },
        // The order says what wins: a goal met on the last affordable turn is achieved, not exhausted.
        checking: {
          always: [
            { guard: 'goalMet', target: '#goal.achieved' },
            { guard: 'turnFailed', target: '#goal.failed' },
            { guard: 'turnInterrupted', target: '#goal.interrupted' },
            { guard: 'budgetSpent', target: '#goal.budgetExhausted' },
            { target: 'turn' },
          ],
        },
      },
    },
    achieved: { type: 'final', entry: assign({ status: 'achieved' }) },
    budgetExhausted: { type: 'final', entry: assign({ status: 'budget_exhausted' }) },
    failed: { type: 'final', entry: assign({ status: 'failed' }) },
    interrupted: { type: 'final', entry: assign({ status: 'interrupted' }) },
  },
  output: ({ context }) => {
    // Stryker disable next-line StringLiteral: every final state sets `status`; the fallback is for its type
    const output: GoalOutput = { status: context.status ?? 'failed', turns: context.turns, tokens: context.tokens };
    if (context.last?.summary !== undefined) output.summary = context.last.summary;
    return output;
  },
});
