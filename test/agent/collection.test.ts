import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// V8 keeps a function's optimised code only while one of its function objects lives, and a hidden class only while
// an object with it lives. A closure made per call or per agent, or an object whose shape nothing keeps, is compiled
// again after every full collection that finds none alive: a long-running process pays that after each collection
// (src/protocol/shapes.ts). bench/recompiles.ts runs W1's loop warmed up, then 16 times with a collection before
// each, and reports every optimisation V8 made in those runs. XState's own per-call arrows are its floor; ours are
// allowed the odd late tier-up (the control without collections shows a few), not one per run.
describe('a full collection between agents', () => {
  it('makes V8 compile none of the runtime’s functions again run after run', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/recompiles.ts', '--json'], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
    const counts = JSON.parse(out) as Record<string, number>;
    const ours = Object.entries(counts).filter(([where]) => where.startsWith('src/'));
    const again = ours.filter(([, n]) => n > 3);
    expect(again, 'functions of src/ optimised again in more than 3 of 16 collected runs').toEqual([]);
    // The measurement itself works: XState's per-microstep arrows are compiled again after each collection.
    const xstate = Object.entries(counts).filter(([where]) => where.startsWith('xstate/'));
    expect(xstate.reduce((sum, [, n]) => sum + n, 0)).toBeGreaterThan(16);
  }, 60_000);
});
