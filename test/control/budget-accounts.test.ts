/**
 * The accounts and the ledger without an agent: a lifetime account above turn accounts, a turn restored with its
 * first start, and what a journal's answers are charged to on resume.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AssistantMessage, Usage } from '../../src/protocol/index.js';
import { Budget, checkTotalLimits } from '../../src/runtime/budget/budget.js';
import { SpendLedger } from '../../src/runtime/budget/ledger.js';
import type { JournalRecord } from '../../src/session/index.js';

afterEach(() => {
  vi.useRealTimers();
});

const usage = (tokens: number): Usage => ({ input: tokens, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });

describe('a lifetime account', () => {
  it('counts every turn under it and tells the open turn when it runs out; a later turn starts spent', () => {
    const total = new Budget('total root', checkTotalLimits({ tokens: 25 }));
    const first = new Budget('root', {}, total);
    first.charge(usage(20), undefined);
    first.close();
    const told: string[] = [];
    const second = new Budget('root', {}, total);
    second.open((over) => told.push(`${over.account} ${over.spent}`));
    second.charge(usage(10), undefined);
    expect(told).toEqual(['total root 30']);
    second.close();
    const third = new Budget('root', {}, total);
    expect(third.exhaustion()).toMatchObject({ account: 'total root', limit: 'tokens' });
    expect(third.view().left.tokens).toBe(0);
    expect(() => checkTotalLimits({ timeMs: 5 })).toThrow(RangeError);
  });

  it('a turn restored with its first start keeps its deadline, and starts from what it had spent', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
    const restored = new Budget('root', { timeMs: 60_000, tokens: 100 }, undefined, 1_000_000 - 90_000);
    restored.add(40, 0.5);
    expect(restored.view().spent).toEqual({ tokens: 40, costUsd: 0.5, timeMs: 90_000 });
    expect(restored.exhaustion()).toMatchObject({ limit: 'time', max: 60_000, spent: 90_000 });
  });
});

/** A journal, record by record: `answer(agent, index, turn, tokens)` is an assistant message of that agent. */
function answer(a: string, i: number, turn: number, tokens: number): JournalRecord {
  const m: AssistantMessage = {
    role: 'assistant',
    content: [{ type: 'text', text: 'x' }],
    provider: 'scripted',
    model: 'gpt-4.1',
    stopReason: 'stop',
    usage: usage(tokens),
  };
  return { k: 'msg', s: 0, a, i, turn, step: 1, m };
}
const turnStart = (a: string, turn: number, t: number): JournalRecord => ({
  k: 'turn_start',
  s: 0,
  a,
  turn,
  inputId: `${a}.${turn}`,
  t,
});
const batch = (a: string, batchId: string, agents: string[], budget?: { tokens: number }): JournalRecord => ({
  k: 'batch',
  a,
  batchId,
  background: false,
  ...(budget ? { budget } : {}),
  tasks: agents.map((agentId) => ({ taskId: `task_${agentId}`, agentId, profile: 'default', prompt: agentId })),
});
const task =
  (ev: 'started' | 'settled') =>
  (owner: string, agentId: string): JournalRecord => ({
    k: 'task',
    a: owner,
    taskId: `task_${agentId}`,
    agentId,
    ev,
  });
const started = task('started');
const settled = task('settled');

describe('the spend ledger', () => {
  // Root turn 1 (done), turn 2 in flight from message 4: it started child C (still running), which started G (settled).
  const records: JournalRecord[] = [
    turnStart('root', 1, 100),
    answer('root', 1, 1, 7), // an earlier turn: the lifetime's alone
    turnStart('root', 2, 200),
    answer('root', 3, 2, 11), // before the snapshot (index 4): not replayed, the turn's
    batch('root', 'b1', ['C']),
    started('root', 'C'),
    turnStart('C', 1, 300),
    answer('C', 1, 1, 13), // replayed by C
    batch('C', 'b2', ['G', 'H'], { tokens: 500 }),
    started('C', 'G'),
    turnStart('G', 1, 400),
    answer('G', 1, 1, 17), // settled: C's turn 1 counts it
    settled('C', 'G'),
    answer('root', 5, 2, 19), // after the snapshot: replayed
  ];
  const ledger = new SpendLedger(records, 'root', { turn: 2, replayFrom: 4 }, () => ({
    input: 1_000_000,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
  }));

  it('gives each answer that will not replay to the nearest restored turn above it, once', () => {
    expect(ledger.turn('root', 2)).toEqual({ tokens: 11, cost: 11, startedAt: 200 });
    // G settled under b2, which is started again (H is open) with a budget of its own: b2's account counts it.
    expect(ledger.batch('b2')).toEqual({ tokens: 17, cost: 17 });
    expect(ledger.turn('C', 1)).toEqual({ tokens: 0, cost: 0, startedAt: 300 });
    expect(ledger.unclaimed).toEqual({ tokens: 7, cost: 7 });
  });

  it("without a batch budget, a settled child's spend goes to the replaying owner's turn", () => {
    const plain = records.map((record) => (record.k === 'batch' ? { ...record, budget: undefined } : record));
    const without = new SpendLedger(plain as JournalRecord[], 'root', { turn: 2, replayFrom: 4 }, () => undefined);
    expect(without.turn('C', 1)).toEqual({ tokens: 17, cost: 0, startedAt: 300 });
    expect(without.batch('b2')).toBeUndefined();
    // An idle root: its own answers are all the lifetime's.
    const idle = new SpendLedger(plain as JournalRecord[], 'root', undefined, () => undefined);
    expect(idle.unclaimed.tokens).toBe(7 + 11 + 19);
    expect(idle.turn('root', 2)).toEqual({ tokens: 0, cost: 0, startedAt: 200 });
  });
});
