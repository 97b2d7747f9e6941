/**
 * What every row of bench/xstate-floor.ts shares, as the peer harness (`../shared/bench-peers`, src/common.ts)
 * defines it: a scripted model that answers from a counter and never reads the prompt, and a synchronous `echo`
 * tool. The counters check that each row did all its work.
 */
import pLimit from 'p-limit';

export interface ToolCall {
  id: string;
  name: string;
  args: { i: number };
}

export type Turn = { type: 'tools'; calls: ToolCall[] } | { type: 'text'; text: string };

export const FINAL_TEXT = 'done';

export const counters = { toolExecs: 0, modelCalls: 0 };

let callSeq = 0;

/** `toolSteps` answers of one echo call, then the final text; after `latencyMs` (0: at once, no timer). */
export class Script {
  private n = 0;
  constructor(
    readonly toolSteps: number,
    readonly latencyMs = 0,
    /** Where the memory probe holds the run: the answer of this call waits until `hold` resolves. */
    private readonly hold?: { call: number; until: () => Promise<void> },
  ) {}

  nextTurn(): Turn {
    counters.modelCalls++;
    const k = this.n++;
    if (k < this.toolSteps)
      return { type: 'tools', calls: [{ id: `call_${++callSeq}`, name: 'echo', args: { i: k } }] };
    return { type: 'text', text: FINAL_TEXT };
  }

  async next(): Promise<Turn> {
    if (this.hold && this.n === this.hold.call) await this.hold.until();
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    return this.nextTurn();
  }
}

export function echo(args: { i: number }): { echo: number } {
  counters.toolExecs++;
  return { echo: args.i };
}

/** Runs `runs` jobs, at most `concurrency` at once, as the harness does (p-limit around whole runs). */
export function pooled<T>(runs: number, concurrency: number, job: (n: number) => Promise<T>): Promise<T[]> {
  const limit = pLimit(concurrency);
  return Promise.all(Array.from({ length: runs }, (_, n) => limit(() => job(n))));
}
