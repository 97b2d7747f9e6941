import type { GoalOutput } from './setup.js';
import { goalSetup } from './setup.js';

/**
 * Goal mode: an agent keeps taking turns towards a goal until the model declares it met (the `goal_done` tool) or
 * a budget of turns or tokens is spent. Each turn is the agent's own; this chart only decides whether to take
 * another, so the inspector shows a pursuit as `pursuing.turn` / `pursuing.checking` and how it ended.
 */
export const goalMachine = goalSetup.createMachine({
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
              actions: 'recordTurn',
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
    achieved: { type: 'final', entry: { type: 'endWith', params: { status: 'achieved' } } },
    budgetExhausted: { type: 'final', entry: { type: 'endWith', params: { status: 'budget_exhausted' } } },
    failed: { type: 'final', entry: { type: 'endWith', params: { status: 'failed' } } },
    interrupted: { type: 'final', entry: { type: 'endWith', params: { status: 'interrupted' } } },
  },
  output: ({ context }) => {
    // Stryker disable next-line StringLiteral: every final state sets `status`; the fallback is for its type
    const output: GoalOutput = { status: context.status ?? 'failed', turns: context.turns, tokens: context.tokens };
    if (context.last?.summary !== undefined) output.summary = context.last.summary;
    return output;
  },
});
