// The selected actor's statechart: laid out with ELK (the page's one library, served by the inspector), drawn as
// SVG that fits its panel, with zoom and pan. Active states are filled; the transitions the last macrostep took
// (reported by the program as `@troupe.transitions`) are marked, and only those.
// Over 400 lines: layout, drawing, zoom and highlighting share one drawn chart and one camera, this module's state.

import { $, el, svg } from './dom.js';
import { activePaths, labelOf, statusOf } from './store.js';

const layouts = new Map(); // definition text -> Promise<{ result, graph }>
let drawn = null; // { key, definitionText, ready }
const camera = { x: 0, y: 0, w: 1, h: 1, width: 1, height: 1 };

const toArray = (value) => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value]);

function guardName(guard) {
  if (typeof guard === 'string') return guard;
  if (guard && typeof guard.type === 'string') return guard.type;
  return undefined;
}

/** States and transitions of a machine config, with every target resolved to a path. */
export function buildGraph(config) {
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
      const edge = (source, target, root) =>
        edges.push({ id: `e${edges.length}`, source, target: target.join('.'), event, guard, root });
      if (path.length === 0) {
        // The root's own transitions apply in every state: drawn from each top-level state.
        for (const top of Object.keys(config.states ?? {})) {
          for (const target of targets) if (target.join('.') !== top) edge(top, target, true);
        }
        return;
      }
      // A targetless transition (actions only) is listed on its state, not drawn: it changes no state.
      if (targets.length === 0) {
        internal.push({ source: path.join('.'), label: guard ? `${event} [${guard}]` : event });
        return;
      }
      for (const target of targets) edge(path.join('.'), target, false);
    };
    for (const [event, list] of Object.entries(cfg.on ?? {})) for (const t of toArray(list)) add(event, t);
    for (const t of toArray(cfg.always)) add('always', t);
    for (const [key, child] of Object.entries(cfg.states ?? {})) visit(child, [...path, key]);
  };
  visit(config, []);
  const known = new Set(nodes.map((n) => n.path.join('.')));
  return { nodes, internal, edges: edges.filter((e) => known.has(e.source) && known.has(e.target)) };
}

let measurer = null;
/** Rendered text widths, so that ELK keeps labels apart (a guess per character lets them run together). */
function textWidth(text, size, weight = 'normal') {
  measurer ??= document.createElement('canvas').getContext('2d');
  measurer.font = `${weight} ${size}px ${getComputedStyle(document.body).fontFamily}`;
  return Math.ceil(measurer.measureText(text).width);
}

/** An edge's label: its event (none for `always`), and its guard on a second line. */
export function labelLines(edge) {
  const lines = [];
  if (edge.event !== 'always') lines.push(edge.event);
  if (edge.guard) lines.push(`[${edge.guard}]`);
  return lines;
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
    if (kids.length === 0) return { id, width: Math.max(70, textWidth(node.key, 12) + 24), height: 30 };
    return {
      id,
      layoutOptions: { 'elk.padding': `[top=24,left=10,bottom=10,right=10]` },
      children: kids.map(elkNode),
    };
  };
  const elkGraph = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '24',
      'elk.layered.spacing.edgeNodeBetweenLayers': '14',
      'elk.spacing.nodeNode': '16',
      'elk.spacing.edgeEdge': '8',
      'elk.spacing.edgeLabel': '3',
      'elk.spacing.labelLabel': '4',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.edgeLabels.sideSelection': 'SMART_DOWN',
    },
    children: graph.nodes.filter((n) => n.path.length === 1).map(elkNode),
    edges: graph.edges.map((e) => {
      const lines = labelLines(e);
      return {
        id: e.id,
        sources: [`n:${e.source}`],
        targets: [`n:${e.target}`],
        labels: lines.length
          ? [
              {
                id: `${e.id}:l`,
                text: lines.join('\n'),
                width:
                  Math.max(...lines.map((line, i) => textWidth(line, i === 0 && e.event !== 'always' ? 10 : 9))) + 4,
                height: lines.length * 11 + 2,
              },
            ]
          : [],
      };
    }),
  };
  // ELK is the global from /vendor/elk.bundled.js.
  promise = new globalThis.ELK().layout(elkGraph).then((result) => ({ result, graph }));
  layouts.set(actor.definitionText, promise);
  return promise;
}

function arrowMarkers() {
  const defs = svg('defs');
  for (const [id, color] of [
    ['arrow', '#9aa3b2'],
    ['arrow-taken', '#e8590c'],
  ]) {
    const marker = svg('marker', { id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7 });
    marker.setAttribute('orient', 'auto');
    marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: color }));
    defs.append(marker);
  }
  return defs;
}

