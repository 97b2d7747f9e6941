import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SupervisionStrategy } from '../../src/protocol/index.js';
import { decodeRecord, type JournalRecord } from '../../src/session/index.js';
import { causeText } from '../helpers/strategy-faults.js';
import { bundleChild, cleanTempDirs, tempDir } from './helpers.js';
import { faultBatch } from './strategy-faults-plan.js';

// Fault injection across SIGKILLs: child processes run 300 random batches (100 per strategy) of the strategy fault
// generator, each a session of its own, and are killed again and again a few milliseconds after a task's turn
// failed (while its batch's restart backoff is pending), and kill themselves at nested escalations (see the child);
// a new process goes on from the journals. Each batch is then checked from its journal. TROUPE_FAULT_SEED=<n>
// replays the batches (not the kills' timing).

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');
const BATCHES = Number(process.env.TROUPE_FAULT_BATCHES ?? 300);
const KILLS = 10;
const SEED = Number(process.env.TROUPE_FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31));
const STRATEGIES: SupervisionStrategy[] = ['oneForOne', 'oneForAll', 'restForOne'];

/** Runs the child over batches from `from`; kills it `afterMs` after its `nth` failed task turn. */
function runChild(child: string, dir: string, side: string, from: number, kill?: { nth: number; afterMs: number }) {
  const args = [child, dir, side, String(from), String(BATCHES), String(SEED)];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
  let output = '';
  let armed = false;
  let done = from;
  proc.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    for (const match of output.matchAll(/^batch (\d+)$/gm)) done = Math.max(done, Number(match[1]) + 1);
    if (!kill || armed || output.split('moment failed\n').length - 1 < kill.nth) return;
    armed = true;
    setTimeout(() => proc.kill('SIGKILL'), kill.afterMs);
  });
  return new Promise<{ finished: boolean; done: number }>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve({ finished: output.includes('done\n'), done });
      else if (code === 0) resolve({ finished: true, done: BATCHES });
      else reject(new Error(`the child exited with ${code} at batch ${done} (seed ${SEED}; its stderr says more)`));
    });
  });
}

const recordsOf = (dir: string, k: number): JournalRecord[] =>
  readFileSync(join(dir, `batch-${k}.jsonl`), 'utf8')
    .split('\n')
    .map((line) => decodeRecord(line))
    .filter((r): r is JournalRecord => r !== undefined);

/** Whether the journal of batch `k` ends with a restart ordered whose task has not started again. */
function restartPending(dir: string, k: number): boolean {
  const records = existsSync(join(dir, `batch-${k}.jsonl`)) ? recordsOf(dir, k) : [];
  return records.some(
    (r, i) =>
      r.k === 'verdict' &&
      (r.v === 'restart' || r.v === 'resume') &&
      [r.taskId, ...(r.restarted ?? [])].some(
        (taskId) => !records.slice(i).some((s) => s.k === 'task' && s.taskId === taskId),
      ),
  );
}

/** The child's own kills so far, at nested escalations (see strategy-faults-child.ts). */
const selfKills = (side: string) =>
  existsSync(`${side}.selfkills`) ? readFileSync(`${side}.selfkills`, 'utf8').split('\n').filter(Boolean).length : 0;

