import { Session } from 'node:inspector/promises';

interface AllocNode {
  callFrame: { url: string };
  selfSize: number;
  children: AllocNode[];
}

/**
 * Who allocated: XState, Troupe (its src/ and machines/), the benchmark's own code (the rows' machines and
 * workers), or Node (promises, timers).
 */
function groupOf(url: string): 'xstate' | 'troupe' | 'bench' | 'node' {
  if (/[\\/]xstate[\\/]dist[\\/]/.test(url)) return 'xstate';
  if (/[\\/](src|machines)[\\/]/.test(url) && !/node_modules/.test(url)) return 'troupe';
  if (/[\\/]bench[\\/]/.test(url)) return 'bench';
  return 'node';
}

/**
 * Bytes `work` allocates, by group: V8's sampling heap profiler, every object counted, those a collection freed
 * included (as bench/w3-counts.ts `--alloc` does).
 */
export async function allocated(work: () => Promise<unknown>): Promise<Record<ReturnType<typeof groupOf>, number>> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
  await work();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: AllocNode } };
  session.disconnect();
  const bytes = { xstate: 0, troupe: 0, bench: 0, node: 0 };
  // A builtin (no url: Array.prototype.map, a spread) allocates for the code that called it.
  const walk = (node: AllocNode, caller: ReturnType<typeof groupOf>) => {
    const group = node.callFrame.url === '' ? caller : groupOf(node.callFrame.url);
    bytes[group] += node.selfSize;
    for (const child of node.children) walk(child, group);
  };
  walk(profile.head, 'node');
  return bytes;
}
