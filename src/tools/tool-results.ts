import type { AgentEventBody, ToolCallPart, ToolResultPart } from '../protocol/index.js';
import type { NormalizedOutput } from './output.js';
import { dedupeCalls, RepetitionCounter, type RepetitionLadder } from './repetition.js';
import { ResultBudget, type ResultBudgetOptions } from './result-budget.js';

export interface ToolResultOptions extends ResultBudgetOptions {
  /**
   * Identical calls (same tool, same arguments) counted across the steps of a turn: a note at `note` (3), a firmer
   * one listing the other tools at `warn` (5), an order to finish at `finish` (8), and the turn stops at `stop` (12)
   * with `stopReason: 'repetition'`. `false` turns the ladder off.
   */
  repetition?: Partial<RepetitionLadder> | false;
}

/** A finished call on its way to the model: `halt` ends the turn after this batch (the repetition ladder's stop). */
export interface FinishedOutput extends NormalizedOutput {
  halt?: boolean;
}

/**
 * What every tool result of one agent passes before the model sees it, whatever tool made it: the size budget and
 * the repetition ladder. It also dedupes the calls of one answer (identical calls run once; their twins share the
 * result). The tool worker calls it; a result replayed from a session's journal already passed it.
 */
export class ToolResults {
  readonly budget: ResultBudget;
  private readonly counter?: RepetitionCounter;
  /** Calls of the batch in flight that repeat an earlier call of the same answer, by the id of that call. */
  private twins?: Map<string, ToolCallPart[]>;

  constructor(
    options: ToolResultOptions,
    private readonly emit: (body: AgentEventBody) => void,
    private readonly toolNames: () => readonly string[],
  ) {
    this.budget = new ResultBudget(options);
    if (options.repetition !== false) this.counter = new RepetitionCounter(options.repetition);
  }

  /**
   * The calls of an answer that run; the others wait for their twin's result ({@link twinsOf}). Calls in `apart`
   * (arguments changed by a hook) are never twins.
   */
  dedupe(calls: readonly ToolCallPart[], apart?: ReadonlySet<string>): readonly ToolCallPart[] {
    const { run, twins } = dedupeCalls(calls, apart);
    this.twins = twins;
    return run;
  }

  /** The calls that share `call`'s result, each with a copy of it under its own id. */
  twinsOf(call: ToolCallPart, outcome: FinishedOutput): { call: ToolCallPart; outcome: FinishedOutput }[] {
    const twins = this.twins?.get(call.id);
    if (!twins) return [];
    return twins.map((twin) => ({ call: twin, outcome: { ...outcome, result: renamed(outcome.result, twin.id) } }));
  }

  /** The result of call `call` (of turn `turn`) as the model gets it. */
  finish(call: ToolCallPart, outcome: NormalizedOutput, turn: number): FinishedOutput {
    const fitted = this.budget.fit(outcome.result);
    const rung = this.counter?.count(call, turn, this.toolNames);
    if (!rung) return fitted === outcome.result ? outcome : { result: fitted, terminate: outcome.terminate };
    this.emit({
      type: 'tool_repetition',
      toolCallId: call.id,
      toolName: call.name,
      count: rung.count,
      level: rung.level,
    });
    const result: ToolResultPart = { ...fitted, content: [...fitted.content, { type: 'text', text: rung.text }] };
    return rung.level === 'stop'
      ? { result, terminate: outcome.terminate, halt: true }
      : { result, terminate: outcome.terminate };
  }
}

function renamed(result: ToolResultPart, toolCallId: string): ToolResultPart {
  return { ...result, toolCallId };
}
