import type { SerializedError } from './errors.js';
import type { TurnStopReason } from './events.js';

/**
 * How a failed task restarts, and how a batch answers one of its tasks failing, as an Erlang/OTP supervisor does
 * for its children. Written once, here: the task and batch machines and the Restate host all call these.
 */

/** How often a failed task starts again, and the backoff before the first restart; both hosts read these. */
export interface RestartOptions {
  /** Restarts of a failed task, each from its original prompt with a fresh history (default 2). */
  maxRestarts?: number;
  /** Backoff before the first restart, doubled for each further one (default 1000 ms). */
  restartDelayMs?: number;
}

export const RESTART_DEFAULTS: Required<RestartOptions> = { maxRestarts: 2, restartDelayMs: 1000 };

/** Start the failed task again after `delayMs`, or let it settle failed. */
export type RestartDecision = { restart: true; delayMs: number } | { restart: false };

/**
 * What a task whose run number `attempt` (0 for the first run) failed does next: it starts again after
 * `restartDelayMs · 2^attempt` while restarts are left, else it settles failed. A crash counts as a failure.
 */
export function restartDecision(attempt: number, options: RestartOptions = {}): RestartDecision {
  const maxRestarts = options.maxRestarts ?? RESTART_DEFAULTS.maxRestarts;
  if (attempt >= maxRestarts) return { restart: false };
  return { restart: true, delayMs: (options.restartDelayMs ?? RESTART_DEFAULTS.restartDelayMs) * 2 ** attempt };
}

/**
 * Which tasks restart when one fails: `oneForOne` only the failed one (the default); `oneForAll` every task of the
 * batch still running (they depend on each other, e.g. a writer and its critic sharing a plan); `restForOne` the
 * failed one and those started after it (a pipeline whose later stages consume earlier output). Tasks that already
 * settled keep their results; tasks not started yet start as usual.
 */
export type SupervisionStrategy = 'oneForOne' | 'oneForAll' | 'restForOne';

/**
 * Why a task's run failed: its `model` failed (after the model call's own retries), a `tool`, hook or output check
 * failed its turn or its agent crashed, its `budget` ran out, a `guardrail` stopped it, or its own subagents'
 * batch escalated (`escalation`).
 */
export type FailureClass = 'model' | 'tool' | 'budget' | 'guardrail' | 'escalation';

/**
 * What a batch does about a failure: `restart` the task (and the siblings its strategy names) from its prompt with
 * a fresh history; `resume` it, asking again with the history it has; `stop` it (it settles with its failure);
 * `escalate`: the batch fails, and its owner's turn ends with the cause.
 */
export type FailureAction = 'restart' | 'resume' | 'stop' | 'escalate';

/** At most `maxRestarts` restarts within `withinMs`, counted across the whole batch; one more escalates. */
export interface RestartIntensity {
  /** Restarts the batch may make within the window (0: the first failure that would restart escalates). */
  maxRestarts: number;
  /** The window's length, in ms, ending at each failure. */
  withinMs: number;
}

/** A batch's supervision: its strategy, its restart intensity and what each class of failure leads to. */
export interface StrategyOptions {
  /** Default `oneForOne`. */
  strategy?: SupervisionStrategy;
  /** Default: none (each task is bounded by `maxRestarts` of its own only). */
  intensity?: RestartIntensity;
  /** Overrides of {@link FAILURE_DEFAULTS}, by class. */
  onFailure?: Partial<Record<FailureClass, FailureAction>>;
}

/**
 * What each class of failure does unless a batch says otherwise: a model or tool failure may be passing, so the task
 * restarts; a spent budget or a guardrail would only trip again (and cost more), so the task stops; a subtree that
 * escalated has already used its own restarts, so the failure goes on up.
 */
export const FAILURE_DEFAULTS: Readonly<Record<FailureClass, FailureAction>> = {
  model: 'restart',
  tool: 'restart',
  budget: 'stop',
  guardrail: 'stop',
  escalation: 'escalate',
};

/** The error code of a turn that ended because a batch of its subagents escalated. */
export const ESCALATED = 'escalated';

/** The class of a turn's end, or undefined for a turn that did not fail (completed, interrupted, out of steps). */
export function failureClassOf(
  stopReason: TurnStopReason | undefined,
  error?: Pick<SerializedError, 'name' | 'code'>,
): FailureClass | undefined {
  if (stopReason === 'budget_exhausted') return 'budget';
  if (stopReason === 'guardrail_tripped') return 'guardrail';
  if (stopReason !== 'error') return undefined;
  if (error?.code === ESCALATED) return 'escalation';
  return error?.name === 'ModelError' ? 'model' : 'tool';
}

/** A failed run as its batch hears it: which task (its place in start order), which run of it, why and when. */
export interface TaskFailure {
  index: number;
  /** 0 for its first run; each restart or resume adds one. */
  attempt: number;
  failure: FailureClass;
  /** When it failed (ms since the epoch): what the intensity window is measured on. */
  at: number;
}

/** What a batch knows when it decides: its tasks started and not settled (by index) and its recent restarts. */
export interface RestartBook {
  active: readonly number[];
  /** When the batch's restarts within the intensity window happened (one per failure it restarted for). */
  restarts: readonly number[];
}

