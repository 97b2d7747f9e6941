// The offline inspector page. Plain browser JavaScript, loaded from the inspector server only (its CSP allows
// nothing else). Every value from a program is put into the page as text, never as HTML.

const token = new URLSearchParams(location.search).get('token') ?? '';
const actors = new Map(); // `${run}/${sessionId}` -> actor
const runs = new Map(); // run -> connected
const layouts = new Map(); // definition text -> Promise<layout>
let selectedKey = null;
let seq = 0;
let commandSeq = 0;
let lastAck = null;
let drawnChart = null; // { key, definitionText, graph }
let socket = null;
let scheduled = false;

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

const keyOf = (run, sessionId) => `${run}/${sessionId}`;

function ensureActor(run, sessionId) {
  const key = keyOf(run, sessionId);
  let actor = actors.get(key);
  if (!actor) {
    actor = {
      key,
      run,
      sessionId,
      name: sessionId,
      parentKey: null,
      definitionText: null,
      machine: null,
      snapshot: { status: 'active' },
      prevSnapshot: null,
      lastEvent: null,
      log: [],
      usage: null,
      order: actors.size,
    };
    actors.set(key, actor);
  }
  return actor;
}

function isAgent(actor) {
  return actor.machine?.id === 'agent' || Array.isArray(actor.snapshot?.context?.calls);
}

/** Agents by their agent id (their actor id is `subagent.<id>` under a supervisor); a nested supervisor by owner. */
function labelOf(actor) {
  const context = actor.snapshot?.context;
  if (isAgent(actor) && typeof context?.agentId === 'string') return context.agentId;
  if (actor.machine?.id === 'supervisor' && typeof context?.ownerId === 'string' && context.ownerId !== actor.name) {
    return `supervisor of ${context.ownerId}`;
  }
  return actor.name;
}

function kindOf(actor) {
  if (actor.machine?.id) return actor.machine.id;
  return 'actor';
}

function stateString(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, sub]) => {
      const rest = stateString(sub);
      return rest ? `${key}.${rest}` : key;
    })
    .join(', ');
}

function activePaths(value, prefix = [], out = new Set()) {
  if (value === undefined || value === null) return out;
  if (typeof value === 'string') {
    out.add([...prefix, value].join('.'));
    return out;
  }
  for (const [key, sub] of Object.entries(value)) {
    const path = [...prefix, key];
    out.add(path.join('.'));
    activePaths(sub, path, out);
  }
  return out;
}

function short(value, max = 100) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return '';
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function textOfMessage(message) {
  if (!message || !Array.isArray(message.content)) return '';
  return message.content
    .map((part) => (part?.type === 'text' ? part.text : part?.type === 'tool_call' ? `${part.name}()` : ''))
    .filter(Boolean)
    .join(' ');
}

function detailOf(event) {
  switch (event.type) {
    case 'PROMPT':
      return short(textOfMessage(event.input?.messages?.[0]));
    case 'STEER':
    case 'NOTIFY':
      return short(textOfMessage(event.message));
    case 'MODEL_DONE':
      return short(`${event.message?.stopReason ?? ''} ${textOfMessage(event.message)}`);
    case 'MODEL_ERROR':
      return short(event.error?.message ?? '');
    case 'AUTHORIZED':
      return short((event.decisions ?? []).map((d) => `${d.toolCallId}:${d.decision}`).join(' '));
    case 'VALIDATED':
      return short((event.outcomes ?? []).map((o) => `${o.toolCallId}:${o.error ? 'invalid' : 'ok'}`).join(' '));
    case 'TOOL_RESULTS':
      return short((event.results ?? []).map((r) => `${r.toolCallId}${r.result?.isError ? ' (error)' : ''}`).join(' '));
    case 'APPROVE':
    case 'DENY':
      return event.toolCallId ?? '';
    default: {
      const { type: _type, ...rest } = event;
      return Object.keys(rest).length ? short(rest, 80) : '';
    }
  }
}

function nameOf(run, sessionId) {
  return actors.get(keyOf(run, sessionId))?.name ?? sessionId;
}

