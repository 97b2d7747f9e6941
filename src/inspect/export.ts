import type { AnyStateMachine } from 'xstate';

/** The parts of XState's StateNode this module reads (public fields, typed loosely on purpose). */
interface NodeLike {
  key: string;
  id: string;
  path: string[];
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  description?: string;
  states: Record<string, NodeLike>;
  transitions: Map<string, TransitionLike[]>;
  always?: TransitionLike[];
  initial?: { target: NodeLike[] };
  entry: unknown[];
  exit: unknown[];
  invoke: Array<{ id: string; src: unknown }>;
}

interface TransitionLike {
  eventType: string;
  target?: readonly NodeLike[];
  guard?: unknown;
  actions: readonly unknown[];
  reenter?: boolean;
}

/** One transition of a machine, flattened: the unit of diagrams and of transition coverage. */
export interface TransitionInfo {
  /** `source.id|event|index` — stable while the machine's definition does not change. */
  key: string;
  source: string;
  /** Absolute state ids; empty for a targetless transition (actions only). */
  targets: string[];
  /** The event type, or `always` for an eventless transition. */
  event: string;
  guard?: string;
  actions: string[];
}

function nameOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'function') {
    const fn = value as { type?: unknown; name?: string };
    if (typeof fn.type === 'string') return fn.type;
    return fn.name || 'inline';
  }
  if (typeof value === 'object' && typeof (value as { type?: unknown }).type === 'string') {
    return (value as { type: string }).type;
  }
  return 'inline';
}

/**
 * A guard's text: a named guard by its name, a composite one by its parts (`a ∧ b`, `a ∨ b`, `¬a`; nested ones in
 * parentheses), so that a diagram says what `and([...])` checks instead of `and`.
 */
function guardText(value: unknown, nested = false): string | undefined {
  const composite = value as { name?: string; guards?: unknown };
  if (typeof value === 'function' && Array.isArray(composite.guards)) {
    const parts = composite.guards.map((guard: unknown) => guardText(guard, true) ?? 'inline');
    if (composite.name === 'not') return `¬${parts[0]}`;
    const text = parts.join(composite.name === 'or' ? ' ∨ ' : ' ∧ ');
    return nested && parts.length > 1 ? `(${text})` : text;
  }
  return nameOf(value);
}

function rootOf(machine: AnyStateMachine): NodeLike {
  return machine.root as unknown as NodeLike;
}

function children(node: NodeLike): NodeLike[] {
  return Object.values(node.states ?? {});
}

/** Every state node below the root, depth first in definition order. */
export function stateIds(machine: AnyStateMachine): string[] {
  const out: string[] = [];
  const walk = (node: NodeLike) => {
    for (const child of children(node)) {
      out.push(child.id);
      walk(child);
    }
  };
  walk(rootOf(machine));
  return out;
}

/** A state that says what it does: its description and entry actions, for a reader of the generated docs. */
export interface DescribedState {
  id: string;
  description: string;
  entry: string[];
}

/** Every state with a `description`, depth first, with its entry actions by name. */
export function describedStates(machine: AnyStateMachine): DescribedState[] {
  const out: DescribedState[] = [];
  const walk = (node: NodeLike) => {
    for (const child of children(node)) {
      if (child.description) {
        out.push({
          id: child.id,
          description: child.description,
          // The timer of a delayed transition (`xstate.raise`) is drawn as its edge, not as an entry action.
          entry: child.entry.map((a) => nameOf(a) ?? 'inline').filter((name) => name !== 'xstate.raise'),
        });
      }
      walk(child);
    }
  };
  walk(rootOf(machine));
  return out;
}

