/**
 * `sessions().list()` over many long sessions, from their indexes against reading every journal whole (the listing
 * before indexes), in the same run: `node --import tsx bench/session-list.ts [sessions] [MB each] [rounds]`.
 * Each session is a crashed one: its last index was saved a while before the end, so a listing reads the tail too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyUsage } from '../src/protocol/index.js';
import { sessions } from '../src/runtime/sessions.js';
import {
  type HeaderRecord,
  JOURNAL_VERSION,
  type JournalRecord,
  JournalWriter,
  JsonlStore,
  SessionSummary,
  type Store,
} from '../src/session/index.js';

const count = Number(process.argv[2] ?? 200);
const megabytes = Number(process.argv[3] ?? 1);
const rounds = Number(process.argv[4] ?? 5);

/** A tool step as the journal holds it: the answer with its call, the tool's start and end, the tool message. */
function step(agentId: string, i: number, s: number): JournalRecord[] {
  const id = `call_${i}`;
  return [
    {
      k: 'msg',
      s,
      a: agentId,
      i: 2 * i + 1,
      turn: 1,
      step: i + 1,
      m: {
        role: 'assistant',
        content: [{ type: 'tool_call', id, name: 'read', arguments: { path: `src/file${i}.ts` } }],
        provider: 'openai',
        model: 'gpt-5',
        stopReason: 'tool_calls',
        usage: { ...emptyUsage(), input: 1200, output: 40 },
      },
    },
    { k: 'tool_start', s: s + 1, a: agentId, id, name: 'read' },
    {
      k: 'tool_end',
      s: s + 2,
      a: agentId,
      id,
      result: {
        type: 'tool_result',
        toolCallId: id,
        toolName: 'read',
        content: [{ type: 'text', text: 'x'.repeat(900) }],
        isError: false,
      },
    },
    { k: 'msg', s: s + 3, a: agentId, i: 2 * i + 2, turn: 1, step: i + 1, m: { role: 'tool', content: [{ ref: id }] } },
  ];
}

function fill(store: Store): void {
  for (let n = 0; n < count; n++) {
    const agentId = `agent_${n}`;
    const header: HeaderRecord = {
      k: 'session',
      v: JOURNAL_VERSION,
      id: `s${n}`,
      agentId,
      title: `session ${n}`,
      t: 1,
    };
    // Written as a session's writer writes (its index saved every 64 KB), and never closed: a crash, no last index.
    const storeWriter = store.acquire(header.id);
    const writer = new JournalWriter(storeWriter, 'never', new SessionSummary(header));
    writer.add(header);
    writer.add({ k: 'run', s: 1, a: agentId, running: true, t: 2 });
    for (let i = 0; writer.stats.bytes < megabytes * 1024 * 1024; i++) {
      for (const record of step(agentId, i, 10 + 4 * i)) writer.add(record);
      writer.flush();
    }
    storeWriter.release();
  }
}

/** The store without its indexes: every journal is read whole, as before. */
function wholeReads(store: Store): Store {
  return {
    list: () => store.list(),
    read: (id) => store.read(id),
    acquire: (id) => store.acquire(id),
    isLocked: (id) => store.isLocked(id),
    remove: (id) => store.remove(id),
  };
}

function time(run: () => unknown): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

const dir = mkdtempSync(join(tmpdir(), 'troupe-list-bench-'));
try {
  const store = new JsonlStore(dir);
  fill(store);
  const indexed = sessions({ store });
  const whole = sessions({ store: wholeReads(store) });
  const same = JSON.stringify(indexed.list()) === JSON.stringify(whole.list());
  if (!same) throw new Error('the indexed listing differs from the whole-journal one');
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const a = time(() => whole.list());
    const b = time(() => indexed.list());
    ratios.push(a / b);
    console.log(
      `round ${round + 1}: whole journals ${a.toFixed(0)} ms, indexes ${b.toFixed(1)} ms: ${(a / b).toFixed(0)}x`,
    );
  }
  ratios.sort((x, y) => x - y);
  console.log(
    `list() of ${count} sessions of ${megabytes} MB: indexes are ${ratios[Math.floor(rounds / 2)]?.toFixed(0)}x faster (median of ${rounds})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
