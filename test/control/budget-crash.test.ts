/**
 * Budgets after a real `kill -9`: the child process runs a budgeted turn on a JSONL session and is killed while a
 * tool runs; this process reopens the session, and the resumed turn stops where the original's budget would have.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEvent, createAgent, defineTool, scriptedModel, sessions } from '../../src/index.js';
import { expectValidHistory } from '../agent/helpers.js';
import { bundleChild, cleanTempDirs, tempDir } from '../session/helpers.js';
import { script } from './budget-crash-child.js';

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');

/** Runs the child until its tool hangs, then SIGKILLs it. */
function killWhenReady(child: string, dir: string, id: string): Promise<void> {
  const proc = spawn(process.execPath, [child, dir, id], { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) proc.kill('SIGKILL');
    });
    proc.once('exit', (_code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`the child exited on its own (${signal})`)),
    );
  });
}

describe('budgets after kill -9', () => {
  it('the reopened turn goes on from the 30 tokens it had spent and stops at its budget of 45', async () => {
    const dir = tempDir();
    await killWhenReady(bundleChild(join(import.meta.dirname, 'budget-crash-child.ts'), tempDir()), dir, 'killed');
    const session = sessions({ dir }).open('killed');
    expect(session.status).toBe('interrupted');
    const runs: string[] = [];
    const tool = (name: string) =>
      defineTool({
        name,
        description: name,
        schema: z.object({}),
        execute: () => {
          runs.push(name);
          return 'worked';
        },
      });
    const model = scriptedModel(script);
    const agent = createAgent({
      model,
      tools: [tool('work'), tool('hang')],
      session,
      budget: { tokens: 45 },
      totalBudget: { tokens: 1000 },
    });
    const ends: AgentEvent[] = [];
    agent.on('turn_end', (e) => ends.push(e));
    await session.idle();
    // Three answers replayed from the journal; the fourth asked (40), the fifth reaches 45 and its call never runs.
    expect(model.requests).toHaveLength(2);
    expect(runs).toEqual(['work']);
    expect(ends.map((e) => (e.type === 'turn_end' ? e.stopReason : ''))).toEqual(['budget_exhausted']);
    expect(agent.getState().totalBudget?.spent.tokens).toBe(50);
    expectValidHistory(agent.messages);
    session.close();
    await agent.stop();
  }, 30_000);
});
