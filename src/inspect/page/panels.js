// The panels around the chart: the tree of actors, approvals (pending and answered), agents with their usage,
// cost and task, the supervisors' batches, and the selected actor's event log.
// Over 400 lines: the panels render together from one store on every update and share its selection.

import { $, clock, el, short } from './dom.js';
import {
  actors,
  answered,
  answeredBy,
  callLabel,
  contextOf,
  isAgent,
  isSupervisor,
  kindOf,
  labelOf,
  leafState,
  parentOf,
  runs,
  showOutcome,
  statePath,
  statusOf,
  taskOf,
  view,
} from './store.js';

const byOrder = (a, b) => a.order - b.order;

function stateLabel(actor) {
  const status = statusOf(actor);
  if (status !== 'active')
    return { text: status, title: `${status} (last state: ${statePath(actor.snapshot?.value)})` };
  const path = statePath(actor.snapshot?.value);
  return { text: leafState(actor.snapshot?.value) || 'active', title: path || 'active' };
}

// --- tree --------------------------------------------------------------------------------------------------------

/**
 * What a person supervises: agents and their tasks. Supervisors, batches, pools and an agent's compactor are
 * plumbing: hidden unless "show plumbing" is on, their children drawn under the nearest shown ancestor.
 */
const isPlumbing = (actor) => !isAgent(actor) && kindOf(actor) !== 'task';

/** The nearest ancestor the tree shows, or undefined for a root. */
function shownParent(actor) {
  let up = parentOf(actor);
  while (up && !view.showPlumbing && isPlumbing(up)) up = parentOf(up);
  return up;
}

export function renderTree() {
  const container = $('tree');
  if (actors.size === 0) return;
  const children = new Map();
  const roots = [];
  for (const actor of actors.values()) {
    if (!view.showPlumbing && isPlumbing(actor)) continue;
    const parent = shownParent(actor);
    if (parent) {
      if (!children.has(parent.key)) children.set(parent.key, []);
      children.get(parent.key).push(actor);
    } else roots.push(actor);
  }
  const item = (actor) => {
    const calls = isAgent(actor) ? (contextOf(actor).calls ?? []) : [];
    const status = statusOf(actor);
    const state = stateLabel(actor);
    const task = isAgent(actor) ? taskOf(actor) : undefined;
    const row = el(
      'div',
      {
        class: `actor${actor.key === view.selectedKey ? ' selected' : ''}${status === 'active' ? '' : ' stopped'}`,
        'data-testid': 'actor',
        'data-key': actor.key,
        'data-name': labelOf(actor),
        'data-kind': kindOf(actor),
        'data-status': status,
        'data-state': statePath(actor.snapshot?.value),
        title: `${labelOf(actor)} (${kindOf(actor)}): ${state.title}`,
      },
      el('span', { class: 'name' }, labelOf(actor)),
      kindOf(actor) === labelOf(actor) ? null : el('span', { class: 'kind' }, kindOf(actor)),
      el(
        'div',
        { class: 'line' },
        el('span', { class: 'state', 'data-testid': 'actor-state', title: state.title }, state.text),
        task
          ? el('span', { class: `task ${task.state.split(' ')[0]}`, 'data-testid': 'actor-task' }, `task ${task.state}`)
          : null,
      ),
    );
    if (calls.length) {
      row.append(
        el(
          'ul',
          { class: 'calls' },
          calls.map((c) =>
            el(
              'li',
              { class: 'call', 'data-testid': 'tool-call', 'data-status': c.status, 'data-tool-call-id': c.call?.id },
              `${callLabel(actor, c.call)} `,
              el('span', { class: 'status' }, c.status),
            ),
          ),
        ),
      );
    }
    const li = el('li', {}, row);
    const kids = children.get(actor.key);
    if (kids) li.append(el('ul', { class: 'tree' }, kids.sort(byOrder).map(item)));
    return li;
  };
  container.replaceChildren(el('ul', { class: 'tree' }, roots.sort(byOrder).map(item)));
}

// --- approvals ---------------------------------------------------------------------------------------------------

