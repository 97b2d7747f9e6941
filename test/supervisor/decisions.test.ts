import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as host from '../../src/host/index.js';
import { joinDecided, RESTART_DEFAULTS, restartDecision } from '../../src/protocol/index.js';

// What a restart decides is written once, here; the task machine's guard and backoff, the hosted swarm and the
// hosted background task all call it. test/conformance's restart scenarios check both hosts act on it.
describe('restartDecision', () => {
  it('restarts a failed run while restarts are left, doubling the backoff each time', () => {
    const options = { maxRestarts: 3, restartDelayMs: 50 };
    expect([0, 1, 2, 3, 4].map((attempt) => restartDecision(attempt, options))).toEqual([
      { restart: true, delayMs: 50 },
      { restart: true, delayMs: 100 },
      { restart: true, delayMs: 200 },
      { restart: false },
      { restart: false },
    ]);
  });

  it('defaults to two restarts, the first after a second', () => {
    expect(RESTART_DEFAULTS).toEqual({ maxRestarts: 2, restartDelayMs: 1000 });
    expect([0, 1, 2].map((attempt) => restartDecision(attempt))).toEqual([
      { restart: true, delayMs: 1000 },
      { restart: true, delayMs: 2000 },
      { restart: false },
    ]);
    expect(restartDecision(1, { restartDelayMs: 10 })).toEqual({ restart: true, delayMs: 20 });
    expect(restartDecision(0, { maxRestarts: 1 })).toEqual({ restart: true, delayMs: 1000 });
  });

  it('is the one place the defaults apply: no other module of src/ or machines/ names them', () => {
    const root = join(import.meta.dirname, '../..');
    const naming = ['src', 'machines']
      .flatMap((dir) => readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f)))
      .filter((file) => file.endsWith('.ts') && readFileSync(join(root, file), 'utf8').includes('RESTART_DEFAULTS'));
    expect(naming).toEqual(['src/protocol/strategy.ts']);
  });

  it('never restarts when maxRestarts is 0, and restarts at once when the delay is 0', () => {
    expect(restartDecision(0, { maxRestarts: 0 })).toEqual({ restart: false });
    expect(restartDecision(1, { maxRestarts: 2, restartDelayMs: 0 })).toEqual({ restart: true, delayMs: 0 });
  });

  it('is the one the Restate host reaches through troupe/host, as is the join decision', () => {
    expect(host.restartDecision).toBe(restartDecision);
    expect(host.joinDecided).toBe(joinDecided);
  });
});