function addUsage(actor, usage) {
  actor.usage ??= { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  for (const field of Object.keys(actor.usage)) {
    if (typeof usage[field] === 'number') actor.usage[field] += usage[field];
  }
}

function onFrame(run, frame) {
  if (!frame || typeof frame.sessionId !== 'string') return;
  const actor = ensureActor(run, frame.sessionId);
  switch (frame.type) {
    case '@xstate.actor':
      actor.name = frame.name ?? frame.sessionId;
      actor.parentKey = frame.parentId ? keyOf(run, frame.parentId) : null;
      if (typeof frame.definition === 'string') {
        actor.definitionText = frame.definition;
        try {
          actor.machine = JSON.parse(frame.definition);
        } catch {
          actor.machine = null;
        }
      }
      if (frame.snapshot) actor.snapshot = frame.snapshot;
      if (selectedKey === null && isAgent(actor)) selectedKey = actor.key;
      break;
    case '@xstate.event': {
      const event = frame.event ?? {};
      const context = actor.snapshot?.context ?? {};
      actor.log.push({
        n: ++seq,
        type: event.type,
        turn: event.turn ?? context.turn,
        step: event.step ?? context.step,
        source: frame.sourceId ? nameOf(run, frame.sourceId) : null,
        detail: detailOf(event),
      });
      if (actor.log.length > 500) actor.log.shift();
      if (event.type === 'MODEL_DONE' && event.message?.usage) addUsage(actor, event.message.usage);
      break;
    }
    case '@xstate.snapshot': {
      const before = actor.snapshot;
      actor.snapshot = frame.snapshot ?? actor.snapshot;
      // The last transition is the last event that changed the state (events handled in place change none).
      if (JSON.stringify(before?.value) !== JSON.stringify(actor.snapshot?.value)) {
        actor.prevSnapshot = before;
        actor.lastEvent = frame.event ?? null;
      }
      break;
    }
  }
}

function onMessage(message) {
  switch (message.type) {
    case 'hello':
      for (const r of message.runs) runs.set(r.run, r.connected);
      break;
    case 'run':
      runs.set(message.run, message.connected);
      break;
    case 'frame':
      onFrame(message.run, message.frame);
      break;
    case 'ack':
      lastAck = message;
      break;
  }
  schedule();
}

function connect() {
  socket = new WebSocket(`ws://${location.host}/ui?token=${encodeURIComponent(token)}`);
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
  });
}

function send(actor, command, toolCallId) {
  if (!socket || socket.readyState !== WebSocket.OPEN) return;
  socket.send(
    JSON.stringify({
      type: 'command',
      id: `c${++commandSeq}`,
      run: actor.run,
      sessionId: actor.sessionId,
      command,
      toolCallId,
      ...(command === 'DENY' ? { reason: 'denied from the inspector' } : {}),
    }),
  );
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
}

// --- tree ---------------------------------------------------------------------------------------------------

function renderTree() {
  const container = $('tree');
  if (actors.size === 0) return;
  const children = new Map();
  const roots = [];
  for (const actor of actors.values()) {
    if (actor.parentKey && actors.has(actor.parentKey)) {
      if (!children.has(actor.parentKey)) children.set(actor.parentKey, []);
      children.get(actor.parentKey).push(actor);
    } else roots.push(actor);
  }
  const item = (actor) => {
    const calls = isAgent(actor) ? (actor.snapshot?.context?.calls ?? []) : [];
    const status = actor.snapshot?.status ?? 'active';
    const row = el(
      'div',
      {
        class: `actor${actor.key === selectedKey ? ' selected' : ''}${status === 'active' ? '' : ' stopped'}`,
        'data-testid': 'actor',
        'data-key': actor.key,
        'data-name': labelOf(actor),
        'data-kind': kindOf(actor),
        'data-status': status,
        'data-state': stateString(actor.snapshot?.value),
      },
      el('span', { class: 'name' }, labelOf(actor)),
      el('span', { class: 'kind' }, kindOf(actor)),
      el('span', { class: 'state' }, status === 'active' ? stateString(actor.snapshot?.value) || 'active' : status),
    );
    if (calls.length) {
      row.append(
        el(
          'ul',
          { class: 'calls' },
          ...calls.map((c) =>
            el(
              'li',
              { class: 'call', 'data-testid': 'tool-call', 'data-status': c.status, 'data-tool-call-id': c.call?.id },
              `${c.call?.name ?? '?'} `,
              el('span', { class: 'status' }, c.status),
            ),
          ),
        ),
      );
    }
    const li = el('li', {}, row);
    const kids = children.get(actor.key);
    if (kids) li.append(el('ul', { class: 'tree' }, ...kids.sort((a, b) => a.order - b.order).map(item)));
    return li;
  };
  container.replaceChildren(el('ul', { class: 'tree' }, ...roots.sort((a, b) => a.order - b.order).map(item)));
}

// --- approvals and usage -----------------------------------------------------------------------------------------