export function renderApprovals(send) {
  const container = $('approvals');
  const wanted = [];
  for (const actor of actors.values()) {
    if (!isAgent(actor) || statusOf(actor) !== 'active') continue;
    for (const c of contextOf(actor).calls ?? []) if (c.status === 'awaiting') wanted.push({ actor, call: c.call });
  }
  const existing = new Map([...container.querySelectorAll('.approval')].map((card) => [card.dataset.id, card]));
  const keep = new Set();
  for (const { actor, call } of wanted) {
    const id = `${actor.key}|${call.id}`;
    keep.add(id);
    if (existing.has(id)) {
      // The label may arrive after the card was drawn.
      const tool = existing.get(id).querySelector('[data-testid="approval-tool"]');
      if (tool && tool.textContent !== callLabel(actor, call)) tool.textContent = callLabel(actor, call);
      continue;
    }
    const label = labelOf(actor);
    const button = (action, text) =>
      el('button', { 'data-action': action, 'data-tool-call-id': call.id, 'data-agent': label }, text);
    const approve = button('approve', 'Approve');
    const deny = button('deny', 'Deny');
    const card = el(
      'div',
      { class: 'approval', 'data-testid': 'approval', 'data-agent': label, 'data-tool-call-id': call.id },
      el('strong', {}, label),
      ' wants to run ',
      el('strong', { 'data-testid': 'approval-tool', title: call.name ?? '' }, callLabel(actor, call)),
      el('code', {}, short(call.arguments ?? {}, 400)),
      approve,
      deny,
    );
    card.dataset.id = id;
    const answer = (command) => {
      approve.disabled = true;
      deny.disabled = true;
      send(
        actor,
        command,
        command === 'DENY' ? { toolCallId: call.id, reason: 'denied from the inspector' } : { toolCallId: call.id },
      );
    };
    approve.addEventListener('click', () => answer('APPROVE'));
    deny.addEventListener('click', () => answer('DENY'));
    container.append(card);
  }
  for (const [id, card] of existing) if (!keep.has(id)) card.remove();
  container.querySelector('.empty')?.remove();
  if (wanted.length === 0) container.append(el('p', { class: 'empty' }, 'None.'));
  renderAnswered();
}

function renderAnswered() {
  const items = answered
    .slice(-8)
    .reverse()
    .map((entry) =>
      el(
        'li',
        {
          class: `answered ${entry.decision}`,
          'data-testid': 'answered',
          'data-decision': entry.decision,
          'data-agent': entry.agent,
          'data-tool-call-id': entry.toolCallId,
          title: short(entry.args, 400),
        },
        el('span', { class: 'verdict' }, entry.decision === 'approved' ? '✓ approved' : '✗ denied'),
        ' ',
        el('strong', {}, entry.tool),
        ` for ${entry.agent}`,
        el('span', { class: 'by', 'data-testid': 'answered-by' }, ` by ${answeredBy(entry)}`),
        entry.at ? el('span', { class: 'at' }, ` · ${clock(entry.at)}`) : null,
        entry.reason ? el('div', { class: 'reason' }, `“${short(entry.reason, 120)}”`) : null,
      ),
    );
  $('answered').replaceChildren(...(items.length ? items : [el('li', { class: 'empty' }, 'None yet.')]));
}

// --- agents, usage and tasks -------------------------------------------------------------------------------------

const number = (n) => (n ?? 0).toLocaleString('en-US');
// Agents' costs are mostly fractions of a cent to a few dollars: four decimals below a dollar.
const money = (cost) => (cost === null ? '—' : `$${cost < 1 ? cost.toFixed(4) : cost.toFixed(2)}`);

/** A turn's budget: what its subtree spent of each limit (the tightest left over the chain in the tooltip). */
function budgetCell(budget) {
  if (!budget) return el('td', { 'data-testid': 'usage-budget' }, '—');
  const { limits, spent, left } = budget;
  const parts = [];
  if (limits.tokens !== undefined) parts.push(`${number(spent.tokens)}/${number(limits.tokens)} tok`);
  if (limits.costUsd !== undefined) parts.push(`${money(spent.costUsd)}/${money(limits.costUsd)}`);
  if (limits.timeMs !== undefined)
    parts.push(`${Math.round(spent.timeMs / 1000)}/${Math.round(limits.timeMs / 1000)} s`);
  if (parts.length === 0) parts.push('inherited');
  const leftText = Object.entries(left)
    .map(([k, v]) => `${k} ${k === 'costUsd' ? money(v) : number(Math.round(v))}`)
    .join(', ');
  const title = `left (tightest up the tree): ${leftText || 'no limit'}${budget.exhausted ? ` — ${budget.exhausted.message}` : ''}`;
  return el(
    'td',
    { 'data-testid': 'usage-budget', title, class: budget.exhausted ? 'exhausted' : '' },
    `${parts.join(' · ')}${budget.exhausted ? ' (spent)' : ''}`,
  );
}

