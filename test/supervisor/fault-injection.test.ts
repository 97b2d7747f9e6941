/**
 * Fault injection, embedded: 300 random batches (100 per strategy), each run through a real root agent whose
 * `swarm` call starts the tasks, every task's model call held until the scenario's step answers it: complete, or
 * fail as a model error, a hook (tool) failure, a tripped guardrail, a spent budget, or a batch of its own that
 * escalates into it. The oracle (test/helpers/strategy-faults.ts) says what each batch ends with; the event bus and
 * the scripted model say what happened. TROUPE_FAULT_SEED=<n> replays a run; a failure names its seed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentEvent, createAgent, type ScriptedAnswer } from '../../src/index.js';
import type { SupervisionStrategy } from '../../src/protocol/index.js';
import {
  answerFor,
  BatchOracle,
  causeText,
  completedText,
  type Expected,
  expectedOf,
  type FaultScenario,
  faultAgentConfig,
  faultScenario,
  ROOT_PROMPT,
  type StepOutcome,
} from '../helpers/strategy-faults.js';
import { parseResults } from './helpers.js';

const BATCHES = 100;
const SEED = Number(process.env.TROUPE_FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** A hang guard only: a batch that never reaches the state its next step needs fails, naming its seed. */
const STUCK_MS = 20_000;

/**
 * Each task's model calls, held until the driver answers the one the scenario's next step names; and the batch's
 * settles, counted, so that a step is taken only once the runtime has done all the previous one asked.
 */
class Gate {
  private readonly pending = new Map<number, { call: number; answer: (outcome: StepOutcome) => void }>();
  private settled = 0;
  private check = () => {};

  hold(index: number, call: number): Promise<ScriptedAnswer> {
    return new Promise((resolve) => {
      this.pending.set(index, { call, answer: (outcome) => resolve(answerFor(index, call, outcome)) });
      this.check();
    });
  }

  settle(): void {
    this.settled++;
    this.check();
  }

  /** Resolves once `settled` tasks have settled and every running one waits on the model call expected of it. */
  ready(oracle: BatchOracle, what: string): Promise<void> {
    const running = oracle.running();
    const calls = [...oracle.calls];
    const settled = oracle.statuses.length - running.length;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const seen = running.map((i) => `${i}:${this.pending.get(i)?.call ?? '-'}/${calls[i]}`).join(' ');
        reject(
          new Error(`${what}: stuck at ${this.settled}/${settled} settled, model calls (task:seen/expected) ${seen}`),
        );
      }, STUCK_MS);
      this.check = () => {
        if (this.settled !== settled || !running.every((i) => this.pending.get(i)?.call === calls[i])) return;
        clearTimeout(timer);
        this.check = () => {};
        resolve();
      };
      this.check();
    });
  }

  answer(index: number, outcome: StepOutcome): void {
    const held = this.pending.get(index);
    this.pending.delete(index);
    held?.answer(outcome);
  }
}

/** Runs one scenario through a fresh root agent; answers what the checks need. */
async function run(scenario: FaultScenario) {
  const what = `seed ${scenario.seed} (${JSON.stringify(scenario.config)}, steps ${JSON.stringify(scenario.steps)})`;
  const gate = new Gate();
  /** Everything in the order it happened: the tasks' model calls and the root's subagent events. */
  const log: Array<{ call: number } | AgentEvent> = [];
  const root = createAgent(
    faultAgentConfig(scenario.config, (index, call) => {
      log.push({ call: index });
      return gate.hold(index, call);
    }),
  );
  root.on('*', (event) => {
    // The root's own children only: a nested batch's events come from its task's agent.
    if (event.agentId !== root.id) return;
    if (event.type === 'subagent_start' || event.type === 'subagent_end') log.push(event);
    if (event.type === 'subagent_end') gate.settle();
  });
  // The turns of the tasks' agents (and the leaves below them) that a nested batch's escalation ended.
  const escalatedTurns: string[] = [];
  root.on(
    'turn_end',
    (event) => {
      if (event.agentId !== root.id && event.error?.code === 'escalated') escalatedTurns.push(event.error.message);
    },
    { subtree: true },
  );
  const turn = root.prompt(ROOT_PROMPT);
  const oracle = new BatchOracle(scenario.config);
  for (const step of scenario.steps) {
    await gate.ready(oracle, what);
    gate.answer(step.task, step.outcome);
    oracle.apply(step);
  }
  const result = await turn;
  // Give a task that wrongly outlived its batch the chance to show itself before the tree stops.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const history = root.messages;
  await root.stop();
  return { what, log, result, history, escalatedTurns };
}

