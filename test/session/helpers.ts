import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach } from 'vitest';
import { z } from 'zod';
import { type AnyTool, defineTool, type ModelRequest } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import type { JournalRecord } from '../../src/session/index.js';
import type { Latch } from '../agent/helpers.js';

const dirs: string[] = [];

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-session-'));
  dirs.push(dir);
  return dir;
}

export function cleanTempDirs(): void {
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
}

/**
 * What a `kill -9` at this moment would leave: the journals (and their indexes) as written so far, without the locks
 * (their process is gone). Taken in the same process, so the test can go on inspecting the live agent.
 */
export function crashCopy(dir: string): string {
  const copy = tempDir();
  for (const name of readdirSync(dir)) {
    if (name.endsWith('.jsonl') || name.endsWith('.index')) cpSync(join(dir, name), join(copy, name));
  }
  return copy;
}

/** Every record of session `id`'s journal in `dir` (a JSONL store's), as written so far. */
export function journalRecords(dir: string, id: string): JournalRecord[] {
  return readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalRecord);
}

/** Waits until session `id`'s journal in `dir` holds a record `wanted` accepts (records are written when a tick ends). */
export async function untilJournaled(
  dir: string,
  id: string,
  wanted: (record: JournalRecord) => boolean,
): Promise<void> {
  while (!journalRecords(dir, id).some(wanted)) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A `count` tool: each call's `n` goes to `runs`; the call with `n === hangAt` tells `reached`, then waits for
 * `release` (the crash comes while it runs).
 */
export function countTool(hangAt: number, reached: Latch, release: Promise<void>, runs: number[] = []): AnyTool {
  return defineTool({
    name: 'count',
    description: 'c',
    schema: z.object({ n: z.number() }),
    execute: async ({ n }) => {
      runs.push(n);
      if (n === hangAt) {
        reached.resolve();
        await release;
      }
      return `counted ${n}`;
    },
  });
}

/** The number of tool results in a request's history: which step of a scripted conversation this is. */
function toolMessages(request: ModelRequest): number {
  return request.messages.filter((m) => m.role === 'tool').length;
}

/** A model script that decides from the history: `answers[n]` after n tool messages (calls get stable ids). */
export function byHistory(answers: ScriptedAnswer[]): (request: ModelRequest) => ScriptedAnswer {
  return (request) => {
    const n = toolMessages(request);
    const answer = answers[Math.min(n, answers.length - 1)] as ScriptedAnswer;
    return {
      ...answer,
      ...(answer.toolCalls
        ? { toolCalls: answer.toolCalls.map((call, i) => ({ ...call, id: call.id ?? `call_${n}_${i}` })) }
        : {}),
    };
  };
}

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * A crash test's child script bundled once into one plain JavaScript file in `dir`: started through tsx it takes
 * ~1 s to load, bundled ~0.2 s, which is what lets many kills (and the runs that finish after them) fit in CI's time.
 * Native modules (better-sqlite3) stay outside the bundle, found through a link to our `node_modules` beside it.
 */
export function bundleChild(entry: string, dir: string): string {
  const out = join(dir, basename(entry).replace(/\.ts$/, '.mjs'));
  execFileSync(
    join(ROOT, 'node_modules', '.bin', 'esbuild'),
    [
      entry,
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--log-level=warning',
      `--outfile=${out}`,
      '--external:better-sqlite3',
      "--banner:js=import{createRequire as bundleRequire}from'node:module';const require=bundleRequire(import.meta.url);",
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return out;
}
