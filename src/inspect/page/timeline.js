// A recorded session as a timeline: each agent a lane, its turns and steps spans, its tool calls, approvals, steers,
// notifications and compactions marks. Scrubbing (drag, click, arrow keys, "next of agent") asks the server for the
// tree at that moment, read from the journal, and sets the whole page to it: the actor tree, the selected agent's
// statechart and messages, its events up to then, usage so far. Nothing is run while scrubbing.

import { $, el, short, svg } from './dom.js';
import { actors, view } from './store.js';

export const recorded = {
  on: false,
  token: '',
  sessions: [],
  canFork: false,
  id: null,
  timeline: null,
  machine: null,
  /** The scrubbed seq, and the moment the server answered for it (`moment.seq`). */
  seq: null,
  moment: null,
  asked: 0,
};

let onChange = () => {};
const LANE = 22;
const LABEL = 150;

export async function api(path, init) {
  const join = path.includes('?') ? '&' : '?';
  const response = await fetch(`/api/${path}${join}token=${encodeURIComponent(recorded.token)}`, init);
  const body = await response.json().catch(() => ({ error: `${response.status}` }));
  if (!response.ok) throw new Error(body.error ?? `${response.status}`);
  return body;
}

/** Recorded mode, when the server was given sessions; `changed` redraws the page. */
export async function startRecorded(token, changed) {
  recorded.token = token;
  onChange = changed;
  let listed;
  try {
    listed = await api('sessions');
  } catch {
    return false;
  }
  recorded.on = true;
  document.body.classList.add('recorded');
  $('connection').textContent = 'recorded';
  installScrubbing();
  showSessions(listed);
  const wanted = new URLSearchParams(location.search).get('session') ?? listed.open ?? listed.sessions[0]?.id;
  if (wanted) await openSession(wanted);
  return true;
}

export function showSessions(listed) {
  recorded.sessions = listed.sessions;
  recorded.canFork = listed.canFork;
  const select = $('session-list');
  const options = listed.sessions.map((s) => {
    const fork = s.forkOf ? ` — fork of ${s.forkOf.id} at #${s.forkOf.atSeq}` : '';
    const run = s.run ? ` (fork ${s.run.state})` : '';
    return el(
      'option',
      { value: s.id, 'data-id': s.id, 'data-status': s.status, 'data-fork-of': s.forkOf?.id, 'data-run': s.run?.state },
      `${s.id}${s.title ? `: ${short(s.title, 60)}` : ''}${fork} [${s.status}]${run}`,
    );
  });
  select.replaceChildren(...options);
  if (recorded.id) select.value = recorded.id;
}

export async function refreshSessions() {
  showSessions(await api('sessions'));
}

/** Opens session `id`; one that cannot be read (damaged, too new) says why, and the page stays as it was. */
export async function openSession(id) {
  let timeline;
  try {
    timeline = await api(`timeline?id=${encodeURIComponent(id)}`);
  } catch (error) {
    $('session-info').textContent = `Cannot open ${id}: ${error.message}`;
    $('session-info').dataset.error = 'true';
    if (recorded.id) $('session-list').value = recorded.id;
    return;
  }
  delete $('session-info').dataset.error;
  recorded.id = id;
  recorded.timeline = timeline;
  recorded.machine = timeline.definition;
  $('session-list').value = id;
  const fork = timeline.forkOf ? `fork of ${timeline.forkOf.id} at #${timeline.forkOf.atSeq}` : '';
  $('session-info').textContent = [`${timeline.records} facts, ${timeline.lanes.length} agents`, fork]
    .filter(Boolean)
    .join(' · ');
  const scrubber = $('scrubber');
  scrubber.max = String(Math.max(0, timeline.seqs.length - 1));
  view.selectedKey = timeline.lanes[0] ? keyOf(timeline.lanes[0].agent) : null;
  await scrubTo(timeline.seqs.at(-1) ?? 0);
}

const keyOf = (agent) => `recorded/${agent}`;
export const selectedAgent = () => actors.get(view.selectedKey)?.sessionId ?? null;

/** Sets the page to the moment `seq`: the latest answer wins when scrubbing outruns the server. */
export async function scrubTo(seq) {
  const timeline = recorded.timeline;
  if (!timeline) return;
  recorded.seq = seq;
  const index = nearestIndex(timeline.seqs, seq);
  $('scrubber').value = String(index);
  const asked = ++recorded.asked;
  const agent = selectedAgent();
  const moment = await api(
    `moment?id=${encodeURIComponent(recorded.id)}&seq=${seq}${agent ? `&agent=${encodeURIComponent(agent)}` : ''}`,
  );
  if (asked !== recorded.asked) return;
  recorded.moment = moment;
  applyMoment(moment);
  onChange();
}