/** One batch, from its journal: it ended once, as its verdicts say, and nothing of it ran after. */
function check(dir: string, k: number): { restarts: number; escalated: boolean; nested: number } {
  const what = `batch ${k} of seed ${SEED}`;
  const { config } = faultBatch(SEED + k, STRATEGIES[k % 3] as SupervisionStrategy);
  const records = recordsOf(dir, k);
  const [batch, ...others] = records.filter((r) => r.k === 'batch' && r.a === 'root');
  expect(others, what).toEqual([]);
  if (batch?.k !== 'batch') throw new Error(`${what}: no batch`);
  const taskIds = batch.tasks.map((task) => task.taskId);
  const mine = (r: JournalRecord) => 'taskId' in r && taskIds.includes(r.taskId);

  // Every task settles exactly once; each run of it starts once, and none after its batch ended.
  const settles = records.flatMap((r, i) => (r.k === 'task' && r.ev === 'settled' && mine(r) ? [[r.taskId, i]] : []));
  expect(settles.map(([id]) => id).sort(), what).toEqual([...taskIds].sort());
  const ended = Math.max(...settles.map(([, i]) => i as number));
  for (const taskId of taskIds) {
    const runs = records.flatMap((r, i) =>
      r.k === 'task' && r.ev === 'started' && r.taskId === taskId ? [[r.attempt ?? 0, i]] : [],
    );
    // A second restart while waiting out the first counts one attempt more: attempts only rise, each started once.
    const attempts = runs.map(([attempt]) => attempt as number);
    expect(attempts[0], `${what}: first run of ${taskId}`).toBe(0);
    expect(attempts, `${what}: runs of ${taskId}`).toEqual([...new Set(attempts)].sort((a, b) => a - b));
    for (const [, at] of runs) expect(at as number, `${what}: ${taskId} ran after its batch ended`).toBeLessThan(ended);
  }

  // Restarts (one per failure restarted or resumed, however many tasks it restarts) stay within the intensity.
  const verdicts = records.filter((r) => r.k === 'verdict' && r.a === 'root' && r.batchId === batch.batchId);
  const restarts = verdicts.filter((r) => r.k === 'verdict' && (r.v === 'restart' || r.v === 'resume'));
  if (config.intensity) expect(restarts.length, what).toBeLessThanOrEqual(config.intensity.maxRestarts);
  // oneForOne restarts nobody else; a sibling is restarted with its failed task once per verdict.
  for (const verdict of restarts) {
    if (verdict.k !== 'verdict') continue;
    if (config.strategy === 'oneForOne') expect(verdict.restarted, what).toBeUndefined();
    const restarted = verdict.restarted ?? [];
    expect(new Set(restarted).size, what).toBe(restarted.length);
    expect(restarted, what).not.toContain(verdict.taskId);
  }

  // A task whose own batch escalated does not complete that run: its turn ends with the escalation (unless its
  // run was stopped first), which its batch then decides on, as without a crash.
  const agentOf = new Map(batch.tasks.map((task) => [task.agentId, task.taskId]));
  let nested = 0;
  records.forEach((r, i) => {
    if (r.k !== 'verdict' || r.v !== 'escalate' || !agentOf.has(r.a)) return;
    nested++;
    const taskId = agentOf.get(r.a);
    const next = records.findIndex((s, j) => j > i && s.k === 'task' && s.ev === 'started' && s.taskId === taskId);
    const run = records.slice(i, next === -1 ? undefined : next);
    const completed = run.filter((s) => s.k === 'turn_end' && s.a === r.a && s.stopReason === 'completed');
    expect(completed, `${what}: ${taskId} completed after its batch escalated`).toEqual([]);
  });

  // The root's turn ends once: with the escalation (naming the task and the cause) if its batch escalated.
  const escalations = verdicts.filter((r) => r.k === 'verdict' && r.v === 'escalate');
  expect(escalations.length, what).toBeLessThanOrEqual(1);
  const ends = records.filter((r) => r.k === 'turn_end' && r.a === 'root');
  expect(ends.length, what).toBe(1);
  const [end] = ends;
  const [escalation] = escalations;
  if (end?.k !== 'turn_end') throw new Error(what);
  if (escalation?.k === 'verdict') {
    expect([end.stopReason, end.error?.code], what).toEqual(['error', 'escalated']);
    expect(end.error?.message, what).toContain(escalation.taskId);
    expect(end.error?.message, what).toContain(causeText(escalation.because as 'intensity'));
    // Escalated: the tasks left were cancelled, none completed after it.
    const after = records.slice(records.indexOf(escalation));
    for (const r of after)
      if (r.k === 'task' && r.ev === 'settled' && mine(r)) expect(r.status, what).not.toBe('completed');
  } else {
    expect([end.stopReason, end.error?.code], what).toEqual(['completed', undefined]);
  }
  return { restarts: restarts.length, escalated: escalation !== undefined, nested };
}

describe('supervision strategies under random faults and SIGKILLs', () => {
  it(`${BATCHES} batches across ${KILLS} kills in restart backoffs end as their strategies say`, async () => {
    const dir = tempDir();
    const side = join(dir, 'calls');
    const child = bundleChild(join(import.meta.dirname, 'strategy-faults-child.ts'), tempDir());
    let from = 0;
    let kills = 0;
    let pending = 0;
    // Kills spread over the batches: each after the 1st–6th failed task turn of a run, 1–15 ms later.
    for (let attempt = 0; from < BATCHES; attempt++) {
      // Until one has landed in a backoff too: on a loaded machine the first ten may all miss one.
      const kill =
        (kills < KILLS || pending === 0) && attempt < KILLS * 6
          ? { nth: 1 + (attempt % 6), afterMs: 1 + ((attempt * 7) % 15) }
          : undefined;
      const before = selfKills(side);
      const run = await runChild(child, dir, side, from, kill);
      if (selfKills(side) > before) attempt--;
      else if (!run.finished) {
        kills++;
        if (restartPending(dir, run.done)) pending++;
      } else if (!kill) break;
      from = run.finished ? BATCHES : run.done;
    }
    expect(kills, `seed ${SEED}`).toBeGreaterThanOrEqual(KILLS);
    expect(selfKills(side), `seed ${SEED}`).toBeGreaterThan(0);
    const tally = { restarts: 0, escalated: 0, nested: 0 };
    for (let k = 0; k < BATCHES; k++) {
      const { restarts, escalated, nested } = check(dir, k);
      tally.nested += nested;
      tally.restarts += restarts;
      tally.escalated += escalated ? 1 : 0;
    }
    // Kills landed while a restart was ordered and not yet started (in its backoff).
    expect(pending, `seed ${SEED}`).toBeGreaterThan(0);
    expect(tally.restarts).toBeGreaterThan(0);
    expect(tally.escalated).toBeGreaterThan(0);
    expect(tally.nested).toBeGreaterThan(0);
    console.log(
      `strategy faults: ${BATCHES} batches, ${kills} kills (${pending} in a backoff), ` +
        `${selfKills(side)} at nested failures, seed ${SEED}:`,
      tally,
    );
  }, 240_000);
});