function drawChart(actor, { result, graph }) {
  const abs = new Map([['root', { x: 0, y: 0 }]]);
  const nodesLayer = svg('g');
  const edgesLayer = svg('g');
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
      nodesLayer.append(group);
    }
    for (const child of node.children ?? []) place(child, x, y);
  };
  place(result, 0, 0);
  const byId = new Map(graph.edges.map((e) => [e.id, e]));
  for (const edge of result.edges ?? []) {
    const info = byId.get(edge.id);
    if (!info) continue;
    const offset = abs.get(edge.container ?? 'root') ?? { x: 0, y: 0 };
    const group = svg('g', {
      class: `edge${info.event === 'always' ? ' always' : ''}`,
      'data-testid': 'transition',
      'data-id': info.id,
      'data-event': info.event,
      'data-source': info.source,
      'data-target': info.target,
      'data-guard': info.guard ?? '',
      'data-root': info.root ? 'true' : 'false',
    });
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const d = points.map((p, i) => `${i ? 'L' : 'M'}${p.x + offset.x},${p.y + offset.y}`).join(' ');
      group.append(svg('path', { d }));
    }
    const title = svg('title');
    title.textContent = `${info.event}${info.guard ? ` [${info.guard}]` : ''}: ${info.source} → ${info.target}`;
    group.append(title);
    for (const label of edge.labels ?? []) {
      const x = (label.x ?? 0) + offset.x;
      const y = (label.y ?? 0) + offset.y;
      group.append(svg('rect', { class: 'label-bg', x, y, width: label.width, height: label.height, rx: 2 }));
      const lines = labelLines(info);
      const text = svg('text', { class: 'label', 'data-testid': 'transition-label', x: x + 2, y: y + 10 });
      for (const [i, line] of lines.entries()) {
        const span = svg('tspan', { x: x + 2, dy: i === 0 ? 0 : 11 });
        if (line.startsWith('[')) span.setAttribute('class', 'guard');
        span.textContent = line;
        text.append(span);
      }
      group.append(text);
    }
    edgesLayer.append(group);
  }
  const root = svg('svg', {
    'data-machine': actor.machine?.id ?? '',
    'data-testid': 'chart-svg',
    preserveAspectRatio: 'xMidYMid meet',
  });
  root.append(arrowMarkers(), nodesLayer, edgesLayer);
  $('chart').replaceChildren(root);
  camera.width = Math.ceil(result.width ?? 400) + 8;
  camera.height = Math.ceil(result.height ?? 300) + 8;
  fitChart();
}

// --- zoom and pan ------------------------------------------------------------------------------------------------

function applyCamera() {
  const root = $('chart').querySelector('svg');
  if (!root) return;
  root.setAttribute('viewBox', `${camera.x} ${camera.y} ${camera.w} ${camera.h}`);
  const box = $('chart').getBoundingClientRect();
  const scale = box.width > 0 ? box.width / camera.w : 1;
  $('zoom-level').textContent = `${Math.round(scale * 100)}%`;
}

/** The whole chart in the panel, centred. */
export function fitChart() {
  const box = $('chart').getBoundingClientRect();
  const aspect = box.width > 0 && box.height > 0 ? box.width / box.height : 1;
  const pad = 8;
  let w = camera.width + 2 * pad;
  let h = camera.height + 2 * pad;
  if (w / h > aspect) h = w / aspect;
  else w = h * aspect;
  Object.assign(camera, { x: (camera.width - w) / 2, y: (camera.height - h) / 2, w, h });
  applyCamera();
}

/** Zooms by `factor` around a point of the chart (its centre by default). */
export function zoom(factor, cx = camera.x + camera.w / 2, cy = camera.y + camera.h / 2) {
  const w = Math.min(Math.max(camera.w / factor, 40), camera.width * 8 + 400);
  const k = w / camera.w;
  Object.assign(camera, { x: cx - (cx - camera.x) * k, y: cy - (cy - camera.y) * k, w, h: camera.h * k });
  applyCamera();
}

/** The active leaf states at 100 %, centred: where the agent is, readable. */
export function focusActive() {
  const nodes = [...document.querySelectorAll('#chart [data-testid="state-node"].active:not(.compound) > rect')];
  if (nodes.length === 0) return fitChart();
  const boxes = nodes.map((rect) => ({
    x: Number(rect.getAttribute('x')),
    y: Number(rect.getAttribute('y')),
    w: Number(rect.getAttribute('width')),
    h: Number(rect.getAttribute('height')),
  }));
  const cx = (Math.min(...boxes.map((b) => b.x)) + Math.max(...boxes.map((b) => b.x + b.w))) / 2;
  const cy = (Math.min(...boxes.map((b) => b.y)) + Math.max(...boxes.map((b) => b.y + b.h))) / 2;
  const box = $('chart').getBoundingClientRect();
  Object.assign(camera, { x: cx - box.width / 2, y: cy - box.height / 2, w: box.width, h: box.height });
  applyCamera();
}

