/**
 * Random batches with failures injected, and what each must end with, for the fault-injection tests of the
 * supervision strategies (embedded, and after a SIGKILL in the middle of restarts).
 *
 * A scenario is a batch of 1–4 tasks (all running at once) under a strategy, maybe an intensity, per-class
 * overrides and a per-task `maxRestarts`, and a list of steps: one running task answers its pending model call by
 * completing or failing with a class. `nested` makes the task start a batch of its own whose one leaf keeps
 * failing as a model error: that batch escalates into the task when its intensity runs out first, else the leaf
 * gives up and the task's turn goes on.
 *
 * The oracle (`BatchOracle`) is the strategies' definition, written here from the guide and independently of
 * `failureVerdict`: the class's action first (stop, escalate), then the task's own restarts, then the batch's
 * intensity (counted across the batch, one per failure restarted or resumed), then who restarts.
 */
import { z } from 'zod';
import {
  type AgentConfig,
  type AssistantMessage,
  defineTool,
  guardrails,
  type ModelRequest,
  type ScriptedAnswer,
  scriptedModel,
  textOf,
} from '../../src/index.js';
import type { FailureAction, FailureClass, SupervisionStrategy } from '../../src/protocol/index.js';

/** A failure a step injects: a class of the runtime's, or `nested` (the task's own batch escalates, or not). */
export type InjectedFailure = Exclude<FailureClass, 'escalation'> | 'nested';
export type StepOutcome = 'complete' | InjectedFailure;

/** A batch's supervision as the tree is given it (the intensity window is an hour: every restart counts). */
export interface FaultConfig {
  size: number;
  strategy: SupervisionStrategy;
  intensity?: { maxRestarts: number; withinMs: number };
  onFailure: Partial<Record<FailureClass, FailureAction>>;
  maxRestarts: number;
  restartDelayMs: number;
}

/** One running task answers its pending model call. */
export interface FaultStep {
  task: number;
  outcome: StepOutcome;
}

export interface FaultScenario {
  seed: number;
  config: FaultConfig;
  steps: FaultStep[];
}

export type ExpectedStatus = 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';

/** What a batch ended with, by the oracle. */
export interface Expected {
  statuses: ExpectedStatus[];
  /** Model calls each task's agents made, all runs counted (a completed task's text names the last). */
  calls: number[];
  /** Runs each task started: 1 + its restarts and resumes. */
  runs: number[];
  /** Failures the batch restarted or resumed for (what the intensity bounds). */
  restarts: number;
  escalated?: { task: number; because: 'intensity' | FailureClass };
  /** Nested batches that escalated into their task (each ends that task's turn with `code: 'escalated'`). */
  nestedEscalations: number;
}

const DEFAULT_ACTIONS: Record<FailureClass, FailureAction> = {
  model: 'restart',
  tool: 'restart',
  budget: 'stop',
  guardrail: 'stop',
  escalation: 'escalate',
};

/** A batch as the strategies define it, moved by the same steps the runtime is given. */
export class BatchOracle {
  readonly statuses: ExpectedStatus[];
  readonly calls: number[];
  readonly runs: number[];
  /** Each task's run number, as its failures are counted against `maxRestarts` (0 for the first). */
  private readonly attempts: number[];
  restarts = 0;
  nestedEscalations = 0;
  escalated?: { task: number; because: 'intensity' | FailureClass };

  constructor(private readonly config: FaultConfig) {
    this.statuses = Array.from({ length: config.size }, () => 'running');
    this.calls = Array.from({ length: config.size }, () => 1);
    this.runs = Array.from({ length: config.size }, () => 1);
    this.attempts = Array.from({ length: config.size }, () => 0);
  }

  get ended(): boolean {
    return this.statuses.every((status) => status !== 'running');
  }

  /** Tasks whose agents wait on a model call, oldest first. */
  running(): number[] {
    return this.statuses.flatMap((status, i) => (status === 'running' ? [i] : []));
  }

  apply({ task, outcome }: FaultStep): void {
    if (this.statuses[task] !== 'running') throw new Error(`step for task ${task}, which is not running`);
    if (outcome === 'complete') {
      this.statuses[task] = 'completed';
      return;
    }
    if (outcome === 'nested') {
      // The task's own batch (one leaf failing as a model error) escalates into it, or lets its turn go on.
      if (nestedEscalates(this.config)) {
        this.nestedEscalations++;
        this.fail(task, 'escalation');
      } else this.calls[task] = (this.calls[task] ?? 0) + 1;
      return;
    }
    this.fail(task, outcome);
  }

