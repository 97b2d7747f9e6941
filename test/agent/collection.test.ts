import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// V8 keeps a function's optimised code only while one of its function objects lives, and a hidden class only while
// an object with it lives. A closure made per call or per agent, or an object whose shape nothing keeps, is compiled
// again after every full collection that finds none alive: a long-running process pays that after each collection
// (src/protocol/shapes.ts). bench/recompiles.ts runs a workload 40 times, then 16 more with a collection before each,
// and reports how many more times each function was optimised than in a process without the collections. XState's
// per-call arrows are its floor; ours may differ by the odd late tier-up, not by one compilation per run.
function recompiled(workload: 'w1' | 'w3'): [string, number][] {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/recompiles.ts', workload, '--json'], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  return Object.entries(JSON.parse(out) as Record<string, number>);
}

const ours = ([where]: [string, number]) => where.startsWith('src/') || where.startsWith('machines/');
const xstate = ([where]: [string, number]) => where.startsWith('xstate/');
const total = (counts: [string, number][]) => counts.reduce((sum, [, n]) => sum + n, 0);

describe('a full collection between runs', () => {
  for (const [workload, what] of [
    ['w1', 'an agent’s tool loop'],
    ['w3', 'a swarm of subagents'],
  ] as const) {
    it(`makes V8 compile none of the runtime’s functions again run after run: ${what}`, () => {
      const counts = recompiled(workload);
      const again = counts.filter(ours).filter(([, n]) => n > 3);
      expect(again, 'functions optimised more than 3 extra times in 16 collected runs').toEqual([]);
      // The measurement itself works: XState's per-microstep arrows are compiled again after each collection.
      expect(total(counts.filter(xstate))).toBeGreaterThan(16);
    }, 120_000);
  }
});
