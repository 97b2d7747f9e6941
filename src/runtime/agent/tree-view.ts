import type { AnyActorRef } from 'xstate';
import type { Usage } from '../../protocol/index.js';
import { stateString } from './state.js';

/** A node of the live tree, for printing and inspectors. */
export interface TreeView {
  id: string;
  kind: 'supervisor' | 'agent';
  /** The state path, e.g. `idle`, `busy`, `running.turn.step.tools.executing`. */
  state: string;
  usage?: Usage;
  children: TreeView[];
}

/** Describes a subtree of actors (an agent's `actor`, or a supervisor's) with its states. */
export function describeTree(
  ref: AnyActorRef,
  id: string,
  usageOf: (agentId: string) => Usage | undefined = () => undefined,
): TreeView {
  const snapshot = ref.getSnapshot() as { value?: unknown; children?: Record<string, AnyActorRef | undefined> };
  const isSupervisor = ref.id === 'supervisor' || ref.getSnapshot().machine?.id === 'supervisor';
  const view: TreeView = {
    id,
    kind: isSupervisor ? 'supervisor' : 'agent',
    state: stateString(snapshot.value),
    children: [],
  };
  if (!isSupervisor) {
    const usage = usageOf(id);
    if (usage) view.usage = usage;
  }
  addChildren(view, snapshot.children, id, usageOf);
  return view;
}

/** Agents and supervisors under an actor; batches, pools and tasks are passed through (the view shows agents). */
function addChildren(
  view: TreeView,
  children: Record<string, AnyActorRef | undefined> | undefined,
  id: string,
  usageOf: (agentId: string) => Usage | undefined,
): void {
  for (const [key, child] of Object.entries(children ?? {})) {
    if (child?.getSnapshot().status !== 'active') continue;
    if (key === 'supervisor') view.children.push(describeTree(child, `${id}/supervisor`, usageOf));
    else if (key.startsWith('subagent.')) view.children.push(describeTree(child, key.slice(9), usageOf));
    else if (/^(batch|pool|task)\./.test(key)) {
      const inner = child.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> };
      addChildren(view, inner.children, id, usageOf);
    }
  }
}