  private fail(task: number, failure: FailureClass): void {
    const { config } = this;
    // A spent budget settles `interrupted`, every other failure `failed`.
    const failedStatus: ExpectedStatus = failure === 'budget' ? 'interrupted' : 'failed';
    const action = config.onFailure[failure] ?? DEFAULT_ACTIONS[failure];
    if (action === 'stop' || (action !== 'escalate' && (this.attempts[task] ?? 0) >= config.maxRestarts)) {
      this.statuses[task] = failedStatus;
      return;
    }
    const overIntensity = config.intensity !== undefined && this.restarts >= config.intensity.maxRestarts;
    if (action === 'escalate' || overIntensity) {
      this.escalated = { task, because: action === 'escalate' ? failure : 'intensity' };
      this.statuses[task] = failedStatus;
      for (const i of this.running()) this.statuses[i] = 'cancelled';
      return;
    }
    this.restarts++;
    const again =
      action === 'resume'
        ? [task]
        : config.strategy === 'oneForAll'
          ? this.running()
          : config.strategy === 'restForOne'
            ? this.running().filter((i) => i >= task)
            : [task];
    for (const i of again) {
      this.attempts[i] = (this.attempts[i] ?? 0) + 1;
      this.runs[i] = (this.runs[i] ?? 0) + 1;
      this.calls[i] = (this.calls[i] ?? 0) + 1;
    }
  }

  expected(): Expected {
    return {
      statuses: [...this.statuses],
      calls: [...this.calls],
      runs: [...this.runs],
      restarts: this.restarts,
      nestedEscalations: this.nestedEscalations,
      ...(this.escalated ? { escalated: this.escalated } : {}),
    };
  }
}

/** Whether a one-task batch whose task fails as a model error on every run escalates. */
function nestedEscalates(config: FaultConfig): boolean {
  const inner = new BatchOracle({ ...config, size: 1 });
  while (!inner.ended) inner.apply({ task: 0, outcome: 'model' });
  return inner.escalated !== undefined;
}

/** A small seeded PRNG (mulberry32): the same seed, the same scenarios. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const STRATEGIES: readonly SupervisionStrategy[] = ['oneForOne', 'oneForAll', 'restForOne'];
const ACTIONS: readonly FailureAction[] = ['restart', 'resume', 'stop', 'escalate'];
const CLASSES: readonly FailureClass[] = ['model', 'tool', 'budget', 'guardrail', 'escalation'];
const FAILURES: readonly InjectedFailure[] = ['model', 'tool', 'budget', 'guardrail', 'nested'];
/** After this many steps the tasks still running complete, so that every batch ends. */
const MAX_STEPS = 10;

/**
 * A random scenario from `seed`, under `strategy` if given: its supervision, and steps until the batch ends
 * (each step names a task the oracle says is running).
 */
export function faultScenario(seed: number, strategy?: SupervisionStrategy): FaultScenario {
  const random = prng(seed);
  const onFailure: FaultConfig['onFailure'] = {};
  for (const failure of CLASSES) if (random() < 0.4) onFailure[failure] = pick(random, ACTIONS);
  const config: FaultConfig = {
    size: 1 + Math.floor(random() * 4),
    strategy: strategy ?? pick(random, STRATEGIES),
    ...(random() < 0.5 ? { intensity: { maxRestarts: Math.floor(random() * 4), withinMs: 3_600_000 } } : {}),
    onFailure,
    maxRestarts: Math.floor(random() * 4),
    restartDelayMs: Math.floor(random() * 3),
  };
  const oracle = new BatchOracle(config);
  const steps: FaultStep[] = [];
  while (!oracle.ended) {
    const task = pick(random, oracle.running());
    const outcome: StepOutcome = steps.length >= MAX_STEPS || random() < 0.35 ? 'complete' : pick(random, FAILURES);
    const step = { task, outcome };
    oracle.apply(step);
    steps.push(step);
  }
  return { seed, config, steps };
}

/** What the oracle says `scenario` ends with. */
export function expectedOf(scenario: FaultScenario): Expected {
  const oracle = new BatchOracle(scenario.config);
  for (const step of scenario.steps) oracle.apply(step);
  return oracle.expected();
}