function nearestIndex(seqs, seq) {
  let lo = 0;
  let hi = seqs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (seqs[mid] <= seq) lo = mid;
    else hi = mid - 1;
  }
  return Math.max(0, lo);
}

/** The moment as the live page's actors: the tree, charts, usage and log panels draw it unchanged. */
function applyMoment(moment) {
  const machine = safeParse(recorded.machine);
  actors.clear();
  for (const [order, agent] of moment.agents.entries()) {
    const calls = [
      ...agent.runningTools.map((t) => ({ call: { id: t.id, name: t.name }, status: 'executing' })),
      ...agent.pendingApprovals.map((id) => ({ call: { id, name: id }, status: 'awaiting' })),
    ];
    const selected = agent.id === moment.selected;
    actors.set(keyOf(agent.id), {
      key: keyOf(agent.id),
      run: 'recorded',
      sessionId: agent.id,
      name: agent.id,
      parentKey: agent.owner ? keyOf(agent.owner) : null,
      definitionText: recorded.machine,
      machine,
      snapshot: {
        status: 'active',
        value: agent.state ?? 'idle',
        context: { agentId: agent.id, turn: agent.turns, step: lastStep(moment, agent.id), calls },
      },
      stateFrom: agent.stateFrom,
      stateAt: agent.stateAt,
      messageCount: agent.messageCount,
      log: selected ? moment.events.map(logEntry) : [],
      usage: agent.usage,
      cost: null,
      pendingTaken: [],
      taken: [],
      tasks: new Map(),
      batches: new Map(),
      order,
    });
  }
  if (!actors.has(view.selectedKey) && moment.selected) view.selectedKey = keyOf(moment.selected);
}

