// The offline inspector page. Plain browser modules, loaded from the inspector server only (its CSP allows nothing
// else). Every value from a program is put into the page as text, never as HTML.

import { installZoomAndPan, renderChart } from './chart.js';
import { renderControls } from './controls.js';
import { $ } from './dom.js';
import { renderFork, renderMessages } from './fork.js';
import { renderApprovals, renderBatches, renderLog, renderRuns, renderTree, renderUsage } from './panels.js';
import { actors, onMessage, sent, view } from './store.js';
import { recorded, renderTimeline, scrubTo, startRecorded } from './timeline.js';

const token = new URLSearchParams(location.search).get('token') ?? '';
let socket = null;
let scheduled = false;
let commandSeq = 0;

/** Sends a command for an actor of a run; returns its id (the ack carries it back). */
function send(actor, command, fields = {}) {
  const id = `c${++commandSeq}-${Date.now().toString(36)}`;
  const message = { type: 'command', id, run: actor.run, sessionId: actor.sessionId, command, ...fields };
  sent.set(id, message);
  if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  else onMessage({ type: 'ack', id, run: actor.run, ok: false, error: 'the page is not connected' });
  schedule();
  return id;
}

function select(key) {
  view.selectedKey = key;
  // A recorded agent's messages and events come with the moment: asked again for the one selected.
  if (recorded.on) void scrubTo(recorded.seq ?? 0);
  schedule();
}

function render() {
  const selected = view.selectedKey ? actors.get(view.selectedKey) : null;
  if (recorded.on) {
    renderTimeline();
    renderTree();
    renderFork();
    renderMessages();
    renderUsage(select);
    renderLog(selected);
    // The events up to the moment: the latest, where the moment is, in view.
    $('log').scrollTop = $('log').scrollHeight;
    renderChart(selected);
    return;
  }
  renderRuns();
  renderTree();
  renderApprovals(send);
  renderControls(selected, send);
  renderUsage(select);
  renderBatches(send, select);
  renderLog(selected);
  renderChart(selected);
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
}

function connect(since) {
  socket = new WebSocket(`ws://${location.host}/ui?token=${encodeURIComponent(token)}&since=${since}`);
  const badge = $('connection');
  socket.addEventListener('open', () => {
    badge.textContent = 'live';
    badge.className = 'badge ok';
  });
  socket.addEventListener('close', () => {
    badge.textContent = 'disconnected';
    badge.className = 'badge bad';
  });
  socket.addEventListener('message', (event) => {
    try {
      onMessage(JSON.parse(event.data));
    } catch (error) {
      console.error('inspector: bad message', error);
    }
    schedule();
  });
}

/**
 * Everything so far over plain HTTP first, drawn at once: the first paint already shows the selected chart. An
 * inspector given recorded sessions opens one as a timeline instead, and still takes live runs (a fork's).
 */
async function boot() {
  if (await startRecorded(token, schedule)) return;
  let since = 0;
  try {
    const response = await fetch(`/frames?token=${encodeURIComponent(token)}`);
    const state = await response.json();
    for (const message of state.messages) onMessage(message);
    since = state.next;
  } catch (error) {
    console.error('inspector: could not load the frames so far', error);
  }
  render();
  connect(since);
}

$('tree').addEventListener('click', (event) => {
  const row = event.target instanceof Element ? event.target.closest('.actor') : null;
  if (row) select(row.dataset.key);
});
$('show-plumbing').addEventListener('change', (event) => {
  view.showPlumbing = event.target.checked;
  schedule();
});
installZoomAndPan();
boot();
