/**
 * The inspector's timeline over a long recorded session, through the real server on loopback: the time to open it
 * (`/api/timeline`: read, validate and lay out the journal) and each scrub's answer (`/api/moment`: the whole tree
 * at a seq, with the selected agent's messages and events). `node --import tsx bench/timeline.ts [events] [scrubs]`.
 * The session is one real turn of a scripted agent with a tool, repeated by five agents of a tree until it holds
 * `events` facts with a seq.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, sessions, startInspectorServer } from '../src/index.js';
import { decodeRecord, encodeRecord, type JournalRecord } from '../src/session/index.js';

const events = Number(process.argv[2] ?? 10_000);
const scrubs = Number(process.argv[3] ?? 200);
const AGENTS = ['root', 'sub-1', 'sub-2', 'sub-3', 'sub-4'];

const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-timeline-'));
const manager = sessions({ dir });

/** One turn of a real agent: its input, run, snapshots, messages, tool call and result. */
async function oneTurn(): Promise<JournalRecord[]> {
  const session = manager.create({ id: 'template', agentId: 'root' });
  const read = defineTool({
    name: 'read',
    description: 'reads',
    schema: z.object({ path: z.string() }),
    execute: () => 'x'.repeat(600),
  });
  const model = scriptedModel([
    { toolCalls: [{ id: 'call', name: 'read', args: { path: 'a.ts' } }] },
    { text: 'done '.repeat(60) },
  ]);
  const agent = createAgent({ model, tools: [read], session });
  await agent.prompt('read a.ts');
  await session.idle();
  session.close();
  await agent.stop();
  return manager.store.read('template').flatMap((line) => decodeRecord(line) ?? []);
}

/** The template's turn, as turn `turn` of `agent` from seq `s` on: ids, indexes and seqs moved. */
function turnOf(template: JournalRecord[], agent: string, turn: number, s: number, per: number): JournalRecord[] {
  const renamed = (text: string) => `${text}-${agent}-${turn}`;
  return template.slice(1).map((record): JournalRecord => {
    const moved = { ...record, ...('a' in record ? { a: agent } : {}) } as JournalRecord;
    if ('s' in moved) moved.s = s + moved.s;
    switch (moved.k) {
      case 'input':
        return { ...moved, inputId: renamed(moved.inputId) };
      case 'turn_start':
      case 'turn_end':
        return { ...moved, turn: turn + 1, inputId: renamed(moved.inputId) };
      case 'msg': {
        const m = 'input' in moved.m ? { ...moved.m, input: renamed(moved.m.input) } : moved.m;
        return { ...moved, turn: turn + 1, i: moved.i + turn * per, m };
      }
      default:
        return moved;
    }
  });
}

const template = await oneTurn();
const withSeq = template.filter((r) => 's' in r).length;
const span = Math.max(...template.flatMap((r) => ('s' in r ? [r.s] : []))) + 1;
const per = template.filter((r) => r.k === 'msg').length;
const header = template[0];
if (header?.k !== 'session') throw new Error('no header');
const records: JournalRecord[] = [
  { ...header, id: 'long' },
  {
    k: 'batch',
    a: 'root',
    batchId: 'b',
    background: true,
    tasks: AGENTS.slice(1).map((agentId, i) => ({ taskId: `t${i}`, agentId, profile: 'default', prompt: 'work' })),
  },
];
let seq = 0;
for (let turn = 0; seq / span < events / withSeq; turn++) {
  for (const agent of AGENTS) {
    if (seq / span >= events / withSeq) break;
    records.push(...turnOf(template, agent, turn, seq, per));
    seq += span;
  }
}
const writer = manager.store.acquire('long');
await writer.append(records.map(encodeRecord));
writer.release();
const count = records.filter((r) => 's' in r).length;

const server = await startInspectorServer({ sessions: { manager, open: 'long' } });
const get = async (path: string) => {
  const response = await fetch(`http://127.0.0.1:${server.port}/api/${path}&token=${server.token}`);
  const body = await response.text();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${body.slice(0, 200)}`);
  return body;
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const opens: number[] = [];
let seqs: number[] = [];
for (let i = 0; i < 5; i++) {
  const start = performance.now();
  const body = await get('timeline?id=long');
  opens.push(performance.now() - start);
  seqs = (JSON.parse(body) as { seqs: number[] }).seqs;
}
// The generated journal reads whole: every agent at the end, no record naming what the journal lacks.
const end = JSON.parse(await get(`moment?id=long&seq=${seqs.at(-1)}`)) as { agents: unknown[]; gaps: string[] };
if (end.agents.length !== AGENTS.length || end.gaps.length > 0) throw new Error(`a broken journal: ${end.gaps[0]}`);
const steps: number[] = [];
let index = Math.floor(seqs.length / 2);
for (let i = 0; i < scrubs; i++) {
  // A person scrubbing: mostly single steps, now and then a jump anywhere.
  index = i % 10 === 0 ? Math.floor(Math.random() * seqs.length) : Math.min(seqs.length - 1, index + 1);
  const agent = AGENTS[i % AGENTS.length];
  const start = performance.now();
  await get(`moment?id=long&seq=${seqs[index]}&agent=${agent}`);
  steps.push(performance.now() - start);
}
const worst = Math.max(...steps);
console.log(
  `timeline of ${count} events (${records.length} records, ${AGENTS.length} agents): open ${median(opens).toFixed(0)} ms ` +
    `(median of 5; target < 2000), scrub step ${median(steps).toFixed(1)} ms (median of ${scrubs}; ` +
    `p95 ${[...steps].sort((a, b) => a - b)[Math.floor(steps.length * 0.95)]?.toFixed(1)} ms, max ${worst.toFixed(1)} ms; target < 100)`,
);
await server.close();
rmSync(dir, { recursive: true, force: true });
