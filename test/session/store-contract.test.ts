import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CorruptJournalError,
  encodeRecord,
  type HeaderRecord,
  JOURNAL_VERSION,
  JournalVersionError,
  JournalWriter,
  JsonlStore,
  readJournal,
  SessionLockedError,
  SqliteStore,
  type Store,
} from '../../src/session/index.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-store-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const stores: Array<[string, (dir: string) => Store, string]> = [
  ['JsonlStore', (dir) => new JsonlStore(dir), 'new JsonlStore(dir)'],
  ['SqliteStore', (dir) => new SqliteStore(join(dir, 'sessions.db')), "new SqliteStore(join(dir, 'sessions.db'))"],
];

const header = (id: string, v = JOURNAL_VERSION): HeaderRecord => ({ k: 'session', v, id, agentId: 'a', t: 1 });
const run = (s: number) => encodeRecord({ k: 'run', s, a: 'a', running: s % 2 === 1, t: s });

/** A child process that takes the session's lock, says so, and waits to be killed. */
function holdLock(make: string, dir: string, id: string): Promise<{ pid: number; kill: () => Promise<void> }> {
  const source = `
    import { JsonlStore, SqliteStore } from ${JSON.stringify(join(process.cwd(), 'src/session/index.ts'))};
    import { join } from 'node:path';
    const dir = ${JSON.stringify(dir)};
    const store = ${make};
    store.acquire(${JSON.stringify(id)});
    process.stdout.write('locked\\n');
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', () =>
      resolve({
        pid: child.pid as number,
        kill: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            child.kill('SIGKILL');
          }),
      }),
    );
  });
}

describe.each(stores)('%s (the Store contract)', (_name, makeStore, makeSource) => {
  it('appends records in order, lists, and removes sessions', () => {
    const store = makeStore(tempDir());
    expect(store.read('s1')).toEqual([]);
    const writer = store.acquire('s1');
    writer.append([encodeRecord(header('s1')), run(1)]);
    writer.append([run(2)]);
    writer.append([]);
    expect(store.read('s1')).toEqual([encodeRecord(header('s1')), run(1), run(2)]);
    store.acquire('s2').append([encodeRecord(header('s2'))]);
    expect(store.list().sort()).toEqual(['s1', 's2']);
    expect(() => store.remove('s1')).toThrow(SessionLockedError);
    writer.release();
    store.remove('s1');
    expect(store.list()).toEqual(['s2']);
    expect(store.read('s1')).toEqual([]);
  });

  it('truncates to a number of records', () => {
    const store = makeStore(tempDir());
    const writer = store.acquire('s');
    writer.append([encodeRecord(header('s')), run(1), run(2), run(3)]);
    writer.truncate(2);
    expect(store.read('s')).toEqual([encodeRecord(header('s')), run(1)]);
    writer.append([run(5)]);
    expect(store.read('s')).toEqual([encodeRecord(header('s')), run(1), run(5)]);
    writer.truncate(9);
    expect(store.read('s')).toHaveLength(3);
  });

  it('keeps an index: the records appended after it are its tail, and a truncation below it drops it', () => {
    const store = makeStore(tempDir());
    expect(store.readIndexed?.('s')).toBeUndefined();
    const writer = store.acquire('s');
    writer.append([encodeRecord(header('s')), run(1)]);
    writer.saveIndex?.('{"upTo":2}');
    expect(store.readIndexed?.('s')).toEqual({ index: '{"upTo":2}', tail: [] });
    writer.append([run(2), run(3)]);
    expect(store.readIndexed?.('s')).toEqual({ index: '{"upTo":2}', tail: [run(2), run(3)] });
    writer.saveIndex?.('{"upTo":4}');
    writer.append([run(4)]);
    expect(store.readIndexed?.('s')).toEqual({ index: '{"upTo":4}', tail: [run(4)] });
    // A torn record dropped below the index: it summed up records that are gone, so it is no longer read.
    writer.truncate(3);
    writer.append([run(6), run(7)]);
    expect(store.readIndexed?.('s')).toBeUndefined();
    writer.release();
    store.remove('s');
    expect(store.readIndexed?.('s')).toBeUndefined();
  });

  it('refuses a second writer, and lets one in after release', () => {
    const store = makeStore(tempDir());
    const writer = store.acquire('s');
    expect(() => store.acquire('s')).toThrow(SessionLockedError);
    expect(store.isLocked('s')).toBe(true);
    writer.release();
    writer.release();
    expect(() => writer.append([run(1)])).toThrow(/released/);
    expect(store.isLocked('s')).toBe(false);
    store.acquire('s').append([run(1)]);
    expect(store.read('s')).toEqual([run(1)]);
  });

  it('refuses a writer while another process holds the session, and takes over the lock of a killed one', async () => {
    const dir = tempDir();
    const store = makeStore(dir);
    const holder = await holdLock(makeSource, dir, 's');
    expect(() => store.acquire('s')).toThrow(`open for writing by process ${holder.pid}`);
    expect(store.isLocked('s')).toBe(true);
    await holder.kill();
    expect(store.isLocked('s')).toBe(false);
    store.acquire('s').append([run(1)]);
    expect(store.read('s')).toEqual([run(1)]);
  });

  it('refuses ids that are not safe names', () => {
    const store = makeStore(tempDir());
    expect(() => store.acquire('../escape')).toThrow(/Invalid session id/);
    expect(() => store.read('')).toThrow(/Invalid session id/);
  });

  it('drops a damaged last record with a warning, refuses a damaged earlier one and a future version', () => {
    const store = makeStore(tempDir());
    const last = run(3);
    for (let cut = 0; cut < last.length; cut++) {
      const id = `torn-${cut}`;
      store.acquire(id).append([encodeRecord(header(id)), run(1), run(2), last.slice(0, cut)]);
      const warnings: string[] = [];
      const journal = readJournal(store, id, (w) => warnings.push(w));
      expect(journal?.records.map((r) => r.k)).toEqual(['session', 'run', 'run']);
      expect(journal?.dropped).toBe(true);
      expect(warnings[0]).toMatch(/last record was cut short/);
    }
    store.acquire('mid').append([encodeRecord(header('mid')), run(1).slice(0, 5), run(2)]);
    expect(() => readJournal(store, 'mid')).toThrow(CorruptJournalError);
    expect(() => readJournal(store, 'mid')).toThrow('record 2 is corrupt');
    store.acquire('future').append([encodeRecord(header('future', JOURNAL_VERSION + 1)), run(1)]);
    expect(() => readJournal(store, 'future')).toThrow(JournalVersionError);
    expect(() => readJournal(store, 'future')).toThrow(/journal version 2, but this Troupe reads versions up to 1/);
    expect(readJournal(store, 'none')).toBeUndefined();
  });

  it('writes as the durability says', async () => {
    const store = makeStore(tempDir());
    const fact = new JournalWriter(store.acquire('fact'), 'fact');
    fact.add(header('fact'));
    fact.add({ k: 'run', s: 1, a: 'a', running: true, t: 1 });
    expect(store.read('fact')).toHaveLength(2);
    expect(fact.stats).toMatchObject({ records: 2, writes: 2 });

    const step = new JournalWriter(store.acquire('step'), 'step');
    step.add(header('step'));
    step.add({ k: 'run', s: 1, a: 'a', running: true, t: 1 });
    expect(store.read('step')).toHaveLength(0);
    step.add({ k: 'tool_start', s: 2, a: 'a', id: 'c1', name: 'x' }, 'effect');
    expect(store.read('step')).toHaveLength(3);
    expect(step.durable()).toBeUndefined();
    step.add({ k: 'run', s: 3, a: 'a', running: false, t: 2 });
    await Promise.resolve();
    // Batched by tick, not by microtask: a loop of steps that never waits writes once per step.
    expect(store.read('step')).toHaveLength(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.read('step')).toHaveLength(4);
    expect(step.stats).toMatchObject({ records: 4, writes: 2 });

    // Grouped (a tree at work): tool starts of one tick wait for one write at its end; `now` is still at once.
    const grouped = new JournalWriter(store.acquire('grouped'), 'step');
    grouped.groupEffects = true;
    grouped.add(header('grouped'));
    grouped.add({ k: 'tool_start', s: 1, a: 'a', id: 'c1', name: 'x' }, 'effect');
    const stored = grouped.durable();
    grouped.add({ k: 'tool_start', s: 2, a: 'b', id: 'c2', name: 'x' }, 'effect');
    expect(grouped.durable()).toBe(stored);
    expect(store.read('grouped')).toHaveLength(0);
    let ran = false;
    const run = stored?.then(() => {
      ran = true;
      expect(store.read('grouped')).toHaveLength(3);
    });
    await Promise.resolve();
    expect(ran).toBe(false);
    await run;
    expect(ran).toBe(true);
    expect(grouped.stats).toMatchObject({ records: 3, writes: 1 });
    expect(grouped.durable()).toBeUndefined();
    grouped.add({ k: 'approval', a: 'a', id: 'c1', approved: true }, 'now');
    expect(store.read('grouped')).toHaveLength(4);
    grouped.close();

    const never = new JournalWriter(store.acquire('never'), 'never');
    never.add(header('never'));
    await Promise.resolve();
    expect(store.read('never')).toHaveLength(0);
    never.close();
    never.add({ k: 'run', s: 1, a: 'a', running: true, t: 1 });
    expect(store.read('never')).toHaveLength(1);
    expect(store.isLocked('never')).toBe(false);
  });
});

describe('JsonlStore files', () => {
  it('does not read an index that a kill left longer than it was written (the end of the old one after it)', () => {
    const dir = tempDir();
    const store = new JsonlStore(dir);
    const writer = store.acquire('s');
    writer.append([encodeRecord(header('s')), run(1)]);
    writer.saveIndex?.('{"a":"a longer first index"}');
    writer.saveIndex?.('{"a":"short"}');
    expect(store.readIndexed('s')?.index).toBe('{"a":"short"}');
    const path = join(dir, 's.index');
    writeFileSync(path, `${readFileSync(path, 'utf8')}er first index"}\n`);
    expect(store.readIndexed('s')).toBeUndefined();
    writer.release();
  });

  it('reads a journal cut at every byte offset of its last two records as the records before the cut', () => {
    const dir = tempDir();
    const store = new JsonlStore(dir);
    const lines = [encodeRecord(header('s')), run(1), run(2), run(3)];
    store.acquire('s').append(lines);
    const file = join(dir, 's.jsonl');
    const full = readFileSync(file);
    const start = lines[0]?.length ?? 0;
    const ends = [] as number[];
    let offset = 0;
    for (const line of lines) {
      offset += Buffer.byteLength(line) + 1;
      ends.push(offset);
    }
    for (let cut = (ends[1] ?? start) + 1; cut <= full.length; cut++) {
      writeFileSync(file, full.subarray(0, cut));
      const whole = ends.filter((end) => end <= cut).length;
      // A cut right before a newline leaves a whole record without it: it is kept.
      const complete = full[cut] === 10 ? whole + 1 : whole;
      const journal = readJournal(store, 's', () => {});
      expect(journal?.records).toHaveLength(complete);
      expect(journal?.dropped).toBe(cut < full.length && full[cut] !== 10 && !ends.includes(cut));
    }
  });
});