export function renderUsage(selectActor) {
  // One row per agent id: a resumed subagent is rebuilt as a new actor, and its row adds up all of them.
  const byAgent = new Map();
  for (const a of [...actors.values()].filter(isAgent).sort(byOrder)) {
    const u = a.usage ?? { input: 0, output: 0 };
    const seen = byAgent.get(labelOf(a));
    const cost = seen && seen.cost !== null ? seen.cost + (a.cost ?? 0) : a.cost;
    const usage = seen ? { input: seen.usage.input + u.input, output: seen.usage.output + u.output } : u;
    byAgent.set(labelOf(a), { actor: a, usage, cost: seen && a.cost === null ? seen.cost : cost });
  }
  if (byAgent.size === 0) return;
  const total = { input: 0, output: 0, cost: null };
  const rows = [...byAgent.values()].map(({ actor: a, usage: u, cost }) => {
    const ctx = contextOf(a);
    total.input += u.input;
    total.output += u.output;
    if (cost !== null) total.cost = (total.cost ?? 0) + cost;
    const task = taskOf(a);
    const name = el('a', { href: '#', 'data-key': a.key }, labelOf(a));
    name.addEventListener('click', (event) => {
      event.preventDefault();
      selectActor(a.key);
    });
    return el(
      'tr',
      { 'data-testid': 'usage-row', 'data-agent': labelOf(a) },
      el('td', {}, name),
      el(
        'td',
        { 'data-testid': 'usage-task', class: 'task-cell' },
        task ? `${task.state}${task.outcome ? ` (${task.outcome})` : ''}` : statusOf(a) === 'active' ? '' : statusOf(a),
      ),
      el('td', { class: 'n', 'data-testid': 'usage-turn-step' }, `${ctx.turn ?? 0}/${ctx.step ?? 0}`),
      el('td', { class: 'n' }, number(u.input)),
      el('td', { class: 'n' }, number(u.output)),
      el('td', { class: 'n', 'data-testid': 'usage-cost' }, money(cost)),
      budgetCell(a.budget),
    );
  });
  const head = el(
    'tr',
    {},
    el('th', {}, 'agent'),
    el('th', {}, 'task'),
    el('th', { title: 'turn / step' }, 't/s'),
    el('th', { class: 'n', title: 'input tokens' }, 'in'),
    el('th', { class: 'n', title: 'output tokens' }, 'out'),
    el('th', { title: "Priced where the model's prices are known" }, 'cost'),
    el('th', { title: "The turn's budget: spent by it and its subagents / limit" }, 'budget'),
  );
  const foot = el(
    'tr',
    { class: 'total', 'data-testid': 'usage-total' },
    el('td', {}, 'total'),
    el('td', {}),
    el('td', {}),
    el('td', { class: 'n' }, number(total.input)),
    el('td', { class: 'n' }, number(total.output)),
    el('td', { class: 'n' }, money(total.cost)),
    el('td', {}),
  );
  $('usage').replaceChildren(el('table', { class: 'usage' }, head, rows, foot));
}

let batchCommand = null; // the id of the last command sent from the batches panel

