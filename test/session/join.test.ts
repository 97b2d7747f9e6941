import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSupervisor, defineTool, type ModelRequest, scriptedModel, sessions, textOf } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { expectValidHistory, latch, taskOf } from '../agent/helpers.js';
import { cleanTempDirs, crashCopy, tempDir } from './helpers.js';

cleanTempDirs();

const JOINED = /join policy was decided without it/;

/** Whose task a request is (its prompt), and how many tool results its history holds. */
function who(request: ModelRequest): { name: string; results: number } {
  return { name: taskOf(request), results: request.messages.filter((m) => m.role === 'tool').length };
}

/**
 * Tasks that call `work` until their tool has given a real result, then answer. `hold` names the tasks whose work
 * waits for its signal (an interrupt, a cancel): they never finish on their own. Counts model calls per task.
 */
function tree(hold: Set<string>) {
  const asked = new Map<string, number>();
  const runs = new Map<string, number>();
  const holding = latch();
  const script = (request: ModelRequest): ScriptedAnswer => {
    const { name, results } = who(request);
    asked.set(name, (asked.get(name) ?? 0) + 1);
    const last = request.messages.at(-1);
    const worked = last?.role === 'tool' && textOf(last).includes('worked');
    if (!worked) return { toolCalls: [{ id: `${name}_work_${results}`, name: 'work', args: { who: name } }] };
    return { text: `${name} done` };
  };
  const work = defineTool({
    name: 'work',
    description: 'w',
    schema: z.object({ who: z.string() }),
    execute: async ({ who: name }, ctx) => {
      runs.set(name, (runs.get(name) ?? 0) + 1);
      if (hold.has(name)) {
        holding.resolve();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        return `${name} stopped`;
      }
      return `${name} worked`;
    },
  });
  return { asked, runs, holding: holding.promise, model: scriptedModel(script), tools: [work] };
}

async function settledIn(session: { tasks(): Array<{ prompt: string; status: string }> }, names: string[]) {
  for (let i = 0; i < 200; i++) {
    const settled = session.tasks().filter((t) => t.status !== 'open');
    if (names.every((n) => settled.some((t) => t.prompt === n))) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`tasks ${names.join(', ')} did not settle`);
}

/** Waits until the session's journal file holds a line with `text` (a record reaches it with its tick's write). */
async function inJournal(dir: string, text: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [file] = readdirSync(dir).filter((name) => name.endsWith('.jsonl'));
    if (file && readFileSync(joinPath(dir, file), 'utf8').includes(text)) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`the journal never held ${text}`);
}

describe('sessions: a re-attached batch keeps its join policy', () => {
  it('first(2) with one task completed before the crash needs one more: the last is cancelled, not run on', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const before = tree(new Set(['b', 'c']));
    const supervisor = createSupervisor({ model: before.model, tools: before.tools, session });
    void supervisor.swarm(['a', 'b', 'c'], { join: { first: 2 } });
    await settledIn(session, ['a']);
    await before.holding;
    // a's settle is written with its tick's records: the kill comes once it is in the file.
    await inJournal(dir, '"ev":"settled"');
    const crashed = crashCopy(dir); // killed while b and c run their work
    session.close();
    await supervisor.stop();

    // After the restart c's work holds again, b's finishes: first(2) is met by a and b, and c is cancelled.
    const after = tree(new Set(['c']));
    const reopened = sessions({ dir: crashed }).open(session.id);
    const again = createSupervisor({ model: after.model, tools: after.tools, session: reopened });
    await reopened.idle();
    const tasks = reopened.tasks();
    expect(tasks.map((t) => [t.prompt, t.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'cancelled'],
    ]);
    expect(tasks[2]?.result?.text).toMatch(JOINED);
    expect(after.runs.get('a')).toBeUndefined(); // settled before the crash: never started again
    for (const task of tasks.slice(1)) expectValidHistory(again.messagesOf(task.agentId) ?? []);
    reopened.close();
    await again.stop();
  });

  it('a batch whose first(1) was decided before the crash settles its other tasks without running them', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const before = tree(new Set(['b', 'c']));
    const supervisor = createSupervisor({ model: before.model, tools: before.tools, session });
    void supervisor.swarm(['a', 'b', 'c'], { join: 'any' });
    await before.holding;
    await settledIn(session, ['a']);
    await inJournal(dir, '"ev":"settled"');
    const crashed = crashCopy(dir);
    session.close();
    await supervisor.stop();
    // The kill came right after a's settle reached the journal, before b's and c's cancellations did.
    const [file] = readdirSync(crashed).filter((name) => name.endsWith('.jsonl'));
    const path = joinPath(crashed, file as string);
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    const cut = lines.findIndex((line) => line.includes('"ev":"settled"'));
    expect(JSON.parse(lines[cut] as string)).toMatchObject({ k: 'task', status: 'completed' });
    writeFileSync(path, `${lines.slice(0, cut + 1).join('\n')}\n`);

    const after = tree(new Set());
    const reopened = sessions({ dir: crashed }).open(session.id);
    const again = createSupervisor({ model: after.model, tools: after.tools, session: reopened });
    await reopened.idle();
    const tasks = reopened.tasks();
    expect(tasks.map((t) => [t.prompt, t.status])).toEqual([
      ['a', 'completed'],
      ['b', 'cancelled'],
      ['c', 'cancelled'],
    ]);
    expect(tasks[1]?.result?.text).toMatch(JOINED);
    // Nothing of the batch ran again: no model call, no tool.
    expect(after.asked.size).toBe(0);
    expect(after.runs.size).toBe(0);
    await expect(again.result(tasks[2]?.taskId ?? '')).resolves.toMatchObject({ status: 'cancelled' });
    reopened.close();
    await again.stop();
    // The cancellations are journaled: a second opening finds the batch settled.
    expect(
      sessions({ dir: crashed })
        .open(session.id)
        .tasks()
        .map((t) => t.status),
    ).toEqual(['completed', 'cancelled', 'cancelled']);
  });
});
