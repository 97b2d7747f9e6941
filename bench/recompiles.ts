/**
 * Which functions a full collection makes V8 compile again: W1's loop (`npm run bench`'s troupe row, from src/),
 * or with `w3` a swarm of 200 subagents (W3's shape, no latency), warmed up, then run `RUNS` times with a forced collection before each, under `--trace-opt --print-opt-source`,
 * beside the same runs without the collections (the control: what the JIT still compiles as it warms up). The
 * optimisations of the measured runs are listed by function and summed by owner (Troupe, XState, zod, Node):
 *
 *   node --import tsx bench/recompiles.ts [w3]     (--json: the collected runs' counts by function, as JSON)
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
const MARK = '@@measured run';
const WORKLOAD = process.argv.includes('w3') ? 'w3' : 'w1';

if (process.argv.includes('--child')) await child(process.argv.includes('--collect'));
else if (process.argv.includes('--json')) {
  // For test/agent/collection.test.ts: the collected runs' optimisations by function.
  process.stdout.write(`${JSON.stringify(Object.fromEntries(recompiled(true).rows))}\n`);
} else {
  const collected = recompiled(true);
  const control = recompiled(false);
  console.log(`Optimisations in ${RUNS} runs of ${WORKLOAD.toUpperCase()} after ${WARMUP} warm-up runs, by owner:\n`);
  console.log('  with a full collection before each run | without (control)');
  for (const owner of new Set([...collected.owners.keys(), ...control.owners.keys()])) {
    const n = collected.owners.get(owner) ?? 0;
    console.log(`${String(n).padStart(5)}  ${owner.padEnd(34)}| ${control.owners.get(owner) ?? 0}`);
  }
  console.log('\nWith the collections, by function (file:name @ source offset):\n');
  for (const [key, n] of collected.rows) console.log(`${String(n).padStart(5)}  ${key}`);
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
    process.stdout.write(`${MARK}\n`);
    await run();
  }
}

function recompiled(collect: boolean): { owners: Map<string, number>; rows: [string, number][] } {
  const args = ['--expose-gc', '--trace-opt', '--print-opt-source', '--import', 'tsx', fileURLToPath(import.meta.url)];
  const out = spawnSync(process.execPath, [...args, WORKLOAD, '--child', ...(collect ? ['--collect'] : [])], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    env: childEnv(),
  });
  if (out.status !== 0) throw new Error(`the child failed: ${out.stderr}`);
  const lines = out.stdout.split('\n');
  const counts = new Map<string, number>();
  for (const line of lines.slice(lines.indexOf(MARK))) {
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
  const rows = [...counts].sort((a, b) => b[1] - a[1]);
  const owners = new Map<string, number>();
  for (const [key, n] of rows) owners.set(ownerOf(key), (owners.get(ownerOf(key)) ?? 0) + n);
  return { owners, rows };
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
