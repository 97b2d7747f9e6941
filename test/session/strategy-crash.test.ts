import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { decodeRecord, type JournalRecord } from '../../src/session/index.js';
import { bundleChild, cleanTempDirs, tempDir } from './helpers.js';

// A crash in the middle of a batch's restarts resumes where the strategy stood: the child process is SIGKILLed
// while a restart's backoff is pending (or right after an escalation), reopened in a new process and run to the end.

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');
let child = '';
beforeEach(() => {
  child = bundleChild(join(import.meta.dirname, 'strategy-crash-child.ts'), tempDir());
});

function recordsOf(dir: string, id: string): JournalRecord[] {
  const path = join(dir, `${id}.jsonl`);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((line) => decodeRecord(line))
    .filter((r): r is JournalRecord => r !== undefined);
}

/** The failed turns of the tree's subagents journaled so far. */
const failedTurns = (records: JournalRecord[]) =>
  records.filter((r) => r.k === 'turn_end' && r.a !== 'root' && r.stopReason === 'error').length;

/**
 * Runs the child; with `failures`, kills it once that many subagent turns have failed and the batch's verdict on
 * the last is journaled (or a while later: a build that journals no verdict is killed in the backoff all the same).
 * Resolves whether it ran to its end.
 */
function run(
  dir: string,
  id: string,
  side: string,
  scenario: string,
  options: { failures?: number; kill?: string; until?: (records: JournalRecord[]) => boolean } = {},
) {
  const args = [child, dir, id, side, scenario, ...(options.kill ? [options.kill] : [])];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
  let output = '';
  proc.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  let timer: NodeJS.Timeout | undefined;
  const { failures, until } = options;
  if (until) {
    timer = setInterval(() => {
      if (until(recordsOf(dir, id))) proc.kill('SIGKILL');
    }, 10);
  } else if (failures !== undefined) {
    let since: number | undefined;
    timer = setInterval(() => {
      const records = recordsOf(dir, id);
      if (failedTurns(records) < failures) return;
      since ??= Date.now();
      const verdicts = records.filter((r) => r.k === 'verdict').length;
      if (verdicts >= failures || Date.now() - since > 400) proc.kill('SIGKILL');
    }, 10);
  }
  return new Promise<boolean>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code, signal) => {
      clearInterval(timer);
      if (signal === 'SIGKILL') resolve(false);
      else if (code === 0 && output.includes('done')) resolve(true);
      else reject(new Error(`the child exited with ${code}`));
    });
  });
}

const runs = (side: string) => {
  const counts: Record<string, number> = {};
  for (const line of readFileSync(side, 'utf8').split('\n').filter(Boolean)) counts[line] = (counts[line] ?? 0) + 1;
  return counts;
};
const starts = (side: string) =>
  existsSync(`${side}.starts`)
    ? readFileSync(`${side}.starts`, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { taskId: string; attempt: number; restartedBy?: string })
    : [];
/** What each real model call of a task was sent, in order: its history's roles and texts. */
const requests = (side: string) =>
  readFileSync(`${side}.requests`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { sent: string[] }).sent);
const lines = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []);
const rootEnds = (records: JournalRecord[]) =>
  records.flatMap((r) => (r.k === 'turn_end' && r.a === 'root' ? [r] : []));

