/**
 * Where a CPU profile's time went: `npx tsx bench/profile.ts <file.cpuprofile> [--top N]`. Self time by function,
 * and by group (XState's internals, the supervisor and agent machines, Troupe's runtime, the benchmark's own code,
 * GC, Node itself), in ms and as a share of the profile's busy time (idle excluded). Profiles come from
 * `node --cpu-prof` on a bench child (see bench/child.ts).
 */
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The groups, first match wins; the order puts the specific before the general. */
const GROUPS: [string, (name: string, url: string) => boolean][] = [
  ['idle', (name) => name === '(idle)'],
  ['GC', (name) => name === '(garbage collector)'],
  ['XState', (_, url) => /[\\/]xstate[\\/]dist[\\/]/.test(url)],
  ['supervisor machine', (_, url) => /[\\/]machines[\\/]supervisor/.test(url)],
  ['agent machine', (_, url) => /[\\/]machines[\\/]agent[\\/]/.test(url)],
  ['runtime: supervisor', (_, url) => /[\\/]src[\\/]runtime[\\/](tree[\\/]|supervisor\.ts)/.test(url)],
  ['runtime: composition (agent/wiring.ts)', (_, url) => /[\\/]src[\\/]runtime[\\/]agent[\\/]wiring\.ts/.test(url)],
  ['runtime: agent', (_, url) => /[\\/]src[\\/]runtime[\\/]/.test(url)],
  ['protocol, tools, providers', (_, url) => /[\\/]src[\\/](protocol|tools|providers)[\\/]/.test(url)],
  ['zod', (_, url) => /[\\/]zod[\\/]/.test(url)],
  ['bench', (_, url) => /[\\/]bench[\\/]/.test(url)],
  ['other packages', (_, url) => /node_modules/.test(url)],
  ['node internals', (_, url) => url.startsWith('node:') || url === ''],
  ['other', () => true],
];

function groupOf(name: string, url: string): string {
  for (const [group, matches] of GROUPS) if (matches(name, url)) return group;
  return 'other';
}

const [file] = process.argv.slice(2);
if (!file) throw new Error('usage: tsx bench/profile.ts <file.cpuprofile> [--top N]');
const topAt = process.argv.indexOf('--top');
const top = topAt >= 0 ? Number(process.argv[topAt + 1]) : 40;
const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, index) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
});

const byFunction = new Map<string, { us: number; group: string }>();
const byGroup = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  const group = groupOf(name, url);
  const where = url ? `${url.replace(/^.*[\\/](node_modules|bench|src|machines)[\\/]/, '$1/')}:${lineNumber + 1}` : '';
  const key = `${name} ${where}`.trim();
  const entry = byFunction.get(key) ?? { us: 0, group };
  entry.us += us;
  byFunction.set(key, entry);
  byGroup.set(group, (byGroup.get(group) ?? 0) + us);
}

const busy = [...byGroup].filter(([group]) => group !== 'idle').reduce((sum, [, us]) => sum + us, 0);
const ms = (us: number) => (us / 1000).toFixed(1).padStart(9);
const share = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
process.stdout.write(`busy ${ms(busy)} ms (idle ${ms(byGroup.get('idle') ?? 0).trim()} ms)\n\nby group\n`);
for (const [group, us] of [...byGroup].sort((a, b) => b[1] - a[1])) {
  if (group !== 'idle') process.stdout.write(`${ms(us)} ms ${share(us)}  ${group}\n`);
}
process.stdout.write(`\nby function (top ${top}, self time)\n`);
const functions = [...byFunction].filter(([, entry]) => entry.group !== 'idle').sort((a, b) => b[1].us - a[1].us);
for (const [key, entry] of functions.slice(0, top)) {
  process.stdout.write(`${ms(entry.us)} ms ${share(entry.us)}  [${entry.group}] ${key}\n`);
}
