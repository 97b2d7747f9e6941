import { join } from 'node:path';
import type { AgentEventBody, Message, ToolCallPart, ToolResultPart } from '../protocol/index.js';
import type { NormalizedOutput } from './output.js';
import { callKey, dedupeCalls, RepetitionCounter, type RepetitionLadder, type Rung } from './repetition.js';
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
  twinsOf(call: ToolCallPart, outcome: FinishedOutput): readonly { call: ToolCallPart; outcome: FinishedOutput }[] {
    const twins = this.twins?.get(call.id);
    if (!twins) return NO_TWINS;
    return twins.map((twin) => ({ call: twin, outcome: { ...outcome, result: renamed(outcome.result, twin.id) } }));
  }

  /** The result of call `call` (of turn `turn`) as the model gets it. */
  finish(call: ToolCallPart, outcome: NormalizedOutput, turn: number): FinishedOutput {
    const fitted = this.budget.fit(outcome.result);
    const rung = this.climb(call, turn);
    if (!rung) return fitted === outcome.result ? outcome : { result: fitted, terminate: outcome.terminate };
    const result: ToolResultPart = { ...fitted, content: [...fitted.content, { type: 'text', text: rung.text }] };
    return rung.level === 'stop'
      ? { result, terminate: outcome.terminate, halt: true }
      : { result, terminate: outcome.terminate };
  }

  /**
   * A result given again from a session's journal (a resume, a replay): it passed {@link finish} when it was made,
   * so it is sent as it is, but it counts on the ladder (a stop it reached stops the turn again), and a result saved
   * to a file is readable again.
   */
  replayed(call: ToolCallPart, result: ToolResultPart, turn: number): FinishedOutput {
    this.budget.adopt(result);
    const rung = this.climb(call, turn);
    return rung?.level === 'stop' ? { result, terminate: false, halt: true } : { result, terminate: false };
  }

  /** Results over the budget are saved in the session's folder, one per agent (unless the options name a `dir`). */
  useSessionDir(sessionDir: string, agentId: string): void {
    this.budget.useSessionDir(join(sessionDir, 'tool-results', agentId.replace(/[^\w.-]/g, '_')));
  }

  /**
   * A resumed agent's history: its saved results become readable again, and the calls of turn `turn` (stored from
   * `turnStart`) that ran and whose results are stored count on the ladder again (`started` says which ran: not the
   * denied; twins are left out here as they were live). Calls of the step in flight count when they are answered.
   */
  restore(stored: readonly Message[], turnStart: number, turn: number, started: (callId: string) => boolean): void {
    const answered = new Set<string>();
    for (const message of stored) {
      if (message.role !== 'tool') continue;
      for (const part of message.content) {
        if (part.type !== 'tool_result') continue;
        answered.add(part.toolCallId);
        this.budget.adopt(part);
      }
    }
    const counter = this.counter;
    if (!counter) return;
    for (let i = turnStart; i < stored.length; i++) {
      const message = stored[i] as Message;
      if (message.role !== 'assistant') continue;
      const keys = new Set<string>();
      for (const part of message.content) {
        if (part.type !== 'tool_call' || !answered.has(part.id) || !started(part.id)) continue;
        const key = callKey(part);
        if (keys.has(key)) continue; // a twin: it shared its first's run
        keys.add(key);
        counter.count(part, turn, this.toolNames);
      }
    }
  }

  /** One more run of `call` on the ladder; its rung is an event. */
  private climb(call: ToolCallPart, turn: number): Rung | undefined {
    const rung = this.counter?.count(call, turn, this.toolNames);
    if (rung) {
      this.emit({
        type: 'tool_repetition',
        toolCallId: call.id,
        toolName: call.name,
        count: rung.count,
        level: rung.level,
      });
    }
    return rung;
  }
}

/** What {@link ToolResults.twinsOf} gives a call without twins (nearly every call): no array made per call. */
const NO_TWINS: readonly { call: ToolCallPart; outcome: FinishedOutput }[] = Object.freeze([]);

function renamed(result: ToolResultPart, toolCallId: string): ToolResultPart {
  return { ...result, toolCallId };
}
