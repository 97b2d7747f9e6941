import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessions } from '../../src/index.js';
import { expectValidHistory, resultText, toolResults } from '../agent/helpers.js';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const CHILD = join(import.meta.dirname, 'crash-child.ts');

/** Runs the child; kills it `killAfterMs` after it is ready (undefined: lets it finish). True if it finished. */
function runChild(dir: string, side: string, killAfterMs?: number): Promise<boolean> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, 'crashy', side], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (killAfterMs !== undefined && output.includes('ready') && !output.includes('armed')) {
        output += 'armed';
        setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.once('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(output.includes('done'));
      else if (code === 0) resolve(true);
      else reject(new Error(`the child exited with ${code}`));
    });
  });
}

describe('sessions: SIGKILL at random moments', () => {
  it('loses nothing: every turn ends once, no journaled tool runs twice, every history stays valid', async () => {
    let dir = '';
    let side = '';
    let kills = 0;
    let finished = false;
    // A child that finishes before its kill lands (a quiet machine runs it in less than the longest delay) proves
    // nothing: start over on a fresh session until a run was really killed.
    for (let attempt = 0; attempt < 20 && kills === 0; attempt++) {
      dir = tempDir();
      side = join(dir, 'executions.txt');
      finished = false;
      // Kill moments spread over the run: model streaming, tools running, approvals waiting, between steps.
      while (kills < 50) {
        const done = await runChild(dir, side, Math.random() * 120);
        if (done) {
          finished = true;
          break;
        }
        kills++;
        // A killed run may have finished its work before the signal landed.
        const info = sessions({ dir }).list()[0];
        if (info && info.status === 'idle' && info.messages >= 11) break;
      }
    }
    if (!finished) await runChild(dir, side);
    expect(kills).toBeGreaterThan(0);

    const session = sessions({ dir }).open('crashy');
    const journal = session.journal;
    session.close();
    expect(session.status).toBe('idle');
    const messages = journal.messages;
    expectValidHistory(messages);
    const ends = readFileSync(join(dir, 'crashy.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('"k":"turn_end"'))
      .map((line) => JSON.parse(line) as { inputId: string; stopReason: string });
    expect(ends.map((e) => e.stopReason)).toEqual(['completed', 'completed']);
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
    console.log(`crash test: ${kills} kills, ${toolResults(messages).length} tool results`);
  }, 600_000);
});
