import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessions } from '../../src/index.js';
import { AgentJournal } from '../../src/runtime/session/restore.js';
import { decodeRecord, type JournalRecord } from '../../src/session/index.js';
import { expectValidHistory, resultText, toolResults } from '../agent/helpers.js';
import { bundleChild, cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');
const KILLS = Number(process.env.CRASH_KILLS ?? 50);

/**
 * When to kill a run: `afterMs` after the child is ready, or `afterMs` after the `nth` time it announced a moment
 * of the aimed kind (see crash-child.ts). Undefined: the run is let finish.
 */
interface Aim {
  moment?: string;
  nth?: number;
  afterMs: number;
}

/** Runs the child and kills it where `aim` says. True if it finished (or said it was done before the kill). */
function runChild(child: string, dir: string, id: string, side: string, aim?: Aim): Promise<boolean> {
  const proc = spawn(process.execPath, [child, dir, id, side], { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
  let output = '';
  let armed = false;
  const trigger = aim?.moment === undefined ? 'ready' : `moment ${aim.moment}\n`;
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (aim === undefined || armed) return;
      if (output.split(trigger).length - 1 >= (aim.nth ?? 1)) {
        armed = true;
        setTimeout(() => proc.kill('SIGKILL'), aim.afterMs);
      }
    });
    proc.once('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(output.includes('done'));
      else if (code === 0) resolve(true);
      else reject(new Error(`the child exited with ${code}`));
    });
  });
}

/**
 * Where a killed run stood, read from the journal it left: every kind of wait the kill interrupted (a tool can run
 * while another call of its batch waits for approval and a background result waits to be taken in).
 */
function killedDuring(dir: string, id: string): string[] {
  const path = join(dir, `${id}.jsonl`);
  const lines = existsSync(path) ? readFileSync(path, 'utf8').split('\n') : [];
  const records = lines.map((line) => decodeRecord(line)).filter((r): r is JournalRecord => r !== undefined);
  const started = new Set<string>();
  const asked = new Set<string>();
  for (const record of records) {
    if (record.k === 'tool_start') started.add(`${record.a}/${record.id}`);
    if (record.k === 'tool_end') started.delete(`${record.a}/${record.id}`);
    if (record.k === 'asked') asked.add(`${record.a}/${record.id}`);
    if (record.k === 'approval') asked.delete(`${record.a}/${record.id}`);
  }
  // Turns under way (per agent): between a turn's start and its end, an agent waits on its model or is between
  // steps (a snapshot is written only where the journal cannot lead, so the last record says little on its own).
  const turns = new Set<string>();
  for (const record of records) {
    if (record.k === 'turn_start') turns.add(`${record.a}/${record.inputId}`);
    if (record.k === 'turn_end') turns.delete(`${record.a}/${record.inputId}`);
  }
  const background = new Set(
    records.flatMap((r) => (r.k === 'batch' && r.background ? r.tasks : [])).map((t) => t.taskId),
  );
  const due = records.filter((r) => r.k === 'task' && r.ev === 'settled' && background.has(r.taskId)).length;
  const last = records.at(-1);
  const held: string[] = [];
  if (due > records.filter((r) => r.k === 'notice').length) held.push('notification pending');
  if (started.size > 0) held.push('tool execution');
  if (asked.size > 0) held.push('approval wait');
  if (held.length > 0) return held;
  if (turns.size > 0) return ['model streaming / between steps'];
  if (!last || last.k === 'session') return ['start-up'];
  if (last.k === 'run' && !last.running) return ['after the run'];
  return [`after ${last.k}`];
}

/**
 * Checks one finished session against its side file of tool executions: every prompt's turn ended once, every
 * task settled once, every background result was delivered once, no tool call ran twice, every history is valid.
 */
