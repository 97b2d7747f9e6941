/**
 * Another process holds the SQLite database (BEGIN EXCLUSIVE) while a session records: the event loop keeps
 * turning (timers tick), the writes wait instead of failing "database is locked", a tool waits for its start to be
 * stored, and once the other process lets go the prompt completes and every record is stored, in order. A promise
 * that reports a fact (a prompt's turn, an idle session, a swarm's results) resolves only once the fact is committed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, createSupervisor, scriptedModel, sessions } from '../../src/index.js';
import { readJournal, SqliteStore } from '../../src/session/index.js';
import { cleanTempDirs, tempDir } from './helpers.js';
import { lookTool } from './journal-fixture.js';

cleanTempDirs();

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** A process that holds the database in an exclusive transaction until it reads a line; its `release`. */
async function holdDatabase(path: string): Promise<() => Promise<void>> {
  const source = `
    const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
    const db = new Database(${JSON.stringify(path)});
    db.exec('BEGIN EXCLUSIVE');
    db.prepare("INSERT INTO locks (session, pid) VALUES ('other', 1)").run();
    console.log('locked');
    process.stdin.once('data', () => { db.exec('ROLLBACK'); db.close(); console.log('released'); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  expect((await lines.next()).value).toBe('locked');
  return async () => {
    child.stdin?.write('go\n');
    expect((await lines.next()).value).toBe('released');
  };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('SQLite held by another process', () => {
  it('never blocks the event loop nor fails a prompt: the writes wait, and are stored once it lets go', async () => {
    const path = join(tempDir(), 'sessions.db');
    new SqliteStore(path).close();
    const release = await holdDatabase(path);

    const waits: string[] = [];
    const store = new SqliteStore(path, { onWait: (message) => waits.push(message) });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const runs: number[] = [];
    const look = lookTool(runs);
    const model = scriptedModel([{ toolCalls: [{ name: 'look', args: { n: 1 }, id: 'look_1' }] }, { text: 'done' }]);
    try {
      const session = sessions({ store }).create({ id: 's', agentId: 'root' });
      const agent = createAgent({ id: 'root', model, tools: [look], session });
      const result = agent.prompt('look once');
      // The timer ticks while the other process holds the database, and the tool waits for its start to be stored.
      const before = ticks;
      while (ticks < before + 5) await turn();
      expect(store.read('s')).toEqual([]);
      expect(runs).toEqual([]);
      expect(waits).toEqual(['Session "s": another process holds the database; its writes wait for it']);

      await release();
      expect((await result).stopReason).toBe('completed');
      expect(runs).toEqual([1]);
      expect(store.read('s').some((text) => text.includes('"k":"turn_end"'))).toBe(true);
      session.close();
      expect(waits[1]).toMatch(/^Session "s": the database is free again; the writes that waited \d+ ms are stored$/);
      const journal = readJournal(new SqliteStore(path), 's', () => {});
      expect(journal?.records.map((record) => record.k)).toEqual(
        expect.arrayContaining(['session', 'input', 'tool_start', 'tool_end', 'turn_end']),
      );
      await agent.stop();
    } finally {
      clearInterval(timer);
      store.close();
    }
  });

  it('resolves a prompt only once its turn end is committed, and session.idle() only once all is', async () => {
    const path = join(tempDir(), 'sessions.db');
    new SqliteStore(path).close();
    const release = await holdDatabase(path);
    const store = new SqliteStore(path, { onWait: () => {} });
    const committed = () => new SqliteStore(path).read('s').map((text) => (JSON.parse(text) as { k: string }).k);
    try {
      const session = sessions({ store }).create({ id: 's', agentId: 'root' });
      const agent = createAgent({ id: 'root', model: scriptedModel([{ text: 'done' }]), session });
      let answered = false;
      const result = agent.prompt('answer').then((run) => {
        answered = true;
        return run;
      });
      let idle = false;
      const quiet = session.idle().then(() => {
        idle = true;
      });
      // The turn ends without waiting on anything (a text answer): only its write waits for the other process.
      for (let i = 0; i < 20; i++) await turn();
      expect(answered).toBe(false);
      expect(idle).toBe(false);

      await release();
      expect((await result).stopReason).toBe('completed');
      expect(committed()).toContain('turn_end');
      await quiet;
      expect(committed()).toContain('turn_end');
      session.close();
      await agent.stop();
    } finally {
      store.close();
    }
  });

  it("resolves a swarm only once its tasks' settles are committed", async () => {
    const path = join(tempDir(), 'sessions.db');
    new SqliteStore(path).close();
    const release = await holdDatabase(path);
    const store = new SqliteStore(path, { onWait: () => {} });
    const settled = () =>
      new SqliteStore(path).read('s').filter((text) => {
        const record = JSON.parse(text) as { k: string; ev?: string };
        return record.k === 'task' && record.ev === 'settled';
      }).length;
    try {
      const session = sessions({ store }).create({ id: 's', agentId: 'root' });
      const supervisor = createSupervisor({ model: scriptedModel(() => ({ text: 'done' })), session });
      let answered = false;
      const swarm = supervisor.swarm(['one', 'two']).then((results) => {
        answered = true;
        return results;
      });
      for (let i = 0; i < 20; i++) await turn();
      expect(answered).toBe(false);

      await release();
      expect((await swarm).map((result) => result.status)).toEqual(['completed', 'completed']);
      expect(settled()).toBe(2);
      session.close();
      await supervisor.stop();
    } finally {
      store.close();
    }
  });

  // The database is free while the work runs and taken by another connection just before the write that stores
  // the fact (from a listener of the event that comes right before it): that very write finds it busy.
  const Database = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');

  it('resolves a prompt and session.idle() only once stored, when the write that acknowledges finds it busy', async () => {
    const path = join(tempDir(), 'sessions.db');
    const store = new SqliteStore(path, { onWait: () => {} });
    const other = new Database(path);
    const committed = () => new SqliteStore(path).read('s').map((text) => (JSON.parse(text) as { k: string }).k);
    try {
      const session = sessions({ store }).create({ id: 's', agentId: 'root' });
      const agent = createAgent({ id: 'root', model: scriptedModel([{ text: 'done' }]), session });
      agent.on('turn_end', () => other.exec('BEGIN EXCLUSIVE'));
      let answered = false;
      const result = agent.prompt('answer').then((run) => {
        answered = true;
        return run;
      });
      let idle = false;
      const quiet = session.idle().then(() => {
        idle = true;
      });
      for (let i = 0; i < 20; i++) await turn();
      expect(answered).toBe(false);
      expect(idle).toBe(false);
      const held = committed();

      other.exec('ROLLBACK');
      expect((await result).stopReason).toBe('completed');
      await quiet;
      // What waited (the run's end and the idle snapshot) was stored before either promise resolved.
      expect(committed().length).toBeGreaterThan(held.length);
      expect(committed().slice(-2)).toEqual(['run', 'snapshot']);
      session.close();
      await agent.stop();
    } finally {
      other.close();
      store.close();
    }
  });

  it('resolves a swarm only once stored, when the write that acknowledges its settles finds it busy', async () => {
    const path = join(tempDir(), 'sessions.db');
    const store = new SqliteStore(path, { onWait: () => {} });
    const other = new Database(path);
    const settled = () =>
      new SqliteStore(path).read('s').filter((text) => {
        const record = JSON.parse(text) as { k: string; ev?: string };
        return record.k === 'task' && record.ev === 'settled';
      }).length;
    try {
      const session = sessions({ store }).create({ id: 's', agentId: 'root' });
      const supervisor = createSupervisor({ model: scriptedModel(() => ({ text: 'done' })), session });
      let held = false;
      supervisor.on('agent_end', () => {
        if (held) return;
        held = true;
        other.exec('BEGIN EXCLUSIVE');
      });
      let answered = false;
      const swarm = supervisor.swarm(['one', 'two']).then((results) => {
        answered = true;
        return results;
      });
      for (let i = 0; i < 20; i++) await turn();
      expect(held).toBe(true);
      expect(answered).toBe(false);

      other.exec('ROLLBACK');
      expect((await swarm).map((result) => result.status)).toEqual(['completed', 'completed']);
      expect(settled()).toBe(2);
      session.close();
      await supervisor.stop();
    } finally {
      other.close();
      store.close();
    }
  });
});
