// The side of a recorded session: where the selected agent's state was read, its messages as they stood at the
// scrubbed moment, and a fork from that moment with an optional edit (a tool call's result, the waiting prompt, the
// system prompt). The fork is written by the server with `manager.fork` and run live there; it joins the list.

import { $, el, short } from './dom.js';
import { actors, statePath, view } from './store.js';
import { api, openSession, recorded, refreshSessions, selectedAgent } from './timeline.js';

let built = null; // { id, seq, agent, node }
let outcome = null; // { state, text, forkId }
let polling = null;

function textOf(message) {
  if (!message || !Array.isArray(message.content)) return '';
  return message.content
    .map((part) => {
      if (part?.type === 'text') return part.text;
      if (part?.type === 'tool_call') return `${part.name}(${short(part.arguments ?? {}, 200)})`;
      if (part?.type === 'tool_result') return `${part.toolName ?? ''} → ${textOf(part)}`;
      return part?.type ? `[${part.type}]` : '';
    })
    .filter(Boolean)
    .join(' ');
}

export function renderMessages() {
  // The messages of the agent the moment was read for: the title says whose, and when.
  const moment = recorded.moment;
  $('messages-title').textContent = moment?.selected ? `Messages — ${moment.selected} at #${moment.seq}` : 'Messages';
  const messages = moment?.messages ?? [];
  $('messages').replaceChildren(
    ...messages.map((message, i) =>
      el(
        'li',
        { 'data-testid': 'message', 'data-role': message?.role, 'data-index': i },
        el('span', { class: 'role' }, String(message?.role ?? '?')),
        short(textOf(message), 2000),
      ),
    ),
  );
}

/** Call ids the selected agent had started by the moment: the results a fork may change. */
function callsOf() {
  const calls = new Map();
  for (const { record } of recorded.moment?.events ?? []) {
    if (record.k === 'tool_start') calls.set(record.id, record.name);
  }
  return [...calls];
}

function build() {
  const node = el('div', { class: 'controls fork', 'data-testid': 'fork' });
  const actor = actors.get(view.selectedKey);
  const state = actor
    ? `${statePath(actor.snapshot?.value)} — ${
        actor.stateFrom === 'journal'
          ? `read from the journal's fact at #${actor.stateAt}`
          : actor.stateFrom === 'snapshot'
            ? `from the snapshot written at #${actor.stateAt}`
            : 'no snapshot yet'
      }`
    : '';
  node.append(el('p', { 'data-testid': 'state-source', class: 'kind' }, state));
  if (!recorded.canFork) {
    node.append(el('p', { class: 'empty' }, 'This inspector was started without a way to run forks.'));
    return node;
  }
  const kind = el(
    'select',
    { 'data-testid': 'fork-edit-kind' },
    el('option', { value: '' }, 'no edit'),
    el('option', { value: 'toolResult' }, "a tool call's result"),
    el('option', { value: 'input' }, 'the waiting prompt'),
    el('option', { value: 'system' }, 'the system prompt'),
  );
  const calls = callsOf();
  const call = el(
    'select',
    { 'data-testid': 'fork-call' },
    calls.map(([id, name]) => el('option', { value: id }, `${name} (${id})`)),
  );
  const text = el('textarea', { rows: 3, 'data-testid': 'fork-text', placeholder: 'The new text' });
  const button = el('button', { 'data-action': 'fork', 'data-testid': 'fork-button' }, `Fork at #${recorded.seq}`);
  button.addEventListener('click', () => void fork(kind.value, call.value, text.value));
  node.append(
    el('label', {}, `Fork ${recorded.id} at #${recorded.seq}, editing`),
    kind,
    el('label', {}, `Call of ${selectedAgent() ?? 'the agent'}`),
    call,
    text,
    el('div', { class: 'row' }, button),
    el('p', { class: 'outcome', 'data-testid': 'fork-outcome' }),
  );
  return node;
}

async function fork(kind, callId, text) {
  const agent = selectedAgent();
  const root = recorded.timeline?.lanes[0]?.agent;
  const edit =
    kind === 'toolResult'
      ? { toolResult: { id: callId, text, ...(agent && agent !== root ? { agentId: agent } : {}) } }
      : kind === 'input'
        ? { input: text }
        : kind === 'system'
          ? { system: text }
          : undefined;
  outcome = { state: 'sent', text: 'Forking…' };
  renderOutcome();
  try {
    const made = await api('fork', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: recorded.id, atSeq: recorded.seq, ...(edit ? { edit } : {}) }),
    });
    outcome = { state: 'applied', text: `Fork ${made.id} is running…`, forkId: made.id };
    watch(made.id);
  } catch (error) {
    outcome = { state: 'refused', text: `Fork refused: ${error.message}` };
  }
  renderOutcome();
}

/** The fork's row in the list until its run settles; then it can be opened. */
function watch(forkId) {
  clearInterval(polling);
  polling = setInterval(async () => {
    await refreshSessions().catch(() => {});
    const run = recorded.sessions.find((s) => s.id === forkId)?.run;
    if (run?.state === 'running') return;
    clearInterval(polling);
    outcome =
      run?.state === 'done'
        ? { state: 'applied', text: `Fork ${forkId} ran to the end.`, forkId, done: true }
        : { state: 'refused', text: `Fork ${forkId} failed: ${run?.error ?? 'unknown'}`, forkId };
    renderOutcome();
  }, 300);
}

function renderOutcome() {
  const line = built?.node.querySelector('[data-testid="fork-outcome"]');
  if (!line) return;
  line.className = `outcome ${outcome?.state ?? ''}`;
  line.dataset.state = outcome?.done ? 'done' : (outcome?.state ?? '');
  line.replaceChildren(outcome?.text ?? '');
  if (outcome?.forkId) {
    const open = el('a', { href: '#', 'data-testid': 'open-fork' }, ` Open ${outcome.forkId}`);
    open.addEventListener('click', (event) => {
      event.preventDefault();
      void openSession(outcome.forkId);
    });
    line.append(open);
  }
}

/** Rebuilt when the moment or the selected agent changes, keeping what is being typed. */
export function renderFork() {
  $('controls-title').textContent = 'At this moment';
  const key = { id: recorded.id, seq: recorded.moment?.seq, agent: selectedAgent() };
  if (built && built.id === key.id && built.seq === key.seq && built.agent === key.agent) return;
  const typed = built?.node.querySelector('textarea')?.value ?? '';
  const kind = built?.node.querySelector('[data-testid="fork-edit-kind"]')?.value ?? '';
  const node = build();
  const area = node.querySelector('textarea');
  if (area) area.value = typed;
  const select = node.querySelector('[data-testid="fork-edit-kind"]');
  if (select) select.value = kind;
  built = { ...key, node };
  $('controls').replaceChildren(node);
  renderOutcome();
}
