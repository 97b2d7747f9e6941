import type { JsonValue, ToolCallPart } from '../protocol/index.js';

/** How many identical calls in one turn earn a note, a firmer note with alternatives, an order to finish, a stop. */
export interface RepetitionLadder {
  note: number;
  warn: number;
  finish: number;
  stop: number;
}

export type RepetitionLevel = keyof RepetitionLadder;

const DEFAULT_LADDER: Readonly<RepetitionLadder> = { note: 3, warn: 5, finish: 8, stop: 12 };

export interface Rung {
  level: RepetitionLevel;
  count: number;
  /** What is added to the call's result for the model. */
  text: string;
}

/**
 * Counts identical calls (same tool, same arguments, whatever the key order) across the steps of one turn, and
 * says what the model should hear at each rung. Successes count like failures: a model that re-reads the same
 * file twelve times is as stuck as one that retries a failing command.
 */
export class RepetitionCounter {
  private readonly ladder: Readonly<RepetitionLadder>;
  private readonly seen = new Map<string, number>();
  private turn = -1;

  constructor(ladder?: Partial<RepetitionLadder>) {
    // Every agent makes one: most take the default ladder as it is.
    if (ladder === undefined) {
      this.ladder = DEFAULT_LADDER;
      return;
    }
    const merged = { ...DEFAULT_LADDER, ...ladder };
    const { note, warn, finish, stop } = merged;
    if (!(note >= 2 && note <= warn && warn <= finish && finish <= stop)) {
      throw new RangeError(`repetition: need 2 ≤ note ≤ warn ≤ finish ≤ stop, not ${note}/${warn}/${finish}/${stop}`);
    }
    this.ladder = merged;
  }

  /** Counts one more run of `call` in turn `turn`; the rung it reaches, if any. */
  count(call: ToolCallPart, turn: number, otherTools: () => readonly string[]): Rung | undefined {
    if (turn !== this.turn) {
      this.turn = turn;
      this.seen.clear();
    }
    const key = callKey(call);
    const count = (this.seen.get(key) ?? 0) + 1;
    this.seen.set(key, count);
    const { note, warn, finish, stop } = this.ladder;
    if (count < note) return undefined;
    const same = `${call.name} with these exact arguments`;
    // Past the stop (a turn the caller let go on) every further call stops again.
    if (count >= stop) {
      return { level: 'stop', count, text: `[Stopped: ${count} calls of ${same} in this turn. The turn ends here.]` };
    }
    if (count === finish) {
      return {
        level: 'finish',
        count,
        text: `[You have made ${count} calls of ${same} in this turn. Do not call it again: answer now with what you have, and say what is missing.]`,
      };
    }
    if (count === warn) {
      const others = otherTools().filter((name) => name !== call.name);
      const alternatives = others.length > 0 ? ` Tools you could use instead: ${others.join(', ')}.` : '';
      return {
        level: 'warn',
        count,
        text: `[This is call ${count} of ${same} in this turn, and repeating it will not change the result. Change the arguments, use another tool, or answer with what you have.${alternatives}]`,
      };
    }
    if (count === note) {
      return {
        level: 'note',
        count,
        text: `[Note: this is call ${count} of ${same} in this turn. If its result is not what you need, try something different.]`,
      };
    }
    return undefined;
  }
}

/** Same tool, same arguments: the key of a call, independent of the arguments' key order. */
export function callKey(call: ToolCallPart): string {
  return `${call.name}\u0000${stable(call.arguments)}`;
}

function stable(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    let out = '{';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      out += `${i > 0 ? ',' : ''}${JSON.stringify(key)}:${stable(value[key] as JsonValue)}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The calls of one answer that run: the first of each group of identical calls. `twins` maps the id of a call that
 * runs to the calls that share its result. A batch without duplicates (nearly all) is returned as it is. Calls in
 * `apart` (whose arguments a hook changed: they are no longer what the model wrote) always run on their own.
 */
export function dedupeCalls(
  calls: readonly ToolCallPart[],
  apart?: ReadonlySet<string>,
): {
  run: readonly ToolCallPart[];
  twins: Map<string, ToolCallPart[]> | undefined;
} {
  if (calls.length < 2) return { run: calls, twins: undefined };
  const first = new Map<string, ToolCallPart>();
  let twins: Map<string, ToolCallPart[]> | undefined;
  let run: ToolCallPart[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as ToolCallPart;
    if (apart?.has(call.id)) {
      run?.push(call);
      continue;
    }
    const key = callKey(call);
    const original = first.get(key);
    if (!original) {
      first.set(key, call);
      run?.push(call);
      continue;
    }
    run ??= calls.slice(0, i);
    twins ??= new Map();
    const list = twins.get(original.id);
    if (list) list.push(call);
    else twins.set(original.id, [call]);
  }
  return { run: run ?? calls, twins };
}