function renderApprovals() {
  const container = $('approvals');
  const wanted = [];
  for (const actor of actors.values()) {
    if (!isAgent(actor) || actor.snapshot?.status !== 'active') continue;
    for (const c of actor.snapshot?.context?.calls ?? []) {
      if (c.status === 'awaiting') wanted.push({ actor, call: c.call });
    }
  }
  const existing = new Map([...container.querySelectorAll('.approval')].map((card) => [card.dataset.id, card]));
  const keep = new Set();
  for (const { actor, call } of wanted) {
    const id = `${actor.key}|${call.id}`;
    keep.add(id);
    if (existing.has(id)) continue;
    const label = labelOf(actor);
    const approve = el(
      'button',
      { 'data-action': 'approve', 'data-tool-call-id': call.id, 'data-agent': label },
      'Approve',
    );
    const deny = el('button', { 'data-action': 'deny', 'data-tool-call-id': call.id, 'data-agent': label }, 'Deny');
    const card = el(
      'div',
      { class: 'approval', 'data-testid': 'approval', 'data-agent': label, 'data-tool-call-id': call.id },
      el('strong', {}, label),
      ` wants to run `,
      el('strong', {}, call.name ?? '?'),
      el('code', {}, short(call.arguments ?? {}, 400)),
      approve,
      deny,
    );
    card.dataset.id = id;
    approve.addEventListener('click', () => {
      approve.disabled = true;
      deny.disabled = true;
      send(actor, 'APPROVE', call.id);
    });
    deny.addEventListener('click', () => {
      approve.disabled = true;
      deny.disabled = true;
      send(actor, 'DENY', call.id);
    });
    container.append(card);
  }
  for (const [id, card] of existing) if (!keep.has(id)) card.remove();
  container.querySelector('.empty')?.remove();
  if (wanted.length === 0 && !container.querySelector('.empty')) container.append(el('p', { class: 'empty' }, 'None.'));
  if (lastAck && !lastAck.ok) {
    container.append(el('p', { class: 'empty', 'data-testid': 'ack-error' }, `Refused: ${lastAck.error ?? 'unknown'}`));
    lastAck = null;
  }
}

function renderUsage() {
  const agents = [...actors.values()].filter(isAgent);
  if (agents.length === 0) return;
  const rows = agents.map((a) => {
    const ctx = a.snapshot?.context ?? {};
    const u = a.usage ?? { input: 0, output: 0 };
    return el(
      'tr',
      { 'data-testid': 'usage-row', 'data-agent': labelOf(a) },
      el('td', {}, labelOf(a)),
      el('td', { class: 'n' }, String(ctx.turn ?? 0)),
      el('td', { class: 'n' }, String(ctx.step ?? 0)),
      el('td', { class: 'n' }, String(u.input)),
      el('td', { class: 'n' }, String(u.output)),
    );
  });
  $('usage').replaceChildren(
    el(
      'table',
      { class: 'usage' },
      el(
        'tr',
        {},
        el('th', {}, 'agent'),
        el('th', {}, 'turn'),
        el('th', {}, 'step'),
        el('th', {}, 'in'),
        el('th', {}, 'out'),
      ),
      ...rows,
    ),
  );
}

function renderLog() {
  const actor = selectedKey ? actors.get(selectedKey) : null;
  $('log-title').textContent = actor ? `Events — ${labelOf(actor)}` : 'Events';
  if (!actor) return;
  const items = actor.log
    .slice(-200)
    .map((entry) =>
      el(
        'li',
        { 'data-testid': 'log-entry', 'data-type': entry.type },
        el('span', { class: 'coord' }, `#${entry.n} t${entry.turn ?? '-'}.s${entry.step ?? '-'}`),
        el('span', { class: 'type' }, entry.type ?? '?'),
        entry.source ? el('span', { class: 'detail' }, `from ${entry.source}`) : null,
        entry.detail ? el('span', { class: 'detail' }, entry.detail) : null,
      ),
    );
  $('log').replaceChildren(...items);
}

// --- statechart ------------------------------------------------------------------------------------------------

const toArray = (value) => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value]);

function guardName(guard) {
  if (typeof guard === 'string') return guard;
  if (guard && typeof guard.type === 'string') return guard.type;
  return undefined;
}

