/**
 * The workloads `npm run bench` runs, in table order. A workload is one file under `bench/workloads/`; register it
 * here with one line (its id must be unique). Rows of an existing workload are entries of its `impls`.
 */
import type { ImplId, Workload, WorkloadId } from './workload.js';
import { W1 } from './workloads/w1.js';
import { W2 } from './workloads/w2.js';
import { W3 } from './workloads/w3.js';
import { W4 } from './workloads/w4.js';
import { W5 } from './workloads/w5.js';
import { W6 } from './workloads/w6.js';
import { W7 } from './workloads/w7.js';

// biome-ignore lint/suspicious/noExplicitAny: the registry holds workloads of different sizes.
export const WORKLOADS: Record<WorkloadId, Workload<any>> = {};
// biome-ignore lint/suspicious/noExplicitAny: as above.
function register(workload: Workload<any>): void {
  if (WORKLOADS[workload.id]) throw new Error(`two workloads are registered as ${workload.id}`);
  WORKLOADS[workload.id] = workload;
}

register(W1);
register(W2);
register(W3);
register(W4);
register(W5);
register(W6);
register(W7);

/** The implementations of a workload, in table order (the order of its `impls`). */
export function implsOf(workload: Workload): ImplId[] {
  return Object.keys(workload.impls);
}
