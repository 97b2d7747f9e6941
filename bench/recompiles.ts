/**
 * Which functions full collections make V8 compile again: W1's loop (`npm run bench`'s troupe row, from src/), or
 * with `w3` a swarm of 200 subagents (W3's shape, no latency), `WARMUP` runs and then `RUNS` more, in two processes
 * under `--trace-opt --print-opt-source`: one with a forced collection before each of the last runs, one without
 * (the control). Every optimisation the first makes beyond the control's is one the collections caused; they are
 * listed by function and summed by owner (Troupe, XState, zod, Node). Whole processes are compared, not runs:
 * V8 prints its traces through a buffer that a marker written between two runs would not keep in order.
 *
 *   node --import tsx bench/recompiles.ts [w3]     (--json: the extra optimisations by function, as JSON)
 *
 * V8 keeps a function's optimised code only while one of its function objects lives, and a hidden class only while
 * an object with it lives: a closure made per call or per agent, or a kind of object with no specimen kept, is
 * compiled again after every collection that finds none alive. Ours should be near zero; XState's per-call arrows
 * (microstep's `t => t.actions`, the entry and exit sorts, the snapshot's `sn => sn.tags`) are its floor.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const WARMUP = 40;
const RUNS = 16;
const STEPS = 200;
const WORKLOAD = process.argv.includes('w3') ? 'w3' : 'w1';

type Counts = Map<string, number>;

if (process.argv.includes('--child')) await child(process.argv.includes('--collect'));
else {
  const collected = optimisations(true);
  const control = optimisations(false);
  const extra: [string, number][] = [];
  for (const [where, n] of collected) {
    const more = n - (control.get(where) ?? 0);
    if (more > 0) extra.push([where, more]);
  }
  extra.sort((a, b) => b[1] - a[1]);
  if (process.argv.includes('--json')) {
    // For test/agent/collection.test.ts.
    process.stdout.write(`${JSON.stringify(Object.fromEntries(extra))}\n`);
  } else report(collected, control, extra);
}

function report(collected: Counts, control: Counts, extra: [string, number][]): void {
  const byOwner = (rows: Iterable<[string, number]>) => {
    const owners = new Map<string, number>();
    for (const [where, n] of rows) owners.set(ownerOf(where), (owners.get(ownerOf(where)) ?? 0) + n);
    return owners;
  };
  const [all, base, more] = [byOwner(collected), byOwner(control), byOwner(extra)];
  console.log(`${WORKLOAD.toUpperCase()}: ${WARMUP} runs, then ${RUNS} with a full collection before each or not.`);
  console.log('Optimisations in the whole process, by owner:\n');
  console.log('  with collections | without | the collections’ own');
  for (const owner of new Set([...all.keys(), ...base.keys()])) {
    const cells = [all.get(owner) ?? 0, base.get(owner) ?? 0, more.get(owner) ?? 0].map((n) => String(n).padStart(5));
    console.log(`${cells[0]}   ${cells[1]}   ${cells[2]}   ${owner}`);
  }
  console.log('\nThe collections’ own, by function (file:name @ source offset):\n');
  for (const [where, n] of extra) console.log(`${String(n).padStart(5)}  ${where}`);
}

async function child(collect: boolean): Promise<void> {
  const { createAgent, createSupervisor } = await import('../src/index.js');
  const { echoTool, swarmModel, toolLoopModel, ToolCounter } = await import('./fixtures.js');
  const tools = [echoTool(new ToolCounter())];
  const run =
    WORKLOAD === 'w1'
      ? async () => {
          const agent = createAgent({ model: toolLoopModel(STEPS), tools, maxSteps: STEPS + 1 });
          await agent.prompt('go');
          await agent.stop();
        }
      : async () => {
          const model = swarmModel({ toolSteps: 3, latencyMs: 0 });
          const supervisor = createSupervisor({ model, tools, concurrency: 100, maxRestarts: 0 });
          await supervisor.swarm(Array.from({ length: 200 }, (_, n) => `task ${n}`));
          await supervisor.stop();
        };
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the child with --expose-gc');
  for (let i = 0; i < WARMUP; i++) await run();
  for (let i = 0; i < RUNS; i++) {
    if (collect) gc();
    await run();
  }
}

/** Every optimisation of one child process, by function. */
function optimisations(collect: boolean): Counts {
  const args = ['--expose-gc', '--trace-opt', '--print-opt-source', '--import', 'tsx', fileURLToPath(import.meta.url)];
  const out = spawnSync(process.execPath, [...args, WORKLOAD, '--child', ...(collect ? ['--collect'] : [])], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    env: childEnv(),
  });
  if (out.status !== 0) throw new Error(`the child failed: ${out.stderr}`);
  const counts: Counts = new Map();
  for (const line of out.stdout.split('\n')) {
    const source = /^--- FUNCTION SOURCE \((.*)\) id\{\d+,-1\} start\{(\d+)\} ---$/.exec(line);
    if (!source) continue;
    const [, where = '', start = ''] = source;
    const file = where
      .replace(/^file:\/\//, '')
      .replace(`${process.cwd()}/`, '')
      .replace(/^.*node_modules\//, '');
    const key = `${file} @${start}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Production mode, and no NODE_V8_COVERAGE from a coverage run: precise coverage changes what V8 optimises. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production' };
  delete env.NODE_V8_COVERAGE;
  return env;
}

function ownerOf(key: string): string {
  if (key.startsWith('src/') || key.startsWith('machines/')) return 'Troupe (src/, machines/)';
  if (key.startsWith('bench/')) return "the bench's fixtures";
  if (key.startsWith('xstate/')) return 'XState';
  if (key.startsWith('zod/')) return 'zod';
  if (key.startsWith('node:')) return 'Node';
  return 'other';
}