/** States and transitions of a machine config, with every target resolved to a path. */
function buildGraph(config) {
  const ids = new Map([[config.id ?? '', []]]);
  const nodes = [];
  const index = (cfg, path) => {
    if (cfg.id && path.length) ids.set(cfg.id, path);
    for (const [key, child] of Object.entries(cfg.states ?? {})) {
      const childPath = [...path, key];
      nodes.push({ path: childPath, key, cfg: child, compound: Object.keys(child.states ?? {}).length > 0 });
      index(child, childPath);
    }
  };
  index(config, []);
  const resolve = (source, target) => {
    if (typeof target !== 'string') return null;
    if (target.startsWith('#')) {
      const [id, ...rest] = target.slice(1).split('.');
      const base = ids.get(id);
      return base ? [...base, ...rest] : null;
    }
    if (target.startsWith('.')) return [...source, ...target.slice(1).split('.')];
    return [...source.slice(0, -1), ...target.split('.')];
  };
  const edges = [];
  const internal = [];
  const visit = (cfg, path) => {
    const add = (event, transition) => {
      const t = typeof transition === 'string' ? { target: transition } : (transition ?? {});
      const guard = guardName(t.guard);
      const targets = toArray(t.target)
        .map((target) => resolve(path, target))
        .filter(Boolean);
      if (path.length === 0) {
        // The root's own transitions apply in every state: drawn from each top-level state.
        if (targets.length === 0) return;
        for (const top of Object.keys(config.states ?? {})) {
          for (const target of targets) {
            if (target.join('.') === top) continue;
            edges.push({ id: `e${edges.length}`, source: top, target: target.join('.'), event, guard, label: event });
          }
        }
        return;
      }
      // A targetless transition (actions only) is listed on its state, not drawn: it changes no state.
      if (targets.length === 0) {
        internal.push({ source: path.join('.'), label: guard ? `${event} [${guard}]` : event });
        return;
      }
      for (const target of targets) {
        edges.push({
          id: `e${edges.length}`,
          source: path.join('.'),
          target: target.join('.'),
          event,
          guard,
          label: event === 'always' ? '' : event,
        });
      }
    };
    for (const [event, list] of Object.entries(cfg.on ?? {})) for (const t of toArray(list)) add(event, t);
    for (const t of toArray(cfg.always)) add('always', t);
    for (const [key, child] of Object.entries(cfg.states ?? {})) visit(child, [...path, key]);
  };
  visit(config, []);
  const known = new Set(nodes.map((n) => n.path.join('.')));
  return { nodes, internal, edges: edges.filter((e) => known.has(e.source) && known.has(e.target)) };
}

function layoutOf(actor) {
  let promise = layouts.get(actor.definitionText);
  if (promise) return promise;
  const graph = buildGraph(actor.machine);
  const elkNode = (node) => {
    const kids = graph.nodes.filter(
      (n) => n.path.length === node.path.length + 1 && n.path.slice(0, -1).join('.') === node.path.join('.'),
    );
    const id = `n:${node.path.join('.')}`;
    if (kids.length === 0) return { id, width: Math.max(70, node.key.length * 7.5 + 24), height: 30 };
    return {
      id,
      layoutOptions: { 'elk.padding': '[top=28,left=12,bottom=12,right=12]' },
      children: kids.map(elkNode),
    };
  };
  const top = graph.nodes.filter((n) => n.path.length === 1);
  const elkGraph = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '34',
      'elk.spacing.nodeNode': '24',
      'elk.spacing.edgeLabel': '2',
      'elk.edgeLabels.placement': 'CENTER',
    },
    children: top.map(elkNode),
    edges: graph.edges.map((e) => ({
      id: e.id,
      sources: [`n:${e.source}`],
      targets: [`n:${e.target}`],
      labels: e.label ? [{ id: `${e.id}:l`, text: e.label, width: e.label.length * 5.6 + 6, height: 12 }] : [],
    })),
  };
  // ELK is the global from /vendor/elk.bundled.js.
  promise = new globalThis.ELK().layout(elkGraph).then((result) => ({ result, graph }));
  layouts.set(actor.definitionText, promise);
  return promise;
}

