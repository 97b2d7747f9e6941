// A recorded session laid out on its seqs, for the inspector's timeline: each agent a lane, its turns and steps
// spans, its tool calls, approvals, steers, notifications, compactions and tasks marks. Pure and total, like
// `momentAt`: a record that names nothing known still gets its agent a lane, and nothing here throws.
import type { ForkPoint, JournalRecord } from './records.js';

/** One agent's lane: who started it, and how deep in the tree it sits (the root at 0). */
export interface TimelineLane {
  agent: string;
  owner?: string;
  depth: number;
  profile?: string;
}

/** A turn, or a step of one, from the seq of its first fact to that of its last (`open`: it never ended). */
export interface TimelineSpan {
  agent: string;
  kind: 'turn' | 'step';
  turn: number;
  step?: number;
  from: number;
  to: number;
  open: boolean;
}

export type TimelineMarkKind =
  | 'tool'
  | 'asked'
  | 'approval'
  | 'steer'
  | 'notice'
  | 'compaction'
  | 'batch'
  | 'task'
  | 'input';

/** One fact worth a mark, at the seq it belongs to (a record without a seq belongs to the one before it). */
export interface TimelineMark {
  agent: string;
  kind: TimelineMarkKind;
  seq: number;
  label: string;
}

/** The whole session as a timeline; `seqs` are the moments a scrubber stops at, in order. */
export interface Timeline {
  id: string;
  title?: string;
  forkOf?: ForkPoint;
  seqs: number[];
  lanes: TimelineLane[];
  spans: TimelineSpan[];
  marks: TimelineMark[];
  /** Facts that are not the header: what the session holds. */
  records: number;
}

/**
 * The seq each record belongs to, as `cutAt` decides it: its own, or for a record without one the seq of the record
 * before it (the same step's fact); the first seq for those before it, which every moment holds (-1 without seqs).
 */
export function seqsOf(records: readonly JournalRecord[]): number[] {
  const first = records.find((record) => 's' in record && Number.isSafeInteger(record.s));
  let last = first && 's' in first ? first.s : -1;
  return records.map((record) => {
    if ('s' in record && Number.isSafeInteger(record.s)) last = Math.max(last, record.s);
    return last;
  });
}

const text = (value: string, max = 80) => (value.length > max ? `${value.slice(0, max)}…` : value);

/** The timeline of a journal (its header first). */
export function timelineOf(records: readonly JournalRecord[]): Timeline {
  const header = records[0]?.k === 'session' ? records[0] : undefined;
  const at = seqsOf(records);
  const lanes = new Map<string, TimelineLane>();
  const lane = (agent: string): TimelineLane => {
    let found = lanes.get(agent);
    if (!found) {
      found = { agent, depth: 0 };
      lanes.set(agent, found);
    }
    return found;
  };
  if (header) lane(header.agentId);
  const spans: TimelineSpan[] = [];
  const turns = new Map<string, TimelineSpan>();
  const steps = new Map<string, TimelineSpan>();
  const marks: TimelineMark[] = [];
  const mark = (agent: string, kind: TimelineMarkKind, seq: number, label: string) =>
    marks.push({ agent, kind, seq, label: text(label) });
  const seqs = new Set<number>();
  for (const [i, record] of records.entries()) {
    const seq = at[i] ?? -1;
    if ('s' in record) seqs.add(seq);
    if (record.k !== 'session') read(record, seq);
  }
  function read(record: Exclude<JournalRecord, { k: 'session' }>, seq: number) {
    lane(record.a);
    switch (record.k) {
      case 'turn_start': {
        const span: TimelineSpan = { agent: record.a, kind: 'turn', turn: record.turn, from: seq, to: seq, open: true };
        turns.set(record.a, span);
        spans.push(span);
        return;
      }
      case 'turn_end': {
        for (const open of [turns.get(record.a), steps.get(record.a)])
          if (open) Object.assign(open, { to: seq, open: false });
        turns.delete(record.a);
        steps.delete(record.a);
        return;
      }
      case 'msg': {
        const open = steps.get(record.a);
        if (open && open.turn === record.turn && open.step === record.step) open.to = seq;
        else {
          if (open) open.open = false;
          const span: TimelineSpan = {
            agent: record.a,
            kind: 'step',
            turn: record.turn,
            step: record.step,
            from: seq,
            to: seq,
            open: true,
          };
          steps.set(record.a, span);
          spans.push(span);
        }
        return;
      }
      case 'tool_start':
        return mark(record.a, 'tool', seq, `${record.name} (${record.id})`);
      case 'asked':
        return mark(record.a, 'asked', seq, `asks approval of ${record.id}`);
      case 'approval':
        return mark(record.a, 'approval', seq, `${record.approved ? 'approved' : 'denied'} ${record.id}`);
      case 'steer':
        return mark(record.a, 'steer', seq, 'steered');
      case 'notice':
        return mark(record.a, 'notice', seq, `notified of ${record.taskId}`);
      case 'compaction':
        return mark(record.a, 'compaction', seq, `compacted before message ${record.base}`);
      case 'input':
        return mark(record.a, 'input', seq, 'prompted');
      case 'dropped':
        return mark(record.a, 'input', seq, 'dropped, never started');
      case 'batch':
        for (const task of record.tasks) {
          const child = lane(task.agentId);
          child.owner ??= record.a;
          child.profile ??= task.profile;
        }
        return mark(record.a, 'batch', seq, `${record.background ? 'background ' : ''}batch of ${record.tasks.length}`);
      case 'task':
        lane(record.agentId).owner ??= record.a;
        if (record.ev === 'settled') mark(record.a, 'task', seq, `${record.taskId} ${record.status ?? 'settled'}`);
        return;
    }
  }
  // Every span still open ends where the journal does; no step outlives its turn's end.
  const end = Math.max(-1, ...seqs);
  for (const span of spans) if (span.open) span.to = end;
  for (const agent of lanes.values()) agent.depth = depthOf(agent, lanes);
  return {
    id: header?.id ?? '',
    ...(header?.title === undefined ? {} : { title: header.title }),
    ...(header?.forkOf ? { forkOf: header.forkOf } : {}),
    seqs: [...seqs].sort((a, b) => a - b),
    lanes: orderLanes([...lanes.values()]),
    spans,
    marks,
    records: Math.max(0, records.length - 1),
  };
}

/** How far below the root a lane is; an owner cycle (a hostile journal) stops at the lanes it has seen. */
function depthOf(lane: TimelineLane, lanes: Map<string, TimelineLane>): number {
  const seen = new Set<string>([lane.agent]);
  let depth = 0;
  let owner = lane.owner;
  while (owner !== undefined && !seen.has(owner)) {
    seen.add(owner);
    depth++;
    owner = lanes.get(owner)?.owner;
  }
  return depth;
}

/** Each lane under its owner, in order of appearance: the tree read top to bottom. */
function orderLanes(lanes: TimelineLane[]): TimelineLane[] {
  const known = new Set(lanes.map((l) => l.agent));
  const out: TimelineLane[] = [];
  const placed = new Set<string>();
  const place = (lane: TimelineLane) => {
    if (placed.has(lane.agent)) return;
    placed.add(lane.agent);
    out.push(lane);
    for (const child of lanes) if (child.owner === lane.agent) place(child);
  };
  for (const lane of lanes) if (lane.owner === undefined || !known.has(lane.owner)) place(lane);
  // Lanes whose owners form a cycle have no root to hang from: listed last, in order.
  for (const lane of lanes) place(lane);
  return out;
}
