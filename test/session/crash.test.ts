import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessions } from '../../src/index.js';
import { decodeRecord, type JournalRecord } from '../../src/session/index.js';
import { expectValidHistory, resultText, toolResults } from '../agent/helpers.js';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');
const KILLS = 50;

/**
 * The child is bundled once into one plain JavaScript file: started through tsx it takes ~1 s to load, bundled
 * ~0.2 s, which is what lets fifty kills (and the runs that finish after them) fit in CI's time.
 */
function bundleChild(dir: string): string {
  const out = join(dir, 'crash-child.mjs');
  execFileSync(
    join(ROOT, 'node_modules', '.bin', 'esbuild'),
    [
      join(import.meta.dirname, 'crash-child.ts'),
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--log-level=warning',
      `--outfile=${out}`,
      "--banner:js=import{createRequire}from'node:module';const require=createRequire(import.meta.url);",
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );
  return out;
}

/** Runs the child; kills it `killAfterMs` after it is ready (undefined: lets it finish). True if it finished. */
function runChild(child: string, dir: string, id: string, side: string, killAfterMs?: number): Promise<boolean> {
  const proc = spawn(process.execPath, [child, dir, id, side], { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
  let output = '';
  let armed = false;
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (killAfterMs !== undefined && !armed && output.includes('ready')) {
        armed = true;
        setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
      }
    });
    proc.once('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(output.includes('done'));
      else if (code === 0) resolve(true);
      else reject(new Error(`the child exited with ${code}`));
    });
  });
}

/** Where a killed run stood, read from the journal it left (what the kill interrupted). */
function killedDuring(dir: string, id: string): string {
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
  const last = records.at(-1);
  if (started.size > 0) return 'tool execution';
  if (asked.size > 0) return 'approval wait';
  if (!last || last.k === 'session') return 'start-up';
  if (last.k === 'run' && !last.running) return 'after the run';
  if (last.k === 'snapshot' || last.k === 'msg') return 'model streaming / between steps';
  return `after ${last.k}`;
}

/** Checks one finished session against its side file of tool executions; the number of tool results. */
function verify(dir: string, id: string, side: string): number {
  const manager = sessions({ dir, onWarning: () => {} });
  const session = manager.open(id);
  const journal = session.journal;
  session.close();
  expect(session.status).toBe('idle');
  const messages = journal.messages;
  expectValidHistory(messages);
  const ends = readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .split('\n')
    .filter((line) => line.includes('"k":"turn_end"'))
    .map((line) => JSON.parse(line) as { inputId: string; stopReason: string });
  expect(
    ends.map((e) => e.stopReason),
    `${id}: ${JSON.stringify(ends)}`,
  ).toEqual(['completed', 'completed']);
  expect(new Set(ends.map((e) => e.inputId)).size).toBe(2);
  expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'second done' }] });
  const executions = new Map<string, number>();
  const lines = existsSync(side) ? readFileSync(side, 'utf8').split('\n').filter(Boolean) : [];
  for (const callId of lines) executions.set(callId, (executions.get(callId) ?? 0) + 1);
  for (const [callId, count] of executions) expect(count, `tool call ${callId} ran ${count} times`).toBe(1);
  for (const result of toolResults(messages)) {
    // A real result came from exactly one execution; a restart's result from at most one.
    if (resultText(result).includes('interrupted by a restart')) {
      expect(executions.get(result.toolCallId) ?? 0).toBeLessThanOrEqual(1);
    } else expect(executions.get(result.toolCallId)).toBe(1);
  }
  return toolResults(messages).length;
}

describe('sessions: SIGKILL at random moments', () => {
  it(`loses nothing over ${KILLS} kills: every turn ends once, no journaled tool runs twice, histories stay valid`, async () => {
    const dir = process.env.CRASH_DIR ?? tempDir();
    const child = bundleChild(tempDir());
    const moments = new Map<string, number>();
    let kills = 0;
    let sessionsRun = 0;
    // Each session is killed at random moments until a run of it finishes; then it is checked and the next
    // kills go to a new session, until fifty kills have landed. A kill that lands after the child said it was
    // done does not count. Four sessions go at once: the children mostly wait on their model's latency.
    const worker = async () => {
      while (kills < KILLS) {
        const id = `crashy-${sessionsRun++}`;
        const side = join(dir, `${id}.executions`);
        for (let attempt = 0; ; attempt++) {
          // The first attempts die early (a model call, the first batch), later ones further in.
          const delay = Math.random() * (40 + attempt * 60);
          if (await runChild(child, dir, id, side, delay)) break;
          kills++;
          const moment = killedDuring(dir, id);
          moments.set(moment, (moments.get(moment) ?? 0) + 1);
        }
        verify(dir, id, side);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    // Kills landed at more than one kind of moment (which ones is random; they are reported).
    expect(moments.size).toBeGreaterThan(1);
    console.log(`crash test: ${kills} kills over ${sessionsRun} sessions:`, Object.fromEntries(moments));
  }, 300_000);
});
