import type { AnyStateMachine, EventObject, Snapshot } from 'xstate';
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph';

export interface Step<S, E> {
  state: S;
  event: E;
}
export interface Path<S, E> {
  state: S;
  /** The first step is `xstate.init`; every later one is an event and the state after it. */
  steps: Step<S, E>[];
}

/**
 * Paths covering every transition of the machine's abstract graph (as `serializeState` sees it): the shortest
 * path to each source state (xstate/graph's getShortestPaths), then the transition. A path that is a prefix of
 * another is dropped.
 */
export function coveringPaths<S extends Snapshot<unknown>, E extends EventObject>(
  machine: AnyStateMachine,
  options: { input: unknown; events: (state: S) => E[]; serializeState: (state: S) => string },
): { states: number; edges: number; paths: Path<S, E>[] } {
  const traversal = {
    input: options.input,
    events: options.events as never,
    serializeState: options.serializeState as never,
  };
  const adjacency = getAdjacencyMap(machine, traversal);
  const shortest = getShortestPaths(machine, traversal) as unknown as Path<S, E>[];
  const pathTo = new Map(shortest.map((p) => [options.serializeState(p.state), p]));
  const paths: Path<S, E>[] = [];
  let edges = 0;
  for (const [source, { transitions }] of Object.entries(adjacency)) {
    const head = pathTo.get(source);
    if (!head) throw new Error(`unreachable source ${source}`);
    for (const { event, state } of Object.values(transitions) as Array<{ event: unknown; state: unknown }>) {
      edges++;
      paths.push({ state: state as S, steps: [...head.steps, { state: state as S, event: event as E }] });
    }
  }
  // Sorted, a prefix sits right before its extensions ('\n' sorts before every character JSON puts in an event).
  const signed = paths
    .map((p) => ({ p, sig: p.steps.map((s) => JSON.stringify(s.event)).join('\n') }))
    .sort((a, b) => (a.sig < b.sig ? -1 : a.sig > b.sig ? 1 : 0));
  const kept = signed
    .filter(({ sig }, i) => {
      const next = signed[i + 1]?.sig;
      return next === undefined || (next !== sig && !next.startsWith(`${sig}\n`));
    })
    .map(({ p }) => p);
  return { states: Object.keys(adjacency).length, edges, paths: kept };
}