function chartPoint(event) {
  const box = $('chart').getBoundingClientRect();
  return {
    x: camera.x + ((event.clientX - box.left) / box.width) * camera.w,
    y: camera.y + ((event.clientY - box.top) / box.height) * camera.h,
  };
}

export function installZoomAndPan() {
  const chart = $('chart');
  chart.addEventListener(
    'wheel',
    (event) => {
      if (!chart.querySelector('svg')) return;
      event.preventDefault();
      const p = chartPoint(event);
      zoom(Math.exp(-event.deltaY * 0.0015), p.x, p.y);
    },
    { passive: false },
  );
  let drag = null;
  chart.addEventListener('pointerdown', (event) => {
    if (!chart.querySelector('svg') || event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, cx: camera.x, cy: camera.y };
    chart.setPointerCapture(event.pointerId);
    chart.classList.add('panning');
  });
  chart.addEventListener('pointermove', (event) => {
    if (!drag) return;
    const box = chart.getBoundingClientRect();
    camera.x = drag.cx - ((event.clientX - drag.x) / box.width) * camera.w;
    camera.y = drag.cy - ((event.clientY - drag.y) / box.height) * camera.h;
    applyCamera();
  });
  const end = () => {
    drag = null;
    chart.classList.remove('panning');
  };
  chart.addEventListener('pointerup', end);
  chart.addEventListener('pointercancel', end);
  $('zoom-in').addEventListener('click', () => zoom(1.25));
  $('zoom-out').addEventListener('click', () => zoom(0.8));
  $('zoom-fit').addEventListener('click', () => fitChart());
  $('zoom-active').addEventListener('click', () => focusActive());
  new ResizeObserver(() => drawn?.ready && fitChart()).observe(chart);
}

// --- highlighting ------------------------------------------------------------------------------------------------

/** Whether a drawn edge is one of the transitions the program reported as taken. */
function wasTaken(edge, taken) {
  const { event, source, target, guard } = edge.dataset;
  return taken.some(
    (t) =>
      (t.event || 'always') === event &&
      t.targets.includes(target) &&
      (t.source === source || (t.source === '' && edge.dataset.root === 'true')) &&
      (t.guard ?? '') === guard,
  );
}

function highlight(actor) {
  const status = statusOf(actor);
  // A stopped actor is in no state: its last value is history, not where it is.
  const active = status === 'active' || status === 'done' ? activePaths(actor.snapshot?.value) : new Set();
  const root = $('chart').querySelector('svg');
  root?.classList.toggle('stopped', status !== 'active');
  for (const node of document.querySelectorAll('#chart [data-testid="state-node"]')) {
    node.classList.toggle('active', active.has(node.dataset.path));
  }
  const edges = [...document.querySelectorAll('#chart [data-testid="transition"]')];
  for (const edge of edges) edge.classList.toggle('taken', wasTaken(edge, actor.taken));
  // Marked edges and their labels over the others.
  const layer = edges[0]?.parentNode;
  for (const edge of edges) if (edge.classList.contains('taken')) layer.append(edge);
}

export function renderChart(actor) {
  const status = actor ? statusOf(actor) : 'active';
  $('chart-title').textContent = actor
    ? `Statechart — ${labelOf(actor)}${status === 'active' ? '' : ` (${status})`}`
    : 'Statechart';
  if (!actor?.machine?.states) {
    drawn = null;
    $('chart').replaceChildren(
      el(
        'p',
        { class: 'empty' },
        actor ? `${labelOf(actor)} has no statechart.` : 'Waiting for a program to announce its first agent…',
      ),
    );
    return;
  }
  if (drawn?.key === actor.key && drawn.definitionText === actor.definitionText) {
    if (drawn.ready) highlight(actor);
    return;
  }
  const drawing = { key: actor.key, definitionText: actor.definitionText, ready: false };
  drawn = drawing;
  layoutOf(actor).then(
    (layout) => {
      if (drawn !== drawing) return;
      drawChart(actor, layout);
      drawing.ready = true;
      highlight(actor);
    },
    (error) => {
      $('chart').replaceChildren(el('p', { class: 'empty' }, `Layout failed: ${error?.message ?? error}`));
    },
  );
}
