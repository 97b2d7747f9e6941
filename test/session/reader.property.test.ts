/**
 * The journal's reader against damage, by property: a real session's journal (JSONL bytes; the same lines as
 * SQLite rows) cut at any byte, with bytes flipped, lines duplicated or swapped, and records from a newer build
 * put in. Opening it (and building its agent) either succeeds, with a warning when it dropped anything, and a
 * history of every message record it holds, or refuses with a typed JournalError: never another error, a hang,
 * or a history shorter than its records without a word.
 *
 * Bounded for CI (TROUPE_FUZZ_RUNS, default 40 cases per store); a longer run: TROUPE_FUZZ_RUNS=5000.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from '@fast-check/vitest';
import fc from 'fast-check';
import { beforeAll, describe, expect } from 'vitest';
import { createAgent, type SessionManager, scriptedModel, sessions } from '../../src/index.js';
import { decodeRecord, JournalError, SqliteStore } from '../../src/session/index.js';
import { cleanTempDirs, tempDir } from './helpers.js';
import { journalLines, recordSession } from './journal-fixture.js';

cleanTempDirs();

const RUNS = Number(process.env.TROUPE_FUZZ_RUNS ?? 40);
/** A case takes a few ms on JSONL, tens on SQLite (a database each): a long run gets the time it needs. */
const TIMEOUT = 20_000 + RUNS * 250;

let original: string;
beforeAll(async () => {
  const dir = tempDir();
  await recordSession(dir, 's');
  original = `${journalLines(dir, 's').join('\n')}\n`;
});

/** A line a newer build might write: a kind this one does not know, or a known kind with a field it does not. */
const future = fc.oneof(
  fc.constant('{"k":"hologram","a":"root","s":999,"beam":[1,2]}'),
  fc.constant('{"k":"notice","a":"root","taskId":"t9","why":"added later"}'),
  fc.constant('{"k":"session","v":2,"id":"s","agentId":"root","t":1}'),
);

type Damage =
  | { cut: number }
  | { flip: number; bit: number }
  | { duplicate: number }
  | { swap: [number, number] }
  | { insert: number; line: string };

const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ cut: fc.nat() }),
  fc.record({ flip: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ duplicate: fc.nat() }),
  fc.record({ swap: fc.tuple(fc.nat(), fc.nat()) }),
  fc.record({ insert: fc.nat(), line: future }),
);

function apply(text: string, all: readonly Damage[]): string {
  let bytes = Buffer.from(text);
  for (const d of all) {
    if ('cut' in d) bytes = bytes.subarray(0, d.cut % (bytes.length + 1));
    else if ('flip' in d) {
      if (bytes.length === 0) continue;
      bytes = Buffer.from(bytes);
      const at = d.flip % bytes.length;
      bytes[at] = (bytes[at] as number) ^ (1 << d.bit);
    } else {
      const lines = bytes.toString('latin1').split('\n');
      const n = lines.length;
      if ('duplicate' in d) lines.splice(d.duplicate % n, 0, lines[d.duplicate % n] as string);
      else if ('swap' in d) {
        const [i, j] = [d.swap[0] % n, d.swap[1] % n];
        [lines[i], lines[j]] = [lines[j] as string, lines[i] as string];
      } else lines.splice(d.insert % n, 0, d.line);
      bytes = Buffer.from(lines.join('\n'), 'latin1');
    }
  }
  return bytes.toString('utf8');
}

/** The messages the records of `lines` name for the root (the last line left out when it was dropped). */
function journaledMessages(lines: readonly string[]): number {
  const indexes = new Set<number>();
  for (const line of lines) {
    const record = decodeRecord(line);
    if (record?.k === 'msg' && record.a === 'root') indexes.add(record.i);
  }
  return indexes.size;
}

/** Opens the session and builds its agent: what a program resuming it does. */
async function openAndCheck(manager: SessionManager, lines: readonly string[], warnings: string[]): Promise<void> {
  let session: ReturnType<SessionManager['open']>;
  let agent: ReturnType<typeof createAgent>;
  try {
    session = manager.open('s');
    agent = createAgent({ id: 'root', model: scriptedModel(() => ({ text: 'again' })), session });
  } catch (error) {
    if (error instanceof JournalError) return;
    // Cut inside its header, the session is not there at all.
    const header = lines.length > 1 ? decodeRecord(lines[0] as string) : undefined;
    if (header === undefined && /^No session "s"$/.test((error as Error).message)) return;
    // Its header damaged into another agent's name: the program asked for `root`, and is told whose it is.
    if (/^Session "s" belongs to agent "[^"]*", not "root"$/.test((error as Error).message)) return;
    throw error;
  }
  try {
    const kept = warnings.length > 0 ? lines.slice(0, -1) : lines;
    // Never shorter than its records: every message record the journal holds is in the history it opened with
    // (the agent starts from its last snapshot's part of it and replays the rest).
    const history = session.journal.messages;
    expect(history).toHaveLength(journaledMessages(kept));
    for (const message of history) expect(['user', 'assistant', 'tool']).toContain(message.role);
    expect(agent.messages.length).toBeLessThanOrEqual(history.length);
  } finally {
    await agent.stop();
    session.close();
  }
}

describe('the journal reader, over damaged journals', () => {
  it.prop([fc.array(damage, { minLength: 1, maxLength: 3 })], { numRuns: RUNS })(
    'JSONL: opens with a whole history or refuses with a typed error',
    async (all) => {
      const dir = tempDir();
      const text = apply(original, all);
      writeFileSync(join(dir, 's.jsonl'), text);
      const warnings: string[] = [];
      const manager = sessions({ dir, onWarning: (warning) => warnings.push(warning) });
      const lines = text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      await openAndCheck(manager, lines, warnings);
    },
    TIMEOUT,
  );

  it.prop([fc.array(damage, { minLength: 1, maxLength: 3 })], { numRuns: RUNS })(
    'SQLite: opens with a whole history or refuses with a typed error',
    async (all) => {
      const dir = tempDir();
      const lines = apply(original, all).split('\n');
      if (lines.at(-1) === '') lines.pop();
      const store = new SqliteStore(join(dir, 'sessions.db'));
      try {
        const writer = store.acquire('s');
        writer.append(lines);
        writer.release();
        const warnings: string[] = [];
        await openAndCheck(sessions({ store, onWarning: (warning) => warnings.push(warning) }), lines, warnings);
      } finally {
        store.close();
      }
    },
    TIMEOUT,
  );
});
