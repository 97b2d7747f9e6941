import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgent, createSupervisor } from '../../src/index.js';
import { decodeRecord, type JournalRecord } from '../../src/session/index.js';
import { agentConfig, openStore, type StoreKind } from './acknowledged-fixture.js';
import { bundleChild, cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const ROOT = join(import.meta.dirname, '..', '..');

type Ending = 'exit' | 'kill';

/** What each mode's promise (or event) reported, as the journal must hold it when the process ends on it. */
const reported: Record<string, (records: JournalRecord[]) => void> = {
  prompt: (records) => expect(turnEnds(records, 'root')).toEqual(['completed']),
  stream: (records) => expect(turnEnds(records, 'root')).toEqual(['completed']),
  idle: (records) => expect(turnEnds(records, 'root')).toEqual(['completed']),
  // Every background result reached the root, and every turn its notifications opened ended.
  idle_background: (records) => {
    expect(settled(records)).toEqual(['completed', 'completed', 'completed']);
    expect(records.filter((r) => r.k === 'notice')).toHaveLength(3);
    const starts = records.filter((r) => r.k === 'turn_start' && r.a === 'root').length;
    expect(turnEnds(records, 'root')).toEqual(new Array(starts).fill('completed'));
  },
  turn_end: (records) => expect(turnEnds(records, 'root')).toEqual(['completed']),
  approve: (records) =>
    expect(records.filter((r) => r.k === 'approval').map((r) => (r.k === 'approval' ? r.approved : 0))).toEqual([true]),
  tree_approve: (records) =>
    expect(records.filter((r) => r.k === 'approval').map((r) => (r.k === 'approval' ? r.approved : 0))).toEqual([true]),
  swarm: (records) => expect(settled(records)).toEqual(['completed', 'completed']),
  member: (records) => expect(turnEnds(records, 'member')).toEqual(['completed']),
  // The task awaited is the batch's first.
  result: (records) => {
    const first = records.flatMap((r) => (r.k === 'batch' ? r.tasks : []))[0]?.taskId;
    expect(records.some((r) => r.k === 'task' && r.ev === 'settled' && r.taskId === first)).toBe(true);
  },
  notification: (records) => expect(settled(records)).toEqual(['completed']),
};

function turnEnds(records: JournalRecord[], agentId: string): string[] {
  return records.flatMap((r) => (r.k === 'turn_end' && r.a === agentId ? [r.stopReason] : []));
}

function settled(records: JournalRecord[]): string[] {
  return records.flatMap((r) => (r.k === 'task' && r.ev === 'settled' ? [r.status ?? ''] : []));
}

function settledTasks(records: JournalRecord[]): string[] {
  return records.flatMap((r) => (r.k === 'task' && r.ev === 'settled' ? [r.taskId] : []));
}

function notices(records: JournalRecord[]): string[] {
  return records.flatMap((r) => (r.k === 'notice' ? [r.taskId] : []));
}

function runChild(child: string, args: string[]): Promise<void> {
  const proc = spawn(process.execPath, [child, ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
    cwd: ROOT,
  });
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code, signal) => {
      if (code === 0 || signal === 'SIGKILL') resolve();
      else reject(new Error(`the child exited with ${code ?? signal}`));
    });
  });
}

/** Opens the session the child left, as a restarted program would, and lets it finish what was open. */
async function resume(kind: StoreKind, where: string, id: string, side: string, mode: string): Promise<void> {
  const { manager, close } = openStore(kind, where);
  const session = manager.open(id);
  const config = agentConfig(side);
  const tree = ['tree_approve', 'swarm', 'member', 'result', 'notification'].includes(mode);
  const supervisor = tree ? createSupervisor({ ...config, session }) : undefined;
  const member = mode === 'member' ? supervisor?.agent({ id: 'member', tools: config.tools }) : undefined;
  const agent = tree ? undefined : createAgent({ ...config, session });
  try {
    await session.idle();
  } finally {
    session.close();
    await member?.stop();
    await supervisor?.stop();
    await agent?.stop();
    close();
  }
}

const modes = Object.keys(reported);
const cases = (['jsonl', 'sqlite'] as const).flatMap((kind) =>
  modes.flatMap((mode) =>
    (['exit', 'kill'] as const).map((ending): [StoreKind, string, Ending] => [kind, mode, ending]),
  ),
);

describe('sessions: acknowledged means durable', () => {
  // Bundled once for every case (a temporary folder of the test's own: each case's are removed after it).
  const bundled = mkdtempSync(join(tmpdir(), 'troupe-acknowledged-'));
  afterAll(() => rmSync(bundled, { recursive: true, force: true }));
  const child = bundleChild(join(import.meta.dirname, 'acknowledged-child.ts'), bundled);

  it.each(cases)(
    '%s: the process ends the moment %s reports (%s); the fact is in the store and no tool runs again',
    async (kind, mode, ending) => {
      const dir = tempDir();
      const where = kind === 'jsonl' ? dir : join(dir, 'sessions.db');
      const side = join(dir, 'executions');
      const id = `${mode}-${ending}`;
      await runChild(child, [kind, where, id, side, mode, ending]);

      const { manager, close } = openStore(kind, where);
      const records = manager.store.read(id).flatMap((text) => decodeRecord(text) ?? []);
      close();
      reported[mode]?.(records);
      const before = existsSync(side) ? readFileSync(side, 'utf8').split('\n').filter(Boolean) : [];

      await resume(kind, where, id, side, mode);
      const after = readFileSync(side, 'utf8').split('\n').filter(Boolean);
      // Nothing the first process stored happens again: each task settles once and each result is delivered once.
      const reopened = openStore(kind, where);
      const again = reopened.manager.store.read(id).flatMap((text) => decodeRecord(text) ?? []);
      reopened.close();
      for (const facts of [settledTasks, notices]) {
        expect(facts(again).slice(0, facts(records).length)).toEqual(facts(records));
        expect(new Set(facts(again)).size).toBe(facts(again).length);
      }
      // Every call ran exactly once, over both processes: none the first process was told about ran again.
      expect(after.slice(0, before.length)).toEqual(before);
      expect(new Set(after).size).toBe(after.length);
      if (!mode.endsWith('approve')) expect(before.length).toBeGreaterThan(0);
      expect(after.length).toBeGreaterThan(0);
    },
  );
});
