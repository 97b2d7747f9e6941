import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Message, textOf } from '../../src/index.js';
import { AgentJournal } from '../../src/runtime/session/restore.js';
import type { JournalRecord } from '../../src/session/index.js';
import { expectValidHistory, resultText, toolResults } from '../agent/helpers.js';
import { bundleChild, cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');
let child = '';
let bundleDir = '';
beforeAll(() => {
  bundleDir = mkdtempSync(join(tmpdir(), 'troupe-nested-'));
  child = bundleChild(join(import.meta.dirname, 'nested-child.ts'), bundleDir);
});
afterAll(() => rmSync(bundleDir, { recursive: true, force: true }));

/** Runs the child; with `kill`, kills it with SIGKILL as soon as it says its moment has come. */
function run(dir: string, side: string, shape: string, moment: string, kill: boolean): Promise<string> {
  const proc = spawn(process.execPath, [child, dir, side, shape, moment], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: ROOT,
  });
  let output = '';
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (kill && output.includes('moment')) proc.kill('SIGKILL');
    });
    proc.once('exit', (code, signal) => {
      if (signal === 'SIGKILL' || code === 0) resolve(output);
      else reject(new Error(`the child exited with ${code}`));
    });
  });
}

function recordsOf(dir: string): JournalRecord[] {
  return readFileSync(join(dir, 'nested.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalRecord);
}

const notifications = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'user' && m.source === 'notification');

/**
 * Kills the child at `moment`, runs it again to the end, and checks the whole tree: both tasks settled once, leaf's
 * result delivered once (one notice, one notification in mid's history), every history valid, no tool ran twice,
 * and mid handed off only after it had seen leaf's result. Returns the journal as the kill left it.
 */
async function killAndResume(shape: 'idle' | 'busy', moment: 'leaf' | 'owed' | 'hang'): Promise<JournalRecord[]> {
  const dir = tempDir();
  const side = join(dir, 'executions');
  const killed = await run(dir, side, shape, moment, true);
  expect(killed).toContain('moment');
  expect(killed).not.toContain('done');
  const before = recordsOf(dir);
  const finished = await run(dir, side, shape, moment, false);
  expect(finished).toContain('done');

  const records = recordsOf(dir);
  const tasks = records.flatMap((r) => (r.k === 'batch' ? r.tasks : []));
  expect(tasks.map((task) => task.prompt).sort()).toEqual(['leaf', 'mid']);
  const settles = records.flatMap((r) => (r.k === 'task' && r.ev === 'settled' ? [r] : []));
  expect(settles.map((r) => r.taskId).sort()).toEqual(tasks.map((task) => task.taskId).sort());
  const leaf = tasks.find((task) => task.prompt === 'leaf');
  const mid = tasks.find((task) => task.prompt === 'mid');
  expect(records.filter((r) => r.k === 'notice').map((r) => (r.k === 'notice' ? r.taskId : ''))).toEqual([
    leaf?.taskId,
  ]);

  const midHistory = new AgentJournal(mid?.agentId ?? '', records).messages;
  expectValidHistory(midHistory);
  expect(notifications(midHistory).map((m) => textOf(m))).toEqual([expect.stringContaining('leaf done')]);
  expect(textOf(midHistory.at(-1) ?? { role: 'user', content: [] })).toBe('mid saw leaf');
  const leafHistory = new AgentJournal(leaf?.agentId ?? '', records).messages;
  expectValidHistory(leafHistory);
  const rootHistory = new AgentJournal('root', records).messages;
  expectValidHistory(rootHistory);
  expect(resultText(toolResults(rootHistory).find((r) => r.toolCallId === 'root_mid'))).toContain('mid saw leaf');
  expect(textOf(rootHistory.at(-1) ?? { role: 'user', content: [] })).toBe('root done');

  const executions = new Map<string, number>();
  for (const callId of existsSync(side) ? readFileSync(side, 'utf8').split('\n').filter(Boolean) : []) {
    executions.set(callId, (executions.get(callId) ?? 0) + 1);
  }
  for (const [callId, count] of executions) expect(count, `${callId} ran ${count} times`).toBe(1);
  return before;
}

describe('sessions: background subagents of a subagent, across a SIGKILL', () => {
  it('a background task still running at the kill starts again, and its result wakes its owner once', async () => {
    const before = await killAndResume('idle', 'leaf');
    expect(before.filter((r) => r.k === 'task' && r.ev === 'settled')).toHaveLength(0);
  });

  it('a result settled but not yet taken in at the kill is delivered once, after its owner has replayed', async () => {
    const before = await killAndResume('busy', 'owed');
    expect(before.filter((r) => r.k === 'task' && r.ev === 'settled')).toHaveLength(1);
    expect(before.filter((r) => r.k === 'notice')).toHaveLength(0);
  });

  it('a result that had woken its idle owner opens the same turn again in the replay, not a second time', async () => {
    const before = await killAndResume('idle', 'hang');
    expect(before.filter((r) => r.k === 'notice')).toHaveLength(1);
    expect(before.filter((r) => r.k === 'turn_start' && r.inputId.startsWith('notify.'))).toHaveLength(1);
  });

  it('a result that had joined its busy owner at a step boundary joins the replay at the same boundary', async () => {
    const before = await killAndResume('busy', 'hang');
    expect(before.filter((r) => r.k === 'notice')).toHaveLength(1);
    expect(before.filter((r) => r.k === 'turn_start' && r.inputId.startsWith('notify.'))).toHaveLength(0);
  });
});
