import { createActor, fromPromise, type InspectionEvent, type Observer, toPromise } from 'xstate';
import { z } from 'zod';
import { type GoalOutput, type GoalTurnOutcome, goalMachine } from '../../../machines/goal/index.js';
import { addUsage, emptyUsage, type Usage } from '../../protocol/index.js';
import { type AnyTool, defineTool } from '../../tools/index.js';
import type { RunResult } from '../env/env.js';

export interface GoalOptions {
  /** Turns the pursuit may take (default 10). */
  maxTurns?: number;
  /** Tokens the pursuit may spend (input, output and cache), checked after each turn. */
  maxTokens?: number;
  /** Aborting it interrupts the running turn and ends the pursuit as `interrupted`. */
  signal?: AbortSignal;
}

export interface GoalResult extends GoalOutput {
  usage: Usage;
  /** The last turn's result. */
  last?: RunResult;
}

/** Where one agent's pursuit stands, for `getState()`. */
export interface GoalView {
  goal: string;
  /** The goal statechart's state, e.g. `pursuing.turn`. */
  state: string;
  turns: number;
  tokens: number;
}

/** What `goal_done` tells the pursuit; one per agent, so the tool needs no lookup. */
export class GoalTracker {
  active = false;
  met = false;
  summary?: string;
  /** The running pursuit's actor, while there is one. */
  actor?: ReturnType<typeof createActor<typeof goalMachine>>;
  readonly tool: AnyTool = defineTool({
    name: 'goal_done',
    label: 'Goal met',
    description:
      'Call this when the goal you are pursuing is fully met, with a short summary of what was done. Do not call it ' +
      'for a partial result: keep working instead.',
    schema: z.object({ summary: z.string().describe('What was done to meet the goal, in a few sentences.') }),
    readOnly: true,
    execute: ({ summary }) => {
      if (!this.active) return { content: 'No goal is being pursued right now.', isError: true };
      this.met = true;
      this.summary = summary;
      return { content: 'The goal is marked as met.', terminate: true };
    },
  });

  view(): GoalView | undefined {
    const snapshot = this.actor?.getSnapshot();
    if (snapshot?.status !== 'active') return undefined;
    const { goal, turns, tokens } = snapshot.context;
    const value = snapshot.value;
    const state = typeof value === 'string' ? value : `pursuing.${String(Object.values(value)[0])}`;
    return { goal, state, turns, tokens };
  }
}

/** The agent side a pursuit needs. */
export interface GoalAgent {
  prompt(input: string, options: { signal?: AbortSignal }): Promise<RunResult>;
  interrupt(): void;
}

/** Runs the goal statechart over an agent's turns until the goal is met or the budget is spent. */
export async function pursueGoal(
  agent: GoalAgent,
  tracker: GoalTracker,
  goal: string,
  options: GoalOptions,
  inspect: Observer<InspectionEvent> | ((event: InspectionEvent) => void) | undefined,
): Promise<GoalResult> {
  if (tracker.active) throw new Error('This agent is already pursuing a goal');
  const maxTurns = options.maxTurns ?? 10;
  if (!Number.isInteger(maxTurns) || maxTurns < 1) throw new RangeError(`maxTurns must be a positive integer`);
  const usage = emptyUsage();
  let last: RunResult | undefined;
  const takeTurn = fromPromise<GoalTurnOutcome, { goal: string; turn: number }>(async ({ input }) => {
    tracker.met = false;
    const text = input.turn === 1 ? goalPrompt(input.goal) : continuePrompt(input.turn, maxTurns);
    last = await agent.prompt(text, options.signal ? { signal: options.signal } : {});
    addUsage(usage, last.usage);
    const { input: fresh, output, cacheRead, cacheWrite } = last.usage;
    const outcome: GoalTurnOutcome = {
      stopReason: last.stopReason,
      met: tracker.met,
      tokens: fresh + output + cacheRead + cacheWrite,
      usage: last.usage,
    };
    if (tracker.summary !== undefined) outcome.summary = tracker.summary;
    return outcome;
  });
  const actor = createActor(goalMachine.provide({ actors: { takeTurn } }), {
    input: { goal, maxTurns, ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }) },
    ...(inspect ? { inspect } : {}),
  });
  const onAbort = () => {
    actor.send({ type: 'STOP' });
    agent.interrupt();
  };
  tracker.active = true;
  tracker.summary = undefined;
  tracker.actor = actor;
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    actor.start();
    if (options.signal?.aborted) onAbort();
    const output = await toPromise(actor);
    return { ...output, usage, ...(last ? { last } : {}) };
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    tracker.active = false;
    tracker.actor = undefined;
  }
}

function goalPrompt(goal: string): string {
  return (
    `Your goal: ${goal}\n\nWork towards it with your tools. When the goal is fully met, call goal_done with a short ` +
    'summary. If you cannot finish now, say what you did and what is left: you will be asked to continue.'
  );
}

function continuePrompt(turn: number, maxTurns: number): string {
  return `Continue working towards the goal (turn ${turn} of at most ${maxTurns}). Call goal_done once it is fully met.`;
}