function transitionsOf(node: NodeLike): TransitionLike[] {
  return [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
}

/**
 * Visits every transition of the machine, depth first, with its key: `<source id>|<event>|<index>`, the index
 * counting the guarded branches of one event on one state node.
 */
function eachTransition(
  machine: AnyStateMachine,
  visit: (t: ReturnType<typeof transitionsOf>[number], node: NodeLike, event: string, key: string) => void,
): void {
  const walk = (node: NodeLike) => {
    const counters = new Map<string, number>();
    for (const t of transitionsOf(node)) {
      const event = t.eventType === '' || t.eventType === undefined ? 'always' : t.eventType;
      const index = counters.get(event) ?? 0;
      counters.set(event, index + 1);
      visit(t, node, event, `${node.id}|${event}|${index}`);
    }
    for (const child of children(node)) walk(child);
  };
  walk(rootOf(machine));
}

/** Every transition of the machine, each guarded branch on its own. */
export function transitionList(machine: AnyStateMachine): TransitionInfo[] {
  const out: TransitionInfo[] = [];
  eachTransition(machine, (t, node, event, key) => {
    const guard = guardText(t.guard);
    out.push({
      key,
      source: node.id,
      targets: (t.target ?? []).map((target) => target.id),
      event,
      ...(guard === undefined ? {} : { guard }),
      actions: t.actions.map((a) => nameOf(a) ?? 'inline'),
    });
  });
  return out;
}

/**
 * Maps XState's transition objects of this machine to their {@link TransitionInfo} keys, so a test can tell which
 * transitions a run took from `@xstate.microstep` inspection events.
 */
export function transitionKeys(machine: AnyStateMachine): Map<unknown, string> {
  const keys = new Map<unknown, string>();
  eachTransition(machine, (t, _node, _event, key) => keys.set(t, key));
  return keys;
}

function mermaidId(id: string): string {
  return id.replace(/[^A-Za-z0-9_]/g, '_');
}

/** `EVENT [guard] / action, action`: what a transition waits for, checks and does, as UML writes it. */
export function transitionLabel(t: Pick<TransitionInfo, 'event' | 'guard' | 'actions'>): string {
  const guarded = t.guard ? `${t.event} [${t.guard}]` : t.event;
  return t.actions.length ? `${guarded} / ${t.actions.join(', ')}` : guarded;
}

function label(t: TransitionInfo): string {
  return transitionLabel(t).replace(/[:;]/g, ' ');
}

/**
 * The machine as a Mermaid `stateDiagram-v2`: nested states, initial states, every transition with its guard and its
 * actions.
 */
export function toMermaid(machine: AnyStateMachine): string {
  const root = rootOf(machine);
  const lines = ['stateDiagram-v2'];
  const declare = (node: NodeLike, indent: string) => {
    const initial = node.initial?.target ?? [];
    for (const target of initial) lines.push(`${indent}[*] --> ${mermaidId(target.id)}`);
    for (const child of children(node)) {
      const id = mermaidId(child.id);
      if (child.type === 'compound' || child.type === 'parallel') {
        lines.push(`${indent}state "${child.key}" as ${id} {`);
        declare(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        lines.push(`${indent}state "${child.key}" as ${id}`);
        if (child.type === 'final') lines.push(`${indent}${id} --> [*]`);
      }
    }
  };
  declare(root, '  ');
  const topLevel = children(root).map((child) => child.id);
  for (const t of transitionList(machine)) {
    // The root's own transitions apply in every state: drawn from each top-level state (targetless ones are not).
    if (t.source === root.id && t.targets.length === 0) continue;
    const sources = t.source === root.id ? topLevel : [t.source];
    const targets = t.targets.length ? t.targets : [t.source];
    for (const source of sources) {
      for (const target of targets) {
        if (t.source === root.id && source === target) continue;
        lines.push(`  ${mermaidId(source)} --> ${mermaidId(target)}: ${label(t)}`);
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

type StudioTransition = { target?: string[]; guard?: string; actions?: string[]; reenter?: boolean };

function studioTransition(t: TransitionLike): StudioTransition {
  const out: StudioTransition = {};
  if (t.target?.length) out.target = t.target.map((target) => `#${target.id}`);
  const guard = guardText(t.guard);
  if (guard !== undefined) out.guard = guard;
  if (t.actions.length) out.actions = t.actions.map((a) => nameOf(a) ?? 'inline');
  if (t.reenter) out.reenter = true;
  return out;
}

function studioNode(node: NodeLike, isRoot: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (isRoot) out.id = node.id;
  if (node.type === 'parallel' || node.type === 'final' || node.type === 'history') out.type = node.type;
  if (node.description) out.description = node.description;
  const initial = node.initial?.target ?? [];
  if (initial.length && node.type === 'compound') out.initial = initial.map((t) => t.key)[0];
  const entry = node.entry.map((a) => nameOf(a) ?? 'inline');
  const exit = node.exit.map((a) => nameOf(a) ?? 'inline');
  if (entry.length) out.entry = entry;
  if (exit.length) out.exit = exit;
  if (node.invoke.length) out.invoke = node.invoke.map((i) => ({ id: i.id, src: nameOf(i.src) ?? 'inline' }));
  if (node.always?.length) out.always = node.always.map(studioTransition);
  const on: Record<string, StudioTransition[]> = {};
  for (const [event, list] of node.transitions) on[event] = list.map(studioTransition);
  if (Object.keys(on).length) out.on = on;
  const states = children(node);
  if (states.length) out.states = Object.fromEntries(states.map((child) => [child.key, studioNode(child, false)]));
  return out;
}

/**
 * The machine as a plain JSON config (ids for targets, names for guards, actions and actors): paste it into
 * Stately Studio's import, or diff it in review. Named `toStudioJSON` rather than `toJSON` so that a module
 * namespace holding it is not mistaken for something with a `toJSON` method.
 */
export function toStudioJSON(machine: AnyStateMachine): Record<string, unknown> {
  return studioNode(rootOf(machine), true);
}