/** The prompt of task `index` (its agent's first user message), and of the leaf a nested step starts. */
const taskPrompt = (index: number) => `task ${index}`;
const leafPrompt = (index: number) => `task ${index} leaf`;
export const ROOT_PROMPT = 'run the batch';
/** A task's answer when it completes on its model call number `call` (1 for its first). */
export const completedText = (index: number, call: number) => `task ${index} done on call ${call}`;

const TOOL_FAILURE = 'FAIL:tool';
const GUARDRAIL_FAILURE = 'FAIL:guardrail';
const BUDGET_TOKENS = 100;

/**
 * The answer that makes a task's turn end as `outcome`: a model error, an answer a hook rejects (a `tool`
 * failure: a hook failed the turn), one a guardrail trips on, a step that spends past its profile's budget, or a
 * `swarm` call of one leaf that keeps failing.
 */
export function answerFor(index: number, call: number, outcome: StepOutcome): ScriptedAnswer {
  switch (outcome) {
    case 'complete':
      return { text: completedText(index, call) };
    case 'model':
      return { text: '', error: { code: 'invalid_request', message: `task ${index} model failed` } };
    case 'tool':
      return { text: TOOL_FAILURE };
    case 'guardrail':
      return { text: GUARDRAIL_FAILURE };
    case 'budget':
      return { toolCalls: [{ name: 'noop', args: {} }], usage: { input: BUDGET_TOKENS * 50 } };
    case 'nested':
      return { toolCalls: [{ name: 'swarm', args: { tasks: [{ prompt: leafPrompt(index), profile: 'task' }] } }] };
  }
}

/** The task index a prompt names, or undefined for the root and the leaves. */
function taskIndexOf(prompt: string): number | undefined {
  const match = /^task (\d+)$/.exec(prompt);
  return match ? Number(match[1]) : undefined;
}

/**
 * The root agent's config for a scenario: the tree's supervision, the `task` profile with its per-turn budget, a
 * hook that fails answers reading FAIL:tool, a guardrail on FAIL:guardrail and a `noop` tool. `answerTask` answers
 * a task's model call (number `call`, from 1); the root swarms the tasks, then answers `root done`; leaves fail.
 */
export function faultAgentConfig(
  config: FaultConfig,
  answerTask: (index: number, call: number, request: ModelRequest) => ScriptedAnswer | Promise<ScriptedAnswer>,
): AgentConfig {
  const calls = new Map<number, number>();
  const model = scriptedModel(
    (request) => {
      const prompt = textOf(request.messages.find((m) => m.role === 'user'));
      if (prompt === ROOT_PROMPT) {
        const answered = request.messages.some((m) => m.role === 'assistant');
        if (answered) return { text: 'root done' };
        const tasks = Array.from({ length: config.size }, (_, i) => ({ prompt: taskPrompt(i), profile: 'task' }));
        return { toolCalls: [{ name: 'swarm', args: { tasks } }] };
      }
      const index = taskIndexOf(prompt);
      if (index === undefined) return answerFor(-1, 0, 'model');
      const call = (calls.get(index) ?? 0) + 1;
      calls.set(index, call);
      return answerTask(index, call, request);
    },
    { record: false },
  );
  const guard = guardrails({ output: [(text) => (text === GUARDRAIL_FAILURE ? 'the guardrail tripped' : undefined)] });
  const rejecting = (message: AssistantMessage) => {
    if (textOf(message) === TOOL_FAILURE) throw new Error('a hook rejected the answer');
    return undefined;
  };
  return {
    model,
    retry: false,
    tools: [defineTool({ name: 'noop', description: 'Does nothing', schema: z.object({}), execute: () => 'ok' })],
    hooks: { ...guard, afterModelCall: [...[guard.afterModelCall ?? []].flat(), rejecting] },
    subagents: {
      strategy: config.strategy,
      ...(config.intensity ? { intensity: config.intensity } : {}),
      onFailure: config.onFailure,
      maxRestarts: config.maxRestarts,
      restartDelayMs: config.restartDelayMs,
      profiles: { task: { budget: { tokens: BUDGET_TOKENS } } },
    },
  };
}

/** What an owner's turn error says of the cause of an escalation (the guide's words). */
export function causeText(because: 'intensity' | FailureClass): string {
  return because === 'intensity' ? 'too many restarts within the intensity window' : `${because} failure`;
}