function check(scenario: FaultScenario, expected: Expected, ran: Awaited<ReturnType<typeof run>>) {
  const { what, log, result, history } = ran;
  const starts = log.filter(
    (e): e is Extract<AgentEvent, { type: 'subagent_start' }> => 'type' in e && e.type === 'subagent_start',
  );
  const ends = log.filter(
    (e): e is Extract<AgentEvent, { type: 'subagent_end' }> => 'type' in e && e.type === 'subagent_end',
  );
  // The first start of each task, in index order (the batch starts them in order, all at once).
  const firstStarts = starts.filter((s) => s.attempt === undefined);
  expect(firstStarts.length, what).toBe(scenario.config.size);
  const taskIds = firstStarts.map((s) => s.taskId);
  const indexOf = (taskId: string) => taskIds.indexOf(taskId);

  // Every task settles exactly once, with the status the strategy dictates.
  const statuses = taskIds.map((id) => ends.filter((e) => e.taskId === id).map((e) => e.status));
  expect(statuses, what).toEqual(expected.statuses.map((s) => [s]));
  // Each task started as often as the oracle restarted or resumed it; the restarts (one per failure, however
  // many tasks it restarted) never exceed the intensity.
  expect(
    taskIds.map((id) => starts.filter((s) => s.taskId === id).length),
    what,
  ).toEqual(expected.runs);
  const ownRestarts = starts.filter((s) => s.attempt !== undefined && s.restartedBy === undefined).length;
  expect(ownRestarts, what).toBe(expected.restarts);
  if (scenario.config.intensity) expect(ownRestarts, what).toBeLessThanOrEqual(scenario.config.intensity.maxRestarts);
  // A sibling restarted by a failure names it.
  for (const start of starts.filter((s) => s.restartedBy !== undefined)) {
    expect(indexOf(start.restartedBy as string), what).toBeGreaterThanOrEqual(0);
  }

  // Nothing of the batch runs after its last task settled.
  const lastEnd = log.lastIndexOf(ends[ends.length - 1] as AgentEvent);
  const late = log.slice(lastEnd + 1).filter((e) => 'call' in e || e.type === 'subagent_start');
  expect(late, what).toEqual([]);

  // A nested batch's escalation reaches its own owner, the task's agent, whose turn ends naming the cause.
  expect(ran.escalatedTurns.length, what).toBe(expected.nestedEscalations);
  for (const message of ran.escalatedTurns) {
    expect(message, what).toMatch(/too many restarts within the intensity window|model failure/);
  }

  if (expected.escalated) {
    // The escalation reaches the owner: its turn ends failed, naming the task and the cause.
    const { task, because } = expected.escalated;
    expect(result.stopReason, what).toBe('error');
    expect(result.error?.code, what).toBe('escalated');
    expect(result.error?.message, what).toContain(taskIds[task]);
    expect(result.error?.message, what).toContain(causeText(because));
    return;
  }
  expect(result.stopReason, what).toBe('completed');
  expect(result.text, what).toBe('root done');
  // The results reach the owner once each, in task order, a completed task's from its last run.
  const toolMessages = history.filter((m) => m.role === 'tool');
  expect(toolMessages.length, what).toBe(1);
  const text =
    toolMessages[0]?.role === 'tool'
      ? toolMessages[0].content.map((r) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')).join('\n')
      : '';
  const results = parseResults(text);
  expect(
    results.map((r) => [indexOf(r.taskId), r.status]),
    what,
  ).toEqual(expected.statuses.map((s, i) => [i, s]));
  expected.statuses.forEach((status, i) => {
    if (status === 'completed') expect(results[i]?.text, what).toBe(completedText(i, expected.calls[i] as number));
  });
}

describe('supervision strategies under random faults', () => {
  afterEach((context) => {
    if (context.task.result?.state === 'fail') console.error(`fault injection: replay with TROUPE_FAULT_SEED=${SEED}`);
  });

  const strategies: SupervisionStrategy[] = ['oneForOne', 'oneForAll', 'restForOne'];
  strategies.forEach((strategy, s) => {
    it(`${strategy}: ${BATCHES} batches end as the strategy dictates`, { timeout: 120_000 }, async () => {
      const tally = { escalated: 0, restarts: 0, nested: 0, nestedEscalations: 0 };
      for (let k = 0; k < BATCHES; k++) {
        const scenario = faultScenario(SEED + s * BATCHES + k, strategy);
        const expected = expectedOf(scenario);
        check(scenario, expected, await run(scenario));
        tally.escalated += expected.escalated ? 1 : 0;
        tally.restarts += expected.restarts;
        tally.nested += scenario.steps.filter((step) => step.outcome === 'nested').length;
        tally.nestedEscalations += expected.nestedEscalations;
      }
      // The generator reaches what the test is for: escalations, restarts and nested batches, some escalating.
      expect(tally.escalated).toBeGreaterThan(0);
      expect(tally.restarts).toBeGreaterThan(0);
      expect(tally.nested).toBeGreaterThan(0);
      expect(tally.nestedEscalations).toBeGreaterThan(0);
    });
  });
});