function verify(dir: string, id: string, side: string): void {
  const manager = sessions({ dir, onWarning: () => {} });
  const session = manager.open(id);
  session.close();
  expect(session.status, id).toBe('idle');
  const records = readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalRecord);
  const dump = (what: unknown) => `${id}: ${JSON.stringify(what)}`;

  const prompts = records.flatMap((r) => (r.k === 'input' ? [r.inputId] : []));
  const ends = records.flatMap((r) => (r.k === 'turn_end' && r.a === 'crash' ? [r] : []));
  expect(prompts, dump(ends)).toHaveLength(2);
  for (const inputId of prompts) {
    const mine = ends.filter((end) => end.inputId === inputId);
    expect(
      mine.map((end) => end.stopReason),
      dump(ends),
    ).toEqual(['completed']);
  }
  expect(new Set(ends.map((end) => end.inputId)).size, dump(ends)).toBe(ends.length);

  const tasks = records.flatMap((r) => (r.k === 'batch' ? r.tasks : []));
  expect(tasks.map((task) => task.prompt).sort()).toEqual(['bg', 'fg1', 'fg2', 'leaf']);
  const settles = records.flatMap((r) => (r.k === 'task' && r.ev === 'settled' ? [r.taskId] : []));
  expect(settles.sort(), dump(settles)).toEqual(tasks.map((task) => task.taskId).sort());
  const backgroundBatches = records.filter((r) => r.k === 'batch' && r.background);
  const background = backgroundBatches.flatMap((r) => (r.k === 'batch' ? r.tasks : []));
  const notices = records.flatMap((r) => (r.k === 'notice' ? [r.taskId] : []));
  expect(notices.sort(), dump(notices)).toEqual(background.map((task) => task.taskId).sort());
  // Each background result is in its owner's history once (the root's, and fg1's own background subagent's).
  const ownedBy = (agentId: string) =>
    backgroundBatches.reduce((n, r) => n + (r.k === 'batch' && r.a === agentId ? r.tasks.length : 0), 0);

  const executions = new Map<string, number>();
  const lines = existsSync(side) ? readFileSync(side, 'utf8').split('\n').filter(Boolean) : [];
  for (const callId of lines) executions.set(callId, (executions.get(callId) ?? 0) + 1);
  for (const [callId, count] of executions) expect(count, `${id}: tool call ${callId} ran ${count} times`).toBe(1);
  for (const agentId of ['crash', ...tasks.map((task) => task.agentId)]) {
    const history = new AgentJournal(agentId, records).messages;
    expectValidHistory(history);
    const delivered = history.filter((m) => m.role === 'user' && m.source === 'notification');
    expect(delivered, dump(delivered)).toHaveLength(ownedBy(agentId));
    for (const result of toolResults(history)) {
      if (result.toolName === 'agent' || result.toolName === 'swarm') continue;
      // A real result came from exactly one execution; a restart's result from at most one.
      if (resultText(result).includes('interrupted by a restart')) {
        expect(executions.get(result.toolCallId) ?? 0).toBeLessThanOrEqual(1);
      } else expect(executions.get(result.toolCallId), `${id}: ${result.toolCallId}`).toBe(1);
    }
  }
}

describe('sessions: SIGKILL at random moments', () => {
  it(`loses nothing over ${KILLS} kills: every turn ends once, no journaled tool runs twice, histories stay valid`, async () => {
    const dir = process.env.CRASH_DIR ?? tempDir();
    const child = bundleChild(join(import.meta.dirname, 'crash-child.ts'), tempDir());
    const moments = new Map<string, number>();
    let kills = 0;
    let sessionsRun = 0;
    // Each session is killed until a run of it finishes; then it is checked and the next kills go to a new session,
    // until fifty kills have landed. A kill that lands after the child said it was done does not count. Four
    // sessions go at once: the children mostly wait on their model's latency. A failed check stops every worker
    // (no child is started once the test has failed and its files go away).
    // One kill in five is timed from the start; the others are aimed, in turn, a few milliseconds after the child
    // announced a model call, a tool's start, an approval question or a background result owed to its owner (its
    // first to fourth such moment since it was started, so that aimed kills land further in as well).
    const aims = [undefined, 'streaming', 'tool', 'approval', 'notification'] as const;
    let attempts = 0;
    let failed = false;
    const worker = async () => {
      while (kills < KILLS && !failed) {
        const id = `crashy-${sessionsRun++}`;
        const side = join(dir, `${id}.executions`);
        for (let attempt = 0; !failed; attempt++) {
          // Once fifty kills have landed (or a session has taken fifteen), the run is let finish. Timed kills die
          // early in the first attempts (a model call, the first batch), later ones further in.
          const enough = kills >= KILLS || attempt >= 15;
          const moment = aims[attempts++ % aims.length];
          const aim: Aim | undefined = enough
            ? undefined
            : moment === undefined
              ? { afterMs: Math.random() * Math.min(40 + attempt * 40, 300) }
              : {
                  moment,
                  nth: 1 + Math.floor(Math.random() * (moment === 'notification' ? 2 : 4)),
                  afterMs: 1 + Math.random() * 3,
                };
          if (await runChild(child, dir, id, side, aim)) break;
          kills++;
          for (const held of killedDuring(dir, id)) moments.set(held, (moments.get(held) ?? 0) + 1);
        }
        if (failed) return;
        verify(dir, id, side);
      }
    };
    const guarded = () =>
      worker().catch((error: unknown) => {
        failed = true;
        throw error;
      });
    const results = await Promise.allSettled([guarded(), guarded(), guarded(), guarded()]);
    for (const result of results) if (result.status === 'rejected') throw result.reason;
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    console.log(`crash test: ${kills} kills over ${sessionsRun} sessions:`, Object.fromEntries(moments));
    // The moments each took kills (a kill counts for every kind of wait it interrupted).
    for (const kind of ['model streaming / between steps', 'tool execution', 'approval wait', 'notification pending'])
      expect(moments.get(kind) ?? 0, `kills during ${kind}`).toBeGreaterThan(0);
  }, 300_000);
});
