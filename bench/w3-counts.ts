/**
 * What one W3 subagent costs, in counts rather than time (they do not move with the load of a shared machine):
 *
 *   node --expose-gc --import tsx bench/w3-counts.ts [agents] [--alloc]
 *
 * Runs W3's swarm (`troupeSwarm` of workloads/w3.ts: 3 tool steps and an answer each, model latency 5 ms,
 * concurrency 100) once to warm up, then once measured, and prints per subagent: actors created, events received and
 * microsteps taken by each kind of actor (from XState's inspect option), the snapshots XState made (each microstep,
 * `assign`, spawn and stop makes one), and the journal records a JSONL session writes. `--alloc` adds V8's sampling heap profile of the measured run (every
 * object, those a collection freed included): bytes allocated per subagent, by group and by function.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import Module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InspectionEvent } from 'xstate';

// Every snapshot XState makes goes through `createMachineSnapshot` (a clone too): counted by a line added to its
// source as the module loads, before anything imports XState.
const made = { snapshots: 0 };
(globalThis as { __snapshotsMade?: typeof made }).__snapshotsMade = made;
const compile = (Module.prototype as unknown as { _compile: (source: string, file: string) => unknown })._compile;
(Module.prototype as unknown as { _compile: (source: string, file: string) => unknown })._compile = function (
  this: unknown,
  source: string,
  file: string,
) {
  const counted = /xstate[\\/]dist[\\/]raise-[^\\/]*\.cjs\.js$/.test(file)
    ? source.replace('function createMachineSnapshot(config, machine) {', '$& globalThis.__snapshotsMade.snapshots++;')
    : source;
  return compile.call(this, counted, file);
};
const { troupe } = await import('./impls.js');
const { troupeSwarm } = await import('./workloads/w3.js');

const args = process.argv.slice(2);
const agents = Number(args.find((arg) => !arg.startsWith('--')) ?? 500);
const size = { agents, toolSteps: 3, latencyMs: 5, concurrency: 100 };

/** An actor's kind: its machine's id, or its id among its parent's children for other logic (the worker). */
function kindOf(ref: { id: string; logic?: unknown }): string {
  const logic = ref.logic as { id?: string; config?: unknown } | undefined;
  if (logic?.config && logic.id) return logic.id;
  return ref.id.replace(/\.\d+$/, '.<n>').replace(/^subagent\..*$/, 'subagent');
}

class Counts {
  readonly actors = new Map<string, number>();
  readonly events = new Map<string, number>();
  readonly microsteps = new Map<string, number>();
  readonly eventTypes = new Map<string, number>();
  on = false;
  private add(map: Map<string, number>, key: string) {
    map.set(key, (map.get(key) ?? 0) + 1);
  }
  readonly inspect = (event: InspectionEvent): void => {
    if (!this.on) return;
    const kind = kindOf(event.actorRef as never);
    if (event.type === '@xstate.actor') this.add(this.actors, kind);
    else if (event.type === '@xstate.event') {
      this.add(this.events, kind);
      this.add(this.eventTypes, `${kind} ← ${event.event.type.replace(/\.(task|pool|subagent)\..*$/, '.$1.*')}`);
    } else if (event.type === '@xstate.microstep') this.add(this.microsteps, kind);
  };
}

const per = (n: number) => (n / agents).toFixed(2).padStart(7);
function table(title: string, map: Map<string, number>) {
  const total = [...map.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(`\n${title} per subagent: ${per(total).trim()}\n`);
  for (const [key, n] of [...map].sort((a, b) => b[1] - a[1])) process.stdout.write(`${per(n)}  ${key}\n`);
}

const warm = new Counts();
await troupeSwarm(size, { inspect: warm.inspect });
const counts = new Counts();
counts.on = true;
global.gc?.();
const profiler = args.includes('--alloc') ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
}
const before = made.snapshots;
await troupeSwarm(size, { inspect: counts.inspect });
const snapshots = made.snapshots - before;
counts.on = false;
table('actors created', counts.actors);
table('events received', counts.events);
table('microsteps', counts.microsteps);
table('events by type', counts.eventTypes);
process.stdout.write(`\nsnapshots made per subagent: ${per(snapshots).trim()}\n`);

if (profiler) {
  const { profile } = (await profiler.post('HeapProfiler.stopSampling')) as unknown as {
    profile: { head: AllocNode };
  };
  profiler.disconnect();
  const byFunction = new Map<string, number>();
  const byGroup = new Map<string, number>();
  const walk = (node: AllocNode) => {
    const bytes = node.selfSize;
    const { functionName, url, lineNumber } = node.callFrame;
    const group = /xstate[\\/]dist/.test(url)
      ? 'XState'
      : /[\\/]machines[\\/]/.test(url)
        ? 'machines'
        : /[\\/]src[\\/]runtime[\\/]/.test(url)
          ? 'runtime'
          : /[\\/]src[\\/]/.test(url)
            ? 'protocol, tools, providers'
            : /[\\/]bench[\\/]/.test(url)
              ? 'bench'
              : 'node and others';
    const key = `${functionName || '(anonymous)'} ${url.replace(/^.*[\\/](xstate[\\/]dist|src|machines|bench)[\\/]/, '$1/')}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + bytes);
    byGroup.set(group, (byGroup.get(group) ?? 0) + bytes);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const total = [...byGroup.values()].reduce((a, b) => a + b, 0);
  const kb = (bytes: number) => `${(bytes / agents / 1024).toFixed(1).padStart(7)} KB`;
  process.stdout.write(`\nallocated per subagent (sampled): ${kb(total).trim()}\n`);
  for (const [group, bytes] of [...byGroup].sort((a, b) => b[1] - a[1]))
    process.stdout.write(`${kb(bytes)}  ${group}\n`);
  process.stdout.write('\nby function (top 25)\n');
  for (const [key, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25))
    process.stdout.write(`${kb(bytes)}  ${key}\n`);
}

// The journal: what a JSONL session records for the same swarm.
const { sessions } = await troupe();
const dir = mkdtempSync(join(tmpdir(), 'troupe-counts-'));
try {
  const session = sessions({ dir }).create();
  await troupeSwarm(size, { session });
  const stats = session.stats;
  process.stdout.write(`\njournal records per subagent: ${per(stats?.records ?? 0).trim()}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

interface AllocNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocNode[];
}
