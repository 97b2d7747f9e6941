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
