// The selected actor's controls: steer and interrupt an agent, cancel the task it runs, resume a finished subagent
// with a follow-up. Each command goes to the program over the page's socket and is answered with its outcome.

import { $, el } from './dom.js';
import { contextOf, isAgent, isSupervisor, labelOf, showOutcome, statusOf, taskOf } from './store.js';

let built = null; // { key, mode, node }
let lastSent = null; // { id, actorKey }

function modeOf(actor) {
  if (!actor) return 'none';
  if (isSupervisor(actor)) return 'supervisor';
  if (!isAgent(actor)) return 'plumbing';
  const status = statusOf(actor);
  const task = taskOf(actor);
  const running = status === 'active' && actor.snapshot?.value !== 'idle';
  const flags = [
    status === 'active' ? (running ? 'running' : 'idle') : 'stopped',
    task && (task.state === 'running' || task.state.startsWith('restarting')) ? 'task' : '',
    // A task agent (a supervisor's member has no task) that is not running: it can be given a follow-up.
    task && !running ? 'resumable' : '',
  ];
  return flags.filter(Boolean).join(' ');
}

function textBox(name, placeholder) {
  return el('textarea', { rows: 2, 'data-testid': `${name}-text`, placeholder });
}

function build(actor, mode, send) {
  const node = el('div', { class: 'controls', 'data-testid': 'controls', 'data-mode': mode });
  if (mode === 'none') {
    node.append(el('p', { class: 'empty' }, 'Select an agent.'));
    return node;
  }
  if (mode === 'plumbing') {
    node.append(
      el('p', { class: 'empty' }, `${labelOf(actor)} is plumbing of its agent's tree: select an agent to control it.`),
    );
    return node;
  }
  if (mode === 'supervisor') {
    node.append(el('p', { class: 'empty' }, 'Cancel its batches and tasks under “Swarm batches”.'));
    return node;
  }
  const flags = new Set(mode.split(' '));
  const fire = (command, fields, target = actor) => {
    lastSent = { id: send(target, command, fields), actorKey: actor.key };
    renderOutcome();
  };
  if (!flags.has('stopped')) {
    const steer = textBox(
      'steer',
      flags.has('running')
        ? 'A message for the agent: it joins at the next step'
        : 'A message for the agent: it starts a turn',
    );
    const steerButton = el('button', { 'data-action': 'steer' }, 'Steer');
    steerButton.addEventListener('click', () => {
      if (!steer.value.trim()) return steer.focus();
      fire('STEER', { text: steer.value });
      steer.value = '';
    });
    node.append(el('label', {}, 'Steer'), steer, el('div', { class: 'row' }, steerButton));
  }
  const buttons = el('div', { class: 'row' });
  if (flags.has('running')) {
    const interrupt = el('button', { class: 'danger', 'data-action': 'interrupt' }, 'Interrupt');
    interrupt.addEventListener('click', () => fire('INTERRUPT', {}));
    buttons.append(interrupt);
  }
  if (flags.has('task')) {
    const task = taskOf(actor);
    const cancel = el(
      'button',
      { class: 'danger', 'data-action': 'cancel-task', 'data-task-id': task.taskId },
      'Cancel task',
    );
    cancel.addEventListener('click', () => fire('CANCEL_TASK', { taskId: task.taskId }, task.supervisor));
    buttons.append(cancel);
  }
  if (buttons.childElementCount) node.append(buttons);
  if (flags.has('resumable')) {
    const followUp = textBox('resume', 'A follow-up task for this subagent');
    const resume = el('button', { 'data-action': 'resume' }, 'Resume');
    resume.addEventListener('click', () => {
      if (!followUp.value.trim()) return followUp.focus();
      fire('RESUME', { text: followUp.value, agentId: contextOf(actor).agentId });
      followUp.value = '';
    });
    node.append(
      el('label', {}, flags.has('stopped') ? 'Resume (rebuilt from its history)' : 'Resume with a follow-up'),
      followUp,
      el('div', { class: 'row' }, resume),
    );
  }
  if (flags.has('stopped') && !flags.has('resumable')) {
    node.append(el('p', { class: 'empty' }, `${labelOf(actor)} is stopped: there is nothing left to control.`));
  }
  node.append(el('p', { class: 'outcome', 'data-testid': 'command-outcome' }));
  return node;
}

function renderOutcome() {
  const line = built?.node.querySelector('.outcome');
  showOutcome(line, lastSent && lastSent.actorKey === built?.key ? lastSent.id : null);
}

export function renderControls(actor, send) {
  $('controls-title').textContent = actor ? `Control — ${labelOf(actor)}` : 'Control';
  const mode = modeOf(actor);
  const key = actor?.key ?? null;
  if (!built || built.key !== key || built.mode !== mode) {
    // Keep what is being typed when the agent moves on (running → idle rebuilds the panel).
    const typed = new Map(
      [...(built?.node.querySelectorAll('textarea') ?? [])].map((t) => [t.dataset.testid, t.value]),
    );
    const node = build(actor, mode, send);
    if (built?.key === key)
      for (const t of node.querySelectorAll('textarea')) t.value = typed.get(t.dataset.testid) ?? '';
    built = { key, mode, node };
    $('controls').replaceChildren(node);
  }
  renderOutcome();
}
