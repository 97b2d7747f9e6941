import type { ExecutionMode } from './define-tool.js';

/**
 * Splits a batch into the groups that run one after another: consecutive parallel-safe calls run together,
 * a sequential call runs alone. Order inside and across groups is the call order.
 */
export function groupCalls<T>(calls: readonly T[], modeOf: (call: T) => ExecutionMode): T[][] {
  const groups: T[][] = [];
  let open: T[] | undefined;
  for (const call of calls) {
    if (modeOf(call) === 'sequential') {
      groups.push([call]);
      open = undefined;
    } else if (open) {
      open.push(call);
    } else {
      open = [call];
      groups.push(open);
    }
  }
  return groups;
}