export function renderBatches(sendCommand, selectActor) {
  const send = (...args) => {
    batchCommand = sendCommand(...args);
  };
  showOutcome($('batches-outcome'), batchCommand);
  const sections = [];
  for (const supervisor of [...actors.values()].filter(isSupervisor).sort(byOrder)) {
    for (const batch of supervisor.batches.values()) {
      const tasks = batch.taskIds.map((id) => supervisor.tasks.get(id)).filter(Boolean);
      const count = (state) => tasks.filter((t) => t.state.startsWith(state)).length;
      const agentOf = (taskId) => supervisor.tasks.get(taskId)?.agentId ?? taskId;
      const summary = ['running', 'failed', 'restarting', 'queued', 'settled', 'cancelled']
        .map((state) => [state, count(state)])
        .filter(([, n]) => n > 0)
        .map(([state, n]) => `${n} ${state}`)
        .join(' · ');
      const owner = contextOf(supervisor).ownerId ?? labelOf(supervisor);
      const cancel =
        batch.open && statusOf(supervisor) === 'active'
          ? el(
              'button',
              { class: 'small danger', 'data-action': 'cancel-batch', 'data-batch-id': batch.batchId },
              'Cancel batch',
            )
          : null;
      cancel?.addEventListener('click', () => send(supervisor, 'CANCEL_BATCH', { batchId: batch.batchId }));
      const taskRows = tasks.map((task) => {
        const open = task.state === 'queued' || task.state === 'running' || task.state.startsWith('restarting');
        const cancelTask = open
          ? el('button', { class: 'small', 'data-action': 'cancel-task', 'data-task-id': task.taskId }, 'Cancel')
          : null;
        cancelTask?.addEventListener('click', () => send(supervisor, 'CANCEL_TASK', { taskId: task.taskId }));
        const child = [...actors.values()].find((a) => isAgent(a) && contextOf(a).agentId === task.agentId);
        const name = child ? el('a', { href: '#' }, task.agentId) : el('span', {}, task.agentId);
        if (child) {
          name.addEventListener('click', (event) => {
            event.preventDefault();
            selectActor(child.key);
          });
        }
        return el(
          'li',
          { 'data-testid': 'task', 'data-task-id': task.taskId, 'data-agent': task.agentId, 'data-state': task.state },
          name,
          el(
            'span',
            { class: `task ${task.state.split(' ')[0]}` },
            `${task.state}${task.outcome ? ` (${task.outcome})` : ''}`,
          ),
          task.restartedBy
            ? el(
                'span',
                { class: 'cause', 'data-testid': 'restarted-by' },
                `because ${agentOf(task.restartedBy)} failed`,
              )
            : null,
          cancelTask,
        );
      });
      sections.push(
        el(
          'div',
          {
            class: `batch${batch.open ? '' : ' settled'}`,
            'data-testid': 'batch',
            'data-batch-id': batch.batchId,
            'data-open': String(batch.open),
          },
          el(
            'div',
            { class: 'batch-head' },
            el('strong', {}, `${owner}'s ${batch.background ? 'background ' : ''}batch`),
            el(
              'span',
              { class: 'kind', title: batch.batchId },
              ` ${tasks.length} task${tasks.length === 1 ? '' : 's'}, ${batch.open ? `at most ${batch.concurrency} at once` : 'settled'}`,
            ),
            cancel,
          ),
          el('div', { class: 'batch-summary' }, summary),
          batch.escalation
            ? el(
                'div',
                { class: 'batch-escalated', 'data-testid': 'batch-escalated' },
                `escalated: ${agentOf(batch.escalation.taskId)} failed (${
                  batch.escalation.because === 'intensity' ? 'too many restarts' : `${batch.escalation.because} failure`
                })`,
              )
            : null,
          el('ul', { class: 'tasks' }, taskRows),
        ),
      );
    }
  }
  $('batches').replaceChildren(
    ...(sections.length ? sections.slice(-6) : [el('p', { class: 'empty' }, 'No swarm batch yet.')]),
  );
}

// --- event log ---------------------------------------------------------------------------------------------------

export function renderLog(actor) {
  $('log-title').textContent = actor ? `Events — ${labelOf(actor)}` : 'Events';
  if (!actor) return;
  const items = actor.log.slice(-200).map((entry) =>
    el(
      'li',
      {
        'data-testid': 'log-entry',
        'data-type': entry.type,
        class: entry.command ? `command ${entry.ok ? 'ok' : 'refused'}` : null,
      },
      el(
        'span',
        { class: 'coord' },
        entry.command ? `#${entry.n}` : `#${entry.n} t${entry.turn ?? '-'}.s${entry.step ?? '-'}`,
      ),
      el('span', { class: 'type' }, entry.type ?? '?'),
      entry.source ? el('span', { class: 'detail' }, `from ${entry.source}`) : null,
      entry.detail ? el('span', { class: 'detail' }, entry.detail) : null,
    ),
  );
  const log = $('log');
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.replaceChildren(...items);
  if (atEnd) log.scrollTop = log.scrollHeight;
}

export function renderRuns() {
  $('runs').replaceChildren(
    ...[...runs].map(([run, connected]) =>
      el(
        'span',
        { class: `badge${connected ? ' ok' : ''}`, 'data-testid': 'run', 'data-run': run },
        `${run}${connected ? '' : ' (ended)'}`,
      ),
    ),
  );
}