function lastStep(moment, agent) {
  if (agent !== moment.selected) return undefined;
  const msg = moment.events.findLast((e) => e.record.k === 'msg');
  return msg?.record.step;
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function logEntry({ seq, record }) {
  const { k, a: _a, s: _s, turn, step, ...rest } = record;
  const detail =
    k === 'snapshot'
      ? `state ${JSON.stringify(rest.snapshot?.value ?? null)}`
      : k === 'tool_start'
        ? `${rest.name} ${rest.id}`
        : k === 'msg'
          ? `message ${rest.i} (${rest.m?.role ?? 'input'})`
          : short(rest, 100);
  return { n: seq, type: k, turn, step, detail };
}

// --- the lanes ---------------------------------------------------------------------------------------------------

function xOf(seq, width) {
  const seqs = recorded.timeline.seqs;
  const first = seqs[0] ?? 0;
  const last = seqs.at(-1) ?? 1;
  return LABEL + ((seq - first) / Math.max(1, last - first)) * (width - LABEL - 8);
}

function seqAt(x, width) {
  const seqs = recorded.timeline.seqs;
  const first = seqs[0] ?? 0;
  const last = seqs.at(-1) ?? 0;
  const ratio = Math.min(1, Math.max(0, (x - LABEL) / Math.max(1, width - LABEL - 8)));
  return seqs[nearestIndex(seqs, first + ratio * (last - first))] ?? 0;
}

let drawnFor = null;

/** The lanes, drawn once per opened session; the cursor and the selected lane move with the page. */
export function renderTimeline() {
  const timeline = recorded.timeline;
  const container = $('lanes');
  if (!timeline) return;
  const width = Math.max(400, container.clientWidth);
  if (drawnFor !== timeline || container.dataset.width !== String(width)) {
    drawnFor = timeline;
    container.dataset.width = String(width);
    container.replaceChildren(drawLanes(timeline, width));
  }
  const cursor = container.querySelector('.cursor');
  const x = xOf(recorded.moment?.seq ?? 0, width);
  cursor?.setAttribute('x1', x);
  cursor?.setAttribute('x2', x);
  const selected = selectedAgent();
  for (const lane of container.querySelectorAll('.lane')) {
    lane.classList.toggle('selected', lane.dataset.agent === selected);
  }
  const moment = recorded.moment;
  if (moment) {
    const index = nearestIndex(timeline.seqs, moment.seq) + 1;
    $('moment-label').textContent = `#${moment.seq} · moment ${index} of ${timeline.seqs.length}`;
    $('moment-label').dataset.seq = String(moment.seq);
  }
}

function drawLanes(timeline, width) {
  const height = timeline.lanes.length * LANE + 4;
  const root = svg('svg', { width, height, 'data-testid': 'lanes-svg' });
  const row = new Map(timeline.lanes.map((lane, i) => [lane.agent, i]));
  for (const [i, lane] of timeline.lanes.entries()) {
    const g = svg('g', { class: 'lane', 'data-testid': 'lane', 'data-agent': lane.agent });
    g.append(svg('rect', { class: 'lane-bg', x: 0, y: i * LANE, width, height: LANE, fill: 'transparent' }));
    const label = svg('text', { class: 'lane-label', x: 4 + lane.depth * 10, y: i * LANE + 15 });
    label.textContent = short(lane.agent, 22);
    g.append(label);
    root.append(g);
  }
  for (const span of timeline.spans) {
    const i = row.get(span.agent);
    if (i === undefined) continue;
    const turn = span.kind === 'turn';
    const x = xOf(span.from, width);
    root.append(
      svg('rect', {
        class: `span-${span.kind}`,
        'data-testid': 'span',
        'data-kind': span.kind,
        'data-agent': span.agent,
        x,
        y: i * LANE + (turn ? 3 : 8),
        width: Math.max(2, xOf(span.to, width) - x),
        height: turn ? LANE - 6 : LANE - 16,
      }),
    );
  }
  for (const mark of timeline.marks) {
    const i = row.get(mark.agent);
    if (i === undefined) continue;
    const x = xOf(mark.seq, width);
    const line = svg('line', {
      class: `mark mark-${mark.kind}`,
      'data-testid': 'mark',
      'data-kind': mark.kind,
      'data-seq': mark.seq,
      'data-agent': mark.agent,
      x1: x,
      x2: x,
      y1: i * LANE + 2,
      y2: i * LANE + LANE - 2,
    });
    const title = svg('title');
    title.textContent = `#${mark.seq} ${mark.kind}: ${mark.label}`;
    line.append(title);
    root.append(line);
  }
  root.append(svg('line', { class: 'cursor', 'data-testid': 'cursor', x1: 0, x2: 0, y1: 0, y2: height }));
  return root;
}

/** The moments the selected agent did something at: its spans' ends and its marks. */
function agentSeqs(agent) {
  const timeline = recorded.timeline;
  const seqs = new Set();
  for (const span of timeline.spans) if (span.agent === agent) seqs.add(span.from).add(span.to);
  for (const mark of timeline.marks) if (mark.agent === agent) seqs.add(mark.seq);
  return [...seqs].sort((a, b) => a - b);
}

export function step(by) {
  const seqs = recorded.timeline?.seqs ?? [];
  const index = nearestIndex(seqs, recorded.seq ?? 0);
  const next = seqs[Math.min(seqs.length - 1, Math.max(0, index + by))];
  if (next !== undefined) void scrubTo(next);
}

export function nextOfAgent() {
  const next = agentSeqs(selectedAgent()).find((seq) => seq > (recorded.seq ?? -1));
  if (next !== undefined) void scrubTo(next);
}

function installScrubbing() {
  const lanes = $('lanes');
  let dragging = false;
  const at = (event) => {
    const box = lanes.getBoundingClientRect();
    return seqAt(event.clientX - box.left + lanes.scrollLeft, Number(lanes.dataset.width || box.width));
  };
  lanes.addEventListener('mousedown', (event) => {
    const lane = event.target instanceof Element ? event.target.closest('.lane') : null;
    if (lane && event.offsetX < LABEL) {
      view.selectedKey = keyOf(lane.dataset.agent);
      void scrubTo(recorded.seq ?? 0);
      return;
    }
    dragging = true;
    void scrubTo(at(event));
  });
  window.addEventListener('mousemove', (event) => {
    if (dragging) void scrubTo(at(event));
  });
  window.addEventListener('mouseup', () => {
    dragging = false;
  });
  $('scrubber').addEventListener('input', (event) => {
    const seq = recorded.timeline?.seqs[Number(event.target.value)];
    if (seq !== undefined) void scrubTo(seq);
  });
  $('prev-event').addEventListener('click', () => step(-1));
  $('next-event').addEventListener('click', () => step(1));
  $('next-agent-event').addEventListener('click', () => nextOfAgent());
  $('session-list').addEventListener('change', (event) => void openSession(event.target.value));
  window.addEventListener('keydown', (event) => {
    const target = event.target;
    if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement || target === $('scrubber'))
      return;
    if (target instanceof HTMLInputElement) return;
    if (event.key === 'ArrowLeft') step(-1);
    else if (event.key === 'ArrowRight') step(1);
    else if (event.key === 'n') nextOfAgent();
    else return;
    event.preventDefault();
  });
}