describe('supervision strategies across a crash', () => {
  it('restarts before a crash count toward the intensity after it: the escalation comes on the same failure', async () => {
    const dir = tempDir();
    const side = join(dir, 'runs');
    // Killed in the second restart's backoff: two restarts are in the window.
    expect(await run(dir, 's', side, 'intensity', { failures: 2 })).toBe(false);
    expect(runs(side)).toEqual({ leaf: 2 });
    expect(await run(dir, 's', side, 'intensity')).toBe(true);
    // Without a crash the leaf runs three times (two restarts) and its third failure escalates: the same here.
    expect(runs(side)).toEqual({ leaf: 3 });
    const records = recordsOf(dir, 's');
    const ends = rootEnds(records);
    expect(ends.map((end) => [end.stopReason, end.error?.code])).toEqual([['error', 'escalated']]);
    expect(ends[0]?.error?.message).toContain('too many restarts within the intensity window');
    // Attempts go on across the crash: 0, 1, 2, each started once.
    const attempts = records.flatMap((r) => (r.k === 'task' && r.ev === 'started' ? [r.attempt ?? 0] : []));
    expect(attempts).toEqual([0, 1, 2]);
  }, 60_000);

  it('oneForAll, killed in the restart backoff: each sibling restarts once, attempts go on, none runs twice', async () => {
    const dir = tempDir();
    const side = join(dir, 'runs');
    expect(await run(dir, 's', side, 'oneForAll', { failures: 1 })).toBe(false);
    expect(runs(side)).toEqual({ writer: 1, critic: 1 });
    expect(await run(dir, 's', side, 'oneForAll')).toBe(true);
    // The writer's first run was stopped by the restart: one run per attempt, two attempts each.
    expect(runs(side)).toEqual({ writer: 2, critic: 2 });
    const records = recordsOf(dir, 's');
    const [batch] = records.filter((r) => r.k === 'batch');
    const [writer, critic] = batch?.k === 'batch' ? batch.tasks.map((t) => t.taskId) : [];
    const started = records.flatMap((r) => (r.k === 'task' && r.ev === 'started' ? [`${r.taskId}/${r.attempt}`] : []));
    expect(started.sort()).toEqual([`${critic}/0`, `${critic}/1`, `${writer}/0`, `${writer}/1`].sort());
    // The process that resumed started each at attempt 1, the writer naming the critic whose failure restarted it.
    const after = starts(side).filter((s) => s.attempt > 0);
    expect(after).toEqual(
      expect.arrayContaining([
        { taskId: writer, attempt: 1, restartedBy: critic },
        { taskId: critic, attempt: 1 },
      ]),
    );
    expect(after).toHaveLength(2);
    expect(starts(side).filter((s) => s.attempt === 0)).toHaveLength(2);
    // The verdict is one fact: the critic's failure restarted it and the writer.
    const verdicts = records.flatMap((r) => (r.k === 'verdict' ? [[r.v, r.taskId, r.restarted]] : []));
    expect(verdicts).toEqual([['restart', critic, [writer]]]);
    const ends = rootEnds(records);
    expect(ends.map((end) => end.stopReason)).toEqual(['completed']);
    const settled = records.flatMap((r) => (r.k === 'task' && r.ev === 'settled' ? [[r.taskId, r.text]] : []));
    expect(settled.sort()).toEqual(
      [
        [writer, 'writer done on run 2'],
        [critic, 'critic done on run 2'],
      ].sort(),
    );
  }, 60_000);

  it("an escalated batch reopened stays escalated: nothing runs again and the owner's turn ends with the cause once", async () => {
    const dir = tempDir();
    const side = join(dir, 'runs');
    expect(await run(dir, 's', side, 'escalate', { kill: 'cancelled' })).toBe(false);
    expect(rootEnds(recordsOf(dir, 's'))).toEqual([]);
    expect(await run(dir, 's', side, 'escalate')).toBe(true);
    expect(runs(side)).toEqual({ a: 1, b: 1 });
    const records = recordsOf(dir, 's');
    const ends = rootEnds(records);
    expect(ends.map((end) => [end.stopReason, end.error?.code])).toEqual([['error', 'escalated']]);
    expect(ends[0]?.error?.message).toContain('model failure');
    expect(ends[0]?.error?.message).toContain('a broke');
    // The root's model was not asked to go on after its swarm.
    const texts = records.flatMap((r) =>
      r.k === 'msg' && r.a === 'root' && 'role' in r.m ? [JSON.stringify(r.m)] : [],
    );
    expect(texts.join('\n')).not.toContain('root went on');
  }, 60_000);

  it('killed during a resumed run, reopened: the run goes on from its history, its journaled step not asked again', async () => {
    // Without a crash: the failed run's prompt, the resumed run's, its tool call and result, then its answer.
    const clean = tempDir();
    expect(await run(clean, 's', join(clean, 'runs'), 'resume')).toBe(true);
    const expected = requests(join(clean, 'runs'));
    expect(expected.at(-1)).toEqual(['user:leaf', 'user:leaf', 'assistant:', 'tool:noted']);

    const dir = tempDir();
    const side = join(dir, 'runs');
    const noted = (records: JournalRecord[]) => records.some((r) => r.k === 'tool_end' && r.id === 'leaf_note');
    expect(await run(dir, 's', side, 'resume', { kill: 'hang', until: noted })).toBe(false);
    expect(runs(side)).toEqual({ leaf: 3 });
    expect(await run(dir, 's', side, 'resume')).toBe(true);
    // The step that hung is asked again with the whole history; the tool call before it is neither asked nor run again.
    expect(runs(side)).toEqual({ leaf: 4 });
    expect(requests(side).at(-1)).toEqual(expected.at(-1));
    expect(lines(`${side}.notes`)).toHaveLength(1);
    const records = recordsOf(dir, 's');
    const started = records.flatMap((r) => (r.k === 'task' && r.ev === 'started' ? [r.attempt ?? 0] : []));
    expect(started).toEqual([0, 1]);
    const settled = records.flatMap((r) => (r.k === 'task' && r.ev === 'settled' ? [r.text] : []));
    expect(settled).toEqual(['leaf done on call 4']);
    expect(rootEnds(records).map((end) => end.stopReason)).toEqual(['completed']);
  }, 60_000);

  it('killed in the backoff of a resume: the run starts reopened with its history, not afresh', async () => {
    const clean = tempDir();
    expect(await run(clean, 's', join(clean, 'runs'), 'resumeBackoff')).toBe(true);
    const expected = requests(join(clean, 'runs'));

    const dir = tempDir();
    const side = join(dir, 'runs');
    expect(await run(dir, 's', side, 'resumeBackoff', { failures: 1 })).toBe(false);
    expect(runs(side)).toEqual({ leaf: 1 });
    const verdicts = recordsOf(dir, 's').flatMap((r) => (r.k === 'verdict' ? [r.v] : []));
    expect(verdicts).toEqual(['resume']);
    expect(await run(dir, 's', side, 'resumeBackoff')).toBe(true);
    expect(runs(side)).toEqual({ leaf: 3 });
    expect(requests(side)).toEqual(expected);
    expect(requests(side)[1]).toEqual(['user:leaf', 'user:leaf']);
    expect(lines(`${side}.notes`)).toHaveLength(1);
    const records = recordsOf(dir, 's');
    const started = records.flatMap((r) => (r.k === 'task' && r.ev === 'started' ? [r.attempt ?? 0] : []));
    expect(started).toEqual([0, 1]);
  }, 60_000);

  it('killed in a restart backoff, reopened: the restart waits out what is left of it, then runs once', async () => {
    const dir = tempDir();
    const side = join(dir, 'runs');
    expect(await run(dir, 's', side, 'backoff', { failures: 1 })).toBe(false);
    expect(await run(dir, 's', side, 'backoff')).toBe(true);
    expect(runs(side)).toEqual({ leaf: 2 });
    const records = recordsOf(dir, 's');
    const [verdict] = records.filter((r) => r.k === 'verdict');
    if (verdict?.k !== 'verdict') throw new Error('no verdict');
    expect([verdict.v, verdict.delayMs]).toEqual(['restart', 3000]);
    // The restarted agent's run began once the backoff ordered before the crash was over, by the journal's clock.
    const [, restarted] = records.flatMap((r) => (r.k === 'run' && r.running && r.a !== 'root' ? [r.t] : []));
    expect(restarted).toBeGreaterThanOrEqual(verdict.t + 3000);
    const started = records.flatMap((r) => (r.k === 'task' && r.ev === 'started' ? [r.attempt ?? 0] : []));
    expect(started).toEqual([0, 1]);
  }, 60_000);

  it.each(['leaf-failed', 'mid-turn-end', 'mid-ended'])(
    'a nested escalation reaches the same ancestor across a kill (%s)',
    async (kill) => {
      const dir = tempDir();
      const side = join(dir, 'runs');
      expect(await run(dir, 's', side, 'nested', { kill })).toBe(false);
      expect(await run(dir, 's', side, 'nested')).toBe(true);
      // As without the crash: the leaf ran twice (one restart, then the intensity ran out), mid was asked once.
      expect(runs(side)).toEqual({ mid: 1, leaf: 2 });
      const records = recordsOf(dir, 's');
      const [root, nested] = records.filter((r) => r.k === 'batch');
      if (root?.k !== 'batch' || nested?.k !== 'batch') throw new Error('no batches');
      const [mid] = root.tasks;
      const [leaf] = nested.tasks;
      const verdicts = records.flatMap((r) => (r.k === 'verdict' ? [[r.a, r.v, r.taskId, r.because]] : []));
      expect(verdicts).toEqual([
        [mid?.agentId, 'restart', leaf?.taskId, undefined],
        [mid?.agentId, 'escalate', leaf?.taskId, 'intensity'],
        ['root', 'escalate', mid?.taskId, 'escalation'],
      ]);
      // Mid's turn ended with its batch's escalation, the root's with mid's failure: each once.
      const ends = records.flatMap((r) => (r.k === 'turn_end' ? [[r.a, r.stopReason, r.error?.code]] : []));
      expect(ends.filter(([a]) => a === mid?.agentId || a === 'root')).toEqual([
        [mid?.agentId, 'error', 'escalated'],
        ['root', 'error', 'escalated'],
      ]);
      const [rootEnd] = rootEnds(records);
      expect(rootEnd?.error?.message).toContain(mid?.taskId);
      expect(rootEnd?.error?.message).toContain('escalation failure');
    },
    60_000,
  );
});