function drawChart(actor, { result, graph }) {
  const abs = new Map([['root', { x: 0, y: 0 }]]);
  const g = svg('g');
  const place = (node, ox, oy) => {
    const x = ox + (node.x ?? 0);
    const y = oy + (node.y ?? 0);
    abs.set(node.id, { x, y });
    if (node.id !== 'root') {
      const path = node.id.slice(2);
      const compound = Boolean(node.children?.length);
      const group = svg('g', {
        class: `node${compound ? ' compound' : ''}`,
        'data-testid': 'state-node',
        'data-path': path,
      });
      const own = graph.internal.filter((t) => t.source === path).map((t) => t.label);
      const title = svg('title');
      title.textContent = own.length ? `${path}\nalso handles: ${own.join(', ')}` : path;
      group.append(title, svg('rect', { x, y, width: node.width, height: node.height, rx: 6 }));
      const text = svg(
        'text',
        compound ? { x: x + 8, y: y + 17 } : { x: x + node.width / 2, y: y + 19, 'text-anchor': 'middle' },
      );
      text.textContent = path.split('.').pop();
      group.append(text);
      g.append(group);
    }
    for (const child of node.children ?? []) place(child, x, y);
  };
  place(result, 0, 0);
  const byId = new Map(graph.edges.map((e) => [e.id, e]));
  for (const edge of result.edges ?? []) {
    const info = byId.get(edge.id);
    const offset = abs.get(edge.container ?? 'root') ?? { x: 0, y: 0 };
    const group = svg('g', {
      class: `edge${info?.event === 'always' ? ' always' : ''}`,
      'data-testid': 'transition',
      'data-event': info?.event ?? '',
      'data-source': info?.source ?? '',
      'data-target': info?.target ?? '',
    });
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const d = points.map((p, i) => `${i ? 'L' : 'M'}${p.x + offset.x},${p.y + offset.y}`).join(' ');
      group.append(svg('path', { d }));
    }
    const title = svg('title');
    title.textContent = info
      ? `${info.event}${info.guard ? ` [${info.guard}]` : ''}: ${info.source} → ${info.target}`
      : '';
    group.append(title);
    for (const label of edge.labels ?? []) {
      const text = svg('text', { x: (label.x ?? 0) + offset.x, y: (label.y ?? 0) + offset.y + 9 });
      text.textContent = label.text;
      group.append(text);
    }
    g.append(group);
  }
  const width = Math.ceil(result.width ?? 400) + 4;
  const height = Math.ceil(result.height ?? 300) + 4;
  const root = svg('svg', { viewBox: `-2 -2 ${width} ${height}`, 'data-machine': actor.machine?.id ?? '' });
  const defs = svg('defs');
  for (const [id, color] of [
    ['arrow', '#9aa3b2'],
    ['arrow-last', '#e8590c'],
  ]) {
    const marker = svg('marker', {
      id,
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: 'auto',
    });
    marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: color }));
    defs.append(marker);
  }
  root.append(defs, g);
  $('chart').replaceChildren(root);
}

function highlight(actor) {
  const active = activePaths(actor.snapshot?.value);
  const before = activePaths(actor.prevSnapshot?.value);
  for (const node of document.querySelectorAll('#chart [data-testid="state-node"]')) {
    node.classList.toggle('active', active.has(node.dataset.path));
  }
  // The last transition: the edges of the last event from a state that was active; of those, the ones whose
  // target is active now when there are any (a guarded choice), else all of them (the target was passed through).
  const type = actor.lastEvent?.type;
  const edges = [...document.querySelectorAll('#chart [data-testid="transition"]')];
  const taken = edges.filter((edge) => Boolean(type) && edge.dataset.event === type && before.has(edge.dataset.source));
  const landed = taken.filter((edge) => active.has(edge.dataset.target));
  const marked = new Set(landed.length ? landed : taken);
  for (const edge of edges) edge.classList.toggle('last', marked.has(edge));
}

function renderChart() {
  const actor = selectedKey ? actors.get(selectedKey) : null;
  $('chart-title').textContent = actor ? `Statechart — ${labelOf(actor)}` : 'Statechart';
  if (!actor?.machine?.states) {
    drawnChart = null;
    $('chart').replaceChildren(
      el('p', { class: 'empty' }, actor ? `${labelOf(actor)} has no statechart.` : 'Select an actor.'),
    );
    return;
  }
  if (drawnChart?.key === actor.key && drawnChart.definitionText === actor.definitionText) {
    if (drawnChart.ready) highlight(actor);
    return;
  }
  const drawing = { key: actor.key, definitionText: actor.definitionText, ready: false };
  drawnChart = drawing;
  layoutOf(actor).then(
    (layout) => {
      if (drawnChart !== drawing) return;
      drawChart(actor, layout);
      drawing.ready = true;
      highlight(actors.get(drawing.key) ?? actor);
    },
    (error) => {
      $('chart').replaceChildren(el('p', { class: 'empty' }, `Layout failed: ${error?.message ?? error}`));
    },
  );
}

function renderRuns() {
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

function render() {
  renderRuns();
  renderTree();
  renderApprovals();
  renderUsage();
  renderLog();
  renderChart();
}

$('tree').addEventListener('click', (event) => {
  const row = event.target instanceof Element ? event.target.closest('.actor') : null;
  if (!row) return;
  selectedKey = row.dataset.key;
  schedule();
});

connect();
