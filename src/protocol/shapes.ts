/**
 * One object of each kind the hot path handles, kept for the process's life. V8 holds a hidden class (a map) only
 * from the objects that have it (the transition that made it is weak), so a full collection with none of a kind
 * alive (between two swarms, a server between requests) frees its maps and throws away the optimised code of every
 * function that checks for them: each runs unoptimised again until it warms up. A kept specimen keeps its maps.
 */
const specimens: object[] = [];

/** Keeps `specimen` alive for the process's life (see above). */
export function keepShape(specimen: object): void {
  specimens.push(specimen);
}

const toTake: (() => void)[] = [];

/**
 * Specimens made by running real agents, taken when the process makes its first agent or supervisor rather than when
 * the runtime loads: importing Troupe runs nothing, and what a turn reads once and keeps (the environment's secrets)
 * is read when the program's own first agent would read it, after the program has set its environment up.
 */
export function specimensToTake(take: () => void): void {
  toTake.push(take);
}

/** Takes the pending specimens, once: every agent and supervisor calls it as it is made. */
export function takeSpecimens(): void {
  if (toTake.length === 0) return;
  for (const take of toTake.splice(0)) take();
}
