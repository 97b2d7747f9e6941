/**
 * What a full collection costs plain XState (no Troupe code): a machine and a long-lived `fromCallback` worker that
 * answer each other `ROUNDS` times, the shape of an agent's step, timed per round trip in three modes, each in its
 * own process, alternated:
 *
 *   node --expose-gc bench/xstate-gc.ts [repeats]      (or `--import tsx` on Node 20)
 *
 * - `none`: no collection between runs;
 * - `gc`: a full collection before each run, as `npm run bench` and the peer harness do;
 * - `gc+kept`: the same, with the previous run's actor kept referenced.
 *
 * `gc` ÷ `none` is XState's own cliff. `gc+kept` shows its cause: XState builds its actor system and each actor's
 * scope out of closures (`system._relay`, `actorScope.defer`, a callback actor's `sendBack`); V8 keeps optimised
 * code only while a function object that runs it lives, so a collection with no actor alive drops the code of every
 * per-actor closure and the next run warms it up again. Keeping one used actor alive keeps it.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { assign, createActor, fromCallback, sendTo, setup } from 'xstate';

const ROUNDS = 200;
const RUNS = 40;
const WARMUP = 10;
const MODES = ['none', 'gc', 'gc+kept'] as const;
type Mode = (typeof MODES)[number];

const worker = fromCallback<{ type: 'REQUEST'; n: number }>(({ receive, sendBack }) => {
  receive((request) => sendBack({ type: 'REPLY', n: request.n }));
});

const machine = setup({
  types: { context: {} as { n: number }, events: {} as { type: 'GO' } | { type: 'REPLY'; n: number } },
  actors: { worker },
  guards: { more: ({ context }) => context.n < ROUNDS },
  actions: {
    ask: sendTo('worker', ({ context }) => ({ type: 'REQUEST' as const, n: context.n })),
    count: assign({ n: ({ context }) => context.n + 1 }),
  },
}).createMachine({
  context: { n: 0 },
  invoke: { id: 'worker', src: 'worker' },
  initial: 'idle',
  states: {
    idle: { on: { GO: { target: 'waiting', actions: 'ask' } } },
    waiting: {
      on: {
        REPLY: [
          { guard: 'more', target: 'waiting', reenter: true, actions: ['count', 'ask'] },
          { target: 'done', actions: 'count' },
        ],
      },
    },
    done: { type: 'final' },
  },
});

let kept: unknown;

/** One run: a fresh actor, `ROUNDS` round trips, stopped; CPU µs per round trip. */
function run(mode: Mode): number {
  if (mode !== 'none') (globalThis as { gc?: () => void }).gc?.();
  const cpu = process.cpuUsage();
  const actor = createActor(machine).start();
  actor.send({ type: 'GO' });
  if (actor.getSnapshot().status !== 'done') throw new Error('the round trips did not finish synchronously');
  actor.stop();
  const used = process.cpuUsage(cpu);
  if (mode === 'gc+kept') kept = actor;
  return (used.user + used.system) / ROUNDS;
}

function medianOf(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
}

const [modeArg] = process.argv.slice(2);
if (MODES.includes(modeArg as Mode)) {
  const mode = modeArg as Mode;
  for (let i = 0; i < WARMUP; i++) run(mode);
  const figures = Array.from({ length: RUNS }, () => run(mode));
  process.stdout.write(`${medianOf(figures)}\n`);
  void kept;
} else {
  const repeats = Number(modeArg ?? 3);
  const results = new Map<Mode, number[]>(MODES.map((mode) => [mode, []]));
  const self = fileURLToPath(import.meta.url);
  for (let r = 0; r < repeats; r++) {
    for (const mode of MODES) {
      const out = execFileSync(process.execPath, [...process.execArgv, self, mode], { encoding: 'utf8' });
      results.get(mode)?.push(Number(out.trim()));
    }
  }
  const none = medianOf(results.get('none') ?? []);
  for (const mode of MODES) {
    const m = medianOf(results.get(mode) ?? []);
    process.stdout.write(`${mode.padEnd(8)} ${m.toFixed(2)} µs CPU per round trip  ${(m / none).toFixed(2)}× none\n`);
  }
}
