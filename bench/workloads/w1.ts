import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InspectionEvent } from 'xstate';
import { naiveLoop } from '../baselines/naive-xstate.js';
import { plainLoop, toolTable } from '../baselines/plain-loop.js';
import { DiscardingStore, drainModel, echoTool, ToolCounter, toolLoopModel } from '../fixtures.js';
import { piRunner, troupe } from '../impls.js';
import { check, type Timed, timed, type Workload } from '../workload.js';
import { loopCheck, piCheck } from './checks.js';

interface ToolLoopSize {
  steps: number;
}

/**
 * The agent statechart's states every tool step must pass through, and every step's. W1's agent has no policy, rules
 * or mode, so nothing can refuse a call: the worker validates the calls with the answer, and the batch goes from
 * `model` straight to `executing`, never entering `validating` or `authorizing`.
 */
const STEP_STATES = ['running.turn.step', 'running.turn.step.model'];
const TOOL_PHASES = [
  'running.turn.step.tools',
  'running.turn.step.tools.executing',
  'running.turn.step.tools.finalizing',
];
const SKIPPED_PHASES = [
  'running.turn.step.tools.validating',
  'running.turn.step.tools.authorizing',
  'running.turn.step.tools.awaitingApproval',
];

/** Every state path a state value is in, ancestors included: `{ a: { b: 'c' } }` → a, a.b, a.b.c. */
function activePaths(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [prefix + value];
  if (typeof value !== 'object' || value === null) return [];
  const paths: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    paths.push(prefix + key);
    paths.push(...activePaths(child, `${prefix}${key}.`));
  }
  return paths;
}

/** Counts entries into every state of one actor, microstep by microstep (transient states included). */
class TransitionCounter {
  readonly entries = new Map<string, number>();
  microsteps = 0;
  private active = new Set<string>();
  private readonly events: InspectionEvent[] = [];

  readonly inspect = (event: InspectionEvent): void => {
    if (event.type === '@xstate.microstep') this.events.push(event);
  };

  /** Replays the recorded microsteps of the actor with this session id. */
  countFor(sessionId: string): this {
    for (const event of this.events) {
      if (event.type !== '@xstate.microstep' || event.actorRef.sessionId !== sessionId) continue;
      this.microsteps++;
      const value = (event.snapshot as { value?: unknown }).value;
      const now = activePaths(value);
      // A state is entered when it was not active before, or when a transition re-enters it (finalizing → the next
      // step leaves and re-enters `step` in one microstep, so both snapshots show it active).
      const reentered = event._transitions.flatMap((t) =>
        t.reenter ? (t.target ?? []).map((node) => node.path.join('.')) : [],
      );
      for (const path of now) {
        const again = reentered.some((root) => path === root || path.startsWith(`${root}.`));
        if (again || !this.active.has(path)) this.entries.set(path, (this.entries.get(path) ?? 0) + 1);
      }
      this.active = new Set(now);
    }
    return this;
  }

  count(path: string): number {
    return this.entries.get(path) ?? 0;
  }
}

// Tools are made once per process, as a program's are (pi's typebox schemas compile on first use too).
const counter = new ToolCounter();
const tools = [echoTool(counter)];
const table = toolTable(tools);
const pi = piRunner(tools);

async function troupeLoop({ steps }: ToolLoopSize): Promise<Timed> {
  const { createAgent } = await troupe();
  counter.calls = 0;
  const agent = createAgent({ model: toolLoopModel(steps), tools, maxSteps: steps + 1 });
  const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
  await agent.stop();
  check(result.stopReason === 'completed', `expected stopReason completed, got ${result.stopReason}`);
  loopCheck(result, counter, steps, 2 + 2 * steps);
  return { ms, cpuMs };
}

async function naiveXStateLoop({ steps }: ToolLoopSize): Promise<Timed> {
  counter.calls = 0;
  const model = toolLoopModel(steps);
  const { ms, cpuMs, value } = await timed(() => naiveLoop(model, table, 'go', { maxSteps: steps + 1 }));
  loopCheck(value, counter, steps, 2 + 2 * steps);
  return { ms, cpuMs };
}