/** What a batch does about one failure (see {@link failureVerdict}). */
export type FailureVerdict =
  /** Restart `indexes` (the failed task first, then the siblings its strategy names, in start order). */
  | { kind: 'restart'; indexes: number[]; delayMs: number }
  | { kind: 'resume'; delayMs: number }
  | { kind: 'stop' }
  /** `intensity`: one restart too many within the window; else the class whose action is `escalate`. */
  | { kind: 'escalate'; because: 'intensity' | FailureClass };

/** The action for a class of failure under a batch's options. */
function failureAction(failure: FailureClass, options: StrategyOptions = {}): FailureAction {
  return options.onFailure?.[failure] ?? FAILURE_DEFAULTS[failure];
}

/** The restarts still inside the intensity window at `at` (all of them without an intensity). */
export function restartsWithin(restarts: readonly number[], at: number, intensity?: RestartIntensity): number[] {
  return intensity ? restarts.filter((time) => time > at - intensity.withinMs) : [...restarts];
}

/** Whether one more restart at `at` would exceed the batch's intensity. */
export function intensityExceeded(restarts: readonly number[], at: number, intensity?: RestartIntensity): boolean {
  return intensity !== undefined && restartsWithin(restarts, at, intensity).length >= intensity.maxRestarts;
}

/**
 * What a batch does about a failed run. The class's action decides first (`stop` and `escalate` at once); a task
 * out of its own `maxRestarts` then stops; a restart or resume beyond the intensity escalates; else the strategy
 * names who restarts, all after the failed run's backoff.
 */
export function failureVerdict(
  failed: TaskFailure,
  book: RestartBook,
  options: StrategyOptions & RestartOptions = {},
): FailureVerdict {
  const action = failureAction(failed.failure, options);
  if (action === 'stop') return { kind: 'stop' };
  if (action === 'escalate') return { kind: 'escalate', because: failed.failure };
  const own = restartDecision(failed.attempt, options);
  if (!own.restart) return { kind: 'stop' };
  if (intensityExceeded(book.restarts, failed.at, options.intensity)) return { kind: 'escalate', because: 'intensity' };
  if (action === 'resume') return { kind: 'resume', delayMs: own.delayMs };
  return { kind: 'restart', indexes: restartedWith(failed.index, book.active, options.strategy), delayMs: own.delayMs };
}

/** The tasks a strategy restarts with the failed one at `index`: itself first, then siblings in start order. */
export function restartedWith(index: number, active: readonly number[], strategy?: SupervisionStrategy): number[] {
  if (strategy === 'oneForAll') return [index, ...active.filter((i) => i !== index)];
  if (strategy === 'restForOne') return [index, ...active.filter((i) => i > index)];
  return [index];
}

/** How a task its batch stopped because a sibling's failure escalated ends: cancelled, naming the failure. */
export function escalatedEnd(
  taskId: string,
  because: 'intensity' | FailureClass,
): { status: 'cancelled'; text: string } {
  return { status: 'cancelled', text: escalatedText(taskId, because) };
}

/** The hand-off text of a task its batch stopped because a sibling's failure escalated. */
export function escalatedText(taskId: string, because: 'intensity' | FailureClass): string {
  return `The task was stopped: its batch escalated the failure of task ${taskId} (${escalationCause(because)}).`;
}

/** Why a batch escalated, in words: what an owner's turn error says. */
export function escalationCause(because: 'intensity' | FailureClass): string {
  return because === 'intensity' ? 'too many restarts within the intensity window' : `${because} failure`;
}

/** A failure a batch escalated, as its owner's turn hears it: the failed task, why, and what it ended with. */
export interface EscalatedFailure {
  /** The task whose failure escalated, and its agent. */
  taskId: string;
  agentId: string;
  /** `intensity`, or the class whose action is `escalate`. */
  because: 'intensity' | FailureClass;
  /** What the failed run handed off. */
  text: string;
}

/** The error an owner's turn ends with when a batch of its subagents escalated (class `escalation` one level up). */
export function escalationError(escalation: EscalatedFailure): SerializedError {
  return {
    name: 'SupervisionEscalated',
    code: ESCALATED,
    message:
      `Subagent task ${escalation.taskId} (agent ${escalation.agentId}) failed and its batch escalated ` +
      `(${escalationCause(escalation.because)}): ${escalation.text}`,
  };
}

/** Refuses options that cannot work, naming the field; answers them as given. */
export function checkStrategy(options: StrategyOptions, where = 'supervision'): StrategyOptions {
  const { strategy, intensity, onFailure } = options;
  if (strategy !== undefined && !['oneForOne', 'oneForAll', 'restForOne'].includes(strategy)) {
    throw new RangeError(`${where}.strategy must be oneForOne, oneForAll or restForOne, got ${String(strategy)}`);
  }
  if (intensity !== undefined) {
    const { maxRestarts, withinMs } = intensity;
    if (!Number.isInteger(maxRestarts) || maxRestarts < 0) {
      throw new RangeError(`${where}.intensity.maxRestarts must be a non-negative integer, got ${maxRestarts}`);
    }
    if (!(withinMs > 0)) throw new RangeError(`${where}.intensity.withinMs must be positive, got ${withinMs}`);
  }
  for (const [failure, action] of Object.entries(onFailure ?? {})) {
    if (!(failure in FAILURE_DEFAULTS)) throw new RangeError(`${where}.onFailure has an unknown class: ${failure}`);
    if (!['restart', 'resume', 'stop', 'escalate'].includes(action as string)) {
      throw new RangeError(`${where}.onFailure.${failure} must be restart, resume, stop or escalate, got ${action}`);
    }
  }
  return options;
}
