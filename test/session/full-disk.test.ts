/**
 * The journal survives its medium: a disk that fills up mid-write, a lock that holds no pid, a sessions folder
 * that is read-only or not ours. A full disk is made two ways: a file size limit on a child process (`ulimit -f`:
 * the kernel cuts a write short, then refuses the next, as a full disk does; no privilege needed) and a small
 * tmpfs (needs root to mount: skipped elsewhere, with the reason, unless CI is set).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, scriptedModel, sessions } from '../../src/index.js';
import { JsonlStore, SessionStorageError, type Store } from '../../src/session/index.js';
import { bundleChild, cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

let child: string;
const bundles = mkdtempSync(join(tmpdir(), 'troupe-full-disk-'));
beforeAll(() => {
  child = bundleChild(join(import.meta.dirname, 'full-disk-child.ts'), bundles);
});
afterAll(() => rmSync(bundles, { recursive: true, force: true }));

/** Runs the child under a shell that sets `limits` first (`ulimit` lines); its JSON line. */
function runChild(limits: string, args: string[], options: { uid?: number; gid?: number } = {}) {
  const proc = spawn('/bin/sh', ['-c', `${limits} exec "$0" "$@"`, process.execPath, child, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    ...options,
  });
  let out = '';
  proc.stdout.on('data', (chunk) => {
    out += chunk;
  });
  return new Promise<{ outcomes: string[]; warnings: string[] }>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${code}`))));
  });
}

/** The journal's lines: every one a whole record, the file ending with its line break. */
function wholeLines(dir: string): string[] {
  const text = readFileSync(join(dir, 'full.jsonl'), 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  const lines = text.split('\n').slice(0, -1);
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  return lines;
}

/** Opens the session once space is back, prompts on, and checks the prompts are read back after a reopen. */
async function goesOnAfter(dir: string) {
  const warnings: string[] = [];
  const manager = sessions({ dir, onWarning: (warning) => warnings.push(warning) });
  const session = manager.open('full');
  const agent = createAgent({ id: 'root', model: scriptedModel(() => ({ text: 'back' })), session });
  // The turn the failure cut short is resumed first: the journal ends where a crash there would have left it.
  await session.idle();
  const before = agent.messages.length;
  expect((await agent.prompt('after the disk was freed')).stopReason).toBe('completed');
  await agent.stop();
  session.close();
  const again = manager.open('full');
  const resumed = createAgent({ id: 'root', model: scriptedModel([]), session: again });
  expect(resumed.messages).toHaveLength(before + 2);
  expect(resumed.messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'back' }] });
  await resumed.stop();
  again.close();
  expect(warnings).toEqual([]);
  return before;
}

describe('a full disk', () => {
  it('never leaves a torn record: the failed write is cut back, the program is told, and the session opens', async () => {
    const dir = tempDir();
    // 16 blocks of 1024 bytes: room for the first few turns, then a write cut short.
    const { outcomes, warnings } = await runChild('ulimit -f 16;', [dir]);
    const failed = outcomes.findIndex((outcome) => outcome !== 'completed');
    expect(failed).toBeGreaterThan(0);
    // Every prompt after the failure is refused: the session records nothing more until it is opened again.
    expect(new Set(outcomes.slice(failed))).toEqual(new Set(['SessionStorageError: no space']));
    expect(warnings).toEqual([expect.stringMatching(/could not append to its journal: no space \(EFBIG\)/)]);
    // A prompt is reported completed only when its turn's end is stored (one stored just before the failure may be
    // reported failed: the session had stopped recording by then).
    const ends = wholeLines(dir).filter((line) => line.includes('"k":"turn_end"'));
    expect(ends.length).toBeGreaterThanOrEqual(failed);
    // Every prompt reported completed before the failure is in the journal, and the session goes on.
    expect(await goesOnAfter(dir)).toBeGreaterThanOrEqual(2 * failed);
  });
});

describe('a lock that names no live writer', () => {
  it.each([
    ['empty', ''],
    ['garbage', 'abc'],
    ['process 0', '0'],
    ['a negative pid', '-1'],
    ['a pid and more', '12 34'],
    ['the pid of a process gone', String(spawnSync(process.execPath, ['-e', '']).pid)],
  ])('%s is stale: the session opens, and is not listed as open', (_, content) => {
    const dir = tempDir();
    const manager = sessions({ dir });
    manager.create({ id: 's' }).close();
    writeFileSync(join(dir, 's.lock'), content);
    expect(manager.list()[0]?.status).not.toBe('open');
    const session = manager.open('s');
    expect(readFileSync(join(dir, 's.lock'), 'utf8')).toBe(String(process.pid));
    session.close();
  });
});

describe("a store that fails the write of a turn's end", () => {
  it('does not report that turn completed: the prompt rejects with the failure, and later ones too', async () => {
    const dir = tempDir();
    const files = new JsonlStore(dir);
    let turnEnds = 0;
    // A store of its own (the Store interface is public): its medium fails the second turn's end.
    const store: Store = {
      list: () => files.list(),
      read: (id) => files.read(id),
      isLocked: (id) => files.isLocked(id),
      remove: (id) => files.remove(id),
      acquire: (id) => {
        const writer = files.acquire(id);
        return {
          append: (records) => {
            if (records.some((text) => text.includes('"k":"turn_end"')) && ++turnEnds === 2) {
              throw new SessionStorageError(
                id,
                'append to its journal',
                Object.assign(new Error('full'), { code: 'ENOSPC' }),
              );
            }
            return writer.append(records);
          },
          truncate: (count) => writer.truncate(count),
          release: () => writer.release(),
        };
      },
    };
    const warnings: string[] = [];
    const session = sessions({ store, onWarning: (warning) => warnings.push(warning) }).create({ id: 's' });
    const agent = createAgent({ model: scriptedModel(() => ({ text: 'ok' })), session });
    expect((await agent.prompt('one')).stopReason).toBe('completed');
    await expect(agent.prompt('two')).rejects.toThrow(
      'Session "s": could not append to its journal: no space (ENOSPC)',
    );
    await expect(agent.prompt('three')).rejects.toBeInstanceOf(SessionStorageError);
    // A refused prompt leaves nothing waiting: no listener on its caller's signal.
    const signal = new AbortController().signal;
    await expect(agent.prompt('four', { signal })).rejects.toBeInstanceOf(SessionStorageError);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(warnings).toHaveLength(1);
    await agent.stop();
    session.close();
  });
});

/** A tmpfs of `size` mounted for the test, or the reason it cannot be (printed; a failure under CI). */
function tmpfs(size: string): { dir?: string; why?: string; unmount: () => void } {
  const dir = tempDir();
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    const why = `cannot mount a tmpfs (${(error as Error).message.split('\n')[0]})`;
    if (process.env.CI) throw new Error(why);
    console.log(`skipped: ${why}`);
    return { why, unmount: () => {} };
  }
  return { dir, unmount: () => execFileSync('umount', ['-l', dir]) };
}

describe('a real medium (tmpfs; root)', () => {
  const mounts: Array<() => void> = [];
  // Before the temporary folders are removed (hooks after a test run innermost first).
  afterEach(() => {
    for (const unmount of mounts.splice(0)) unmount();
  });
  const mount = (size: string) => {
    const m = tmpfs(size);
    mounts.push(m.unmount);
    return m.dir;
  };

  it('a disk that fills and frees again: no torn record, the session opens and records on', async (context) => {
    const dir = mount('64k');
    if (!dir) return context.skip();
    const filler = join(dir, 'filler');
    writeFileSync(filler, Buffer.alloc(40 * 1024));
    const { outcomes } = await runChild('', [join(dir, 'sessions'), filler]);
    expect(outcomes).toContain('SessionStorageError: no space');
    wholeLines(join(dir, 'sessions'));
    await goesOnAfter(join(dir, 'sessions'));
  });

  it('opening a session on a full disk leaves no lock behind', async (context) => {
    const dir = mount('64k');
    if (!dir) return context.skip();
    const manager = sessions({ dir: join(dir, 'sessions') });
    manager.create({ id: 'full' }).close();
    const filler = join(dir, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(64 * 1024));
    } catch {
      // filled up to the last block: what the test wants
    }
    expect(() => manager.open('full')).toThrow(SessionStorageError);
    expect(() => manager.open('full')).toThrow(/could not take its lock: no space \(ENOSPC\)/);
    execFileSync('rm', [filler]);
    manager.open('full').close();
  });

  it('a read-only sessions folder is "read-only", not a lock held by an unknown process', async (context) => {
    const dir = mount('256k');
    if (!dir) return context.skip();
    const manager = sessions({ dir: join(dir, 'sessions') });
    manager.create({ id: 's' }).close();
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    const error = (() => {
      try {
        manager.open('s');
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(SessionStorageError);
    expect(error).toMatchObject({ problem: 'read-only', code: 'EROFS' });
    expect((error as Error).message).toBe('Session "s": could not take its lock: read-only (EROFS)');
    expect(manager.list().map((info) => info.id)).toEqual(['s']);
  });

  it('a sessions folder the process may not write is "permission denied"', async (context) => {
    const dir = mount('256k');
    if (!dir) return context.skip();
    const sessionsDir = join(dir, 'sessions');
    mkdirSync(sessionsDir);
    chmodSync(dir, 0o755);
    chmodSync(sessionsDir, 0o755);
    // As an unprivileged user (nobody): root may write anywhere.
    chmodSync(bundles, 0o755);
    const { outcomes } = await runChild('', [sessionsDir], { uid: 65534, gid: 65534 });
    expect(outcomes).toEqual(['SessionStorageError: permission denied']);
  });
});