export const W1: Workload<ToolLoopSize> = {
  id: 'W1',
  title: 'tool loop',
  unit: 'µs/step',
  better: 'lower',
  sizes: { full: { steps: 200 }, smoke: { steps: 5 } },
  describe: ({ steps }) => `${steps} steps with one synchronous echo call each, then a final text; latency 0`,
  // A step is one model call plus its batch: `steps` tool steps and the final answer.
  figure: (run, { steps }) => (run.ms * 1000) / (steps + 1),
  // The peer harness's counts for W1. Past them the uncollected rows still speed up (V8 keeps tiering up), so a
  // longer series would set a warmer loop against one that each collection sets back: 40 warm-up runs give 1.15-1.23x
  // after a collection against 1.0-1.1x here. bench/recompiles.ts shows what a collection makes V8 compile again.
  runs: { warmup: 10, measured: 21 },
  // At most the naive XState loop's cost per step, on the way to pi-agent-core's; and no cliff after a collection.
  targets: [
    { impl: 'troupe', baseline: 'naive', bound: 'max', ratio: 1 },
    { impl: 'troupe', baseline: { row: 'troupe.uncollected' }, bound: 'max', ratio: 1.2 },
  ],
  // The same loops without the collection before each run: what one costs the code that runs after it.
  uncollected: ['troupe.uncollected', 'naive.uncollected'],
  labels: {
    statechart: 'agent statechart alone (fake workers that answer at once)',
    'troupe.uncollected': 'Troupe, no full collection before each run',
    'naive.uncollected': 'naive XState loop, no full collection before each run',
    'troupe.session': 'Troupe journaling to a JSONL session (durability step)',
    'troupe.session.nowrite': 'the same session on a store that discards what it is given (no system call)',
    'troupe.controls': 'Troupe with 3 permission rules and 2 tool hooks',
    'troupe.budget': 'Troupe with token, cost and time budgets it never reaches',
  },
  notes: ({ impl, facts }) =>
    impl === 'troupe.session'
      ? [`W1 session journal: ${facts.writesPerStep} writes and ${facts.bytesPerStep} bytes per step`]
      : [],
  impls: {
    troupe: troupeLoop,
    'troupe.uncollected': troupeLoop,
    /** Issue 13: the same loop journaled to a JSONL session at the default durability (≤ 1.3× Troupe's row). */
    async 'troupe.session'({ steps }) {
      const { createAgent, sessions } = await troupe();
      counter.calls = 0;
      const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-'));
      try {
        const session = sessions({ dir }).create();
        const agent = createAgent({ model: toolLoopModel(steps), tools, maxSteps: steps + 1, session });
        const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
        session.close();
        await agent.stop();
        loopCheck(result, counter, steps, 2 + 2 * steps);
        const stats = session.stats;
        check(stats !== undefined && stats.writes > 0, 'expected the session to have written its journal');
        const perStep = (n: number) => Math.round((n / (steps + 1)) * 10) / 10;
        return { ms, cpuMs, facts: { writesPerStep: perStep(stats.writes), bytesPerStep: perStep(stats.bytes) } };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    /**
     * The same session on a store that keeps nothing: what journaling costs besides its one system call per step
     * (events, records, encoding, the summary), beside `troupe.session` in the same run.
     */
    async 'troupe.session.nowrite'({ steps }) {
      const { createAgent, sessions } = await troupe();
      counter.calls = 0;
      const session = sessions({ store: new DiscardingStore() }).create();
      const agent = createAgent({ model: toolLoopModel(steps), tools, maxSteps: steps + 1, session });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      session.close();
      await agent.stop();
      loopCheck(result, counter, steps, 2 + 2 * steps);
      const stats = session.stats;
      check(stats !== undefined && stats.writes > 0, 'expected the session to hand its journal to the store');
      return { ms, cpuMs };
    },
    /**
     * Issue 15: the same loop through a chain of three rules (a deny and an ask that do not match, an allow that
     * does) and two tool hooks that pass: what controls cost per step, beside the plain `troupe` row.
     */
    async 'troupe.controls'({ steps }) {
      const { createAgent } = await troupe();
      counter.calls = 0;
      let hooked = 0;
      const agent = createAgent({
        model: toolLoopModel(steps),
        tools,
        maxSteps: steps + 1,
        permissions: { deny: ['bash(rm *)'], ask: ['write_file(/etc/**)'], allow: ['echo'] },
        hooks: {
          beforeToolCall: () => {
            hooked++;
            return undefined;
          },
          afterToolCall: () => undefined,
        },
      });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      await agent.stop();
      check(hooked === steps, `expected the hook to see ${steps} calls, got ${hooked}`);
      loopCheck(result, counter, steps, 2 + 2 * steps);
      return { ms, cpuMs };
    },
    /** Issue 15: budgets charged every step and checked before every model call, never reached. */
    async 'troupe.budget'({ steps }) {
      const { createAgent } = await troupe();
      counter.calls = 0;
      const agent = createAgent({
        model: toolLoopModel(steps),
        tools,
        maxSteps: steps + 1,
        budget: { tokens: 1e12, costUsd: 1e6, timeMs: 3_600_000 },
      });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      const left = agent.getState().budget?.left.timeMs;
      await agent.stop();
      check(left !== undefined && left > 0, 'expected an open wall-time budget');
      loopCheck(result, counter, steps, 2 + 2 * steps);
      return { ms, cpuMs };
    },
    async plain({ steps }) {
      counter.calls = 0;
      const model = toolLoopModel(steps);
      const { ms, cpuMs, value } = await timed(() => plainLoop(model, table, 'go', { maxSteps: steps + 1 }));
      loopCheck(value, counter, steps, 2 + 2 * steps);
      return { ms, cpuMs };
    },
    naive: naiveXStateLoop,
    'naive.uncollected': naiveXStateLoop,
    async pi({ steps }) {
      counter.calls = 0;
      const run = await pi();
      const model = toolLoopModel(steps);
      const { ms, cpuMs, value } = await timed(() => run(model, 'go'));
      piCheck(value, counter, steps, steps);
      return { ms, cpuMs };
    },
    async model({ steps }) {
      const model = toolLoopModel(steps);
      const {
        ms,
        cpuMs,
        value: events,
      } = await timed(async () => {
        let events = 0;
        for (let i = 0; i <= steps; i++) events += await drainModel(model);
        return events;
      });
      check(model.calls === steps + 1, `expected ${steps + 1} model calls, got ${model.calls}`);
      return { ms, cpuMs, facts: { events } };
    },
    /** The agent statechart alone, its workers answering synchronously: the floor of W1 on this statechart. */
    async statechart({ steps }) {
      const { runStatechartAlone } = await import('../baselines/statechart-only.js');
      const { ms, cpuMs, value } = await timed(() => runStatechartAlone(steps));
      check(value.idle, 'expected the statechart back in idle');
      check(value.modelCalls === steps + 1, `expected ${steps + 1} model requests, got ${value.modelCalls}`);
      check(value.toolResults === steps, `expected ${steps} tool results, got ${value.toolResults}`);
      return { ms, cpuMs };
    },
  },
  verify: {
    /** Every step passes through every step state, every tool step through every tool phase, as transitions. */
    async troupe({ steps }) {
      const { createAgent } = await troupe();
      counter.calls = 0;
      const transitions = new TransitionCounter();
      const agent = createAgent({
        model: toolLoopModel(steps),
        tools,
        maxSteps: steps + 1,
        inspect: transitions.inspect,
      });
      const result = await agent.prompt('go');
      await agent.stop();
      loopCheck(result, counter, steps, 2 + 2 * steps);
      transitions.countFor(agent.actor.sessionId);
      for (const path of STEP_STATES) {
        const n = transitions.count(path);
        check(n === steps + 1, `expected ${steps + 1} entries into ${path}, got ${n}`);
      }
      for (const path of TOOL_PHASES) {
        const n = transitions.count(path);
        check(n === steps, `expected ${steps} entries into ${path}, got ${n}`);
      }
      for (const path of SKIPPED_PHASES) {
        const n = transitions.count(path);
        check(n === 0, `nothing can refuse a call, yet ${path} was entered ${n} times`);
      }
      return {
        microsteps: transitions.microsteps,
        ...Object.fromEntries(
          [...STEP_STATES, ...TOOL_PHASES, ...SKIPPED_PHASES].map((path) => [path, transitions.count(path)]),
        ),
      };
    },
  },
};
