import { describe, expect, it } from 'vitest';
import { transition } from 'xstate';
import { batchMachine, taskMachine } from '../../machines/supervisor/index.js';
import * as host from '../../src/host/index.js';
import {
  type BatchSpec,
  checkStrategy,
  escalatedText,
  FAILURE_DEFAULTS,
  type FailureClass,
  failureClassOf,
  failureVerdict,
  intensityExceeded,
  restartedWith,
  restartsWithin,
  type StrategyOptions,
} from '../../src/protocol/index.js';
import { batch, pure, settings, task } from './pure.js';

// What a batch does about a failed task is decided once (failureVerdict); the batch machine's guards name each
// outcome and the task machine carries it out. These pin each decision, then each transition that acts on one.

const failure = (index: number, over: Partial<{ attempt: number; failure: FailureClass; at: number }> = {}) => ({
  index,
  attempt: 0,
  failure: 'model' as FailureClass,
  at: 10_000,
  ...over,
});
const book = (active: number[], restarts: number[] = []) => ({ active, restarts });

describe('failureVerdict: one decision, written once', () => {
  it('defaults: model and tool failures restart, a budget or a guardrail stops, an escalation goes on up', () => {
    expect(FAILURE_DEFAULTS).toEqual({
      model: 'restart',
      tool: 'restart',
      budget: 'stop',
      guardrail: 'stop',
      escalation: 'escalate',
    });
    const verdicts = (['model', 'tool', 'budget', 'guardrail', 'escalation'] as const).map((kind) =>
      failureVerdict(failure(0, { failure: kind }), book([0]), { restartDelayMs: 10 }),
    );
    expect(verdicts).toEqual([
      { kind: 'restart', indexes: [0], delayMs: 10 },
      { kind: 'restart', indexes: [0], delayMs: 10 },
      { kind: 'stop' },
      { kind: 'stop' },
      { kind: 'escalate', because: 'escalation' },
    ]);
  });

  it('onFailure overrides a class: resume, stop, escalate or restart', () => {
    const options = (model: 'restart' | 'resume' | 'stop' | 'escalate'): StrategyOptions => ({
      onFailure: { model },
    });
    expect(failureVerdict(failure(1), book([1]), { ...options('resume'), restartDelayMs: 5 })).toEqual({
      kind: 'resume',
      delayMs: 5,
    });
    expect(failureVerdict(failure(1), book([1]), options('stop'))).toEqual({ kind: 'stop' });
    expect(failureVerdict(failure(1), book([1]), options('escalate'))).toEqual({ kind: 'escalate', because: 'model' });
    expect(failureVerdict(failure(1, { failure: 'budget' }), book([1]), { onFailure: { budget: 'restart' } })).toEqual({
      kind: 'restart',
      indexes: [1],
      delayMs: 1000,
    });
  });

  it("a task out of its own maxRestarts stops; the backoff doubles with the failed run's attempt", () => {
    const options = { maxRestarts: 2, restartDelayMs: 100 };
    expect(failureVerdict(failure(0, { attempt: 1 }), book([0]), options)).toEqual({
      kind: 'restart',
      indexes: [0],
      delayMs: 200,
    });
    expect(failureVerdict(failure(0, { attempt: 2 }), book([0]), options)).toEqual({ kind: 'stop' });
    // Out of restarts, a resume stops too.
    expect(
      failureVerdict(failure(0, { attempt: 2 }), book([0]), { ...options, onFailure: { model: 'resume' } }),
    ).toEqual({ kind: 'stop' });
  });

  it('the strategy names who restarts: the failed task first, then siblings still running in start order', () => {
    const active = [0, 2, 3, 5];
    expect(restartedWith(3, active, 'oneForOne')).toEqual([3]);
    expect(restartedWith(3, active)).toEqual([3]);
    expect(restartedWith(3, active, 'oneForAll')).toEqual([3, 0, 2, 5]);
    expect(restartedWith(3, active, 'restForOne')).toEqual([3, 5]);
    expect(restartedWith(5, active, 'restForOne')).toEqual([5]);
    expect(failureVerdict(failure(2), book(active), { strategy: 'restForOne', restartDelayMs: 0 })).toEqual({
      kind: 'restart',
      indexes: [2, 3, 5],
      delayMs: 0,
    });
  });

  it('intensity: maxRestarts restarts within withinMs, across the batch; one more escalates', () => {
    const intensity = { maxRestarts: 2, withinMs: 1000 };
    // Two restarts inside the window (at 9,500 and 9,900; the one at 9,000 is exactly withinMs old and out).
    expect(restartsWithin([9000, 9500, 9900], 10_000, intensity)).toEqual([9500, 9900]);
    expect(restartsWithin([9000, 9500], 10_000)).toEqual([9000, 9500]);
    expect(intensityExceeded([9500, 9900], 10_000, intensity)).toBe(true);
    expect(intensityExceeded([9000, 9900], 10_000, intensity)).toBe(false);
    expect(intensityExceeded([1, 2, 3], 10_000)).toBe(false);
    expect(failureVerdict(failure(0), book([0, 1], [9500, 9900]), { intensity })).toEqual({
      kind: 'escalate',
      because: 'intensity',
    });
    expect(failureVerdict(failure(0), book([0, 1], [9000, 9900]), { intensity, restartDelayMs: 1 })).toEqual({
      kind: 'restart',
      indexes: [0],
      delayMs: 1,
    });
    // maxRestarts 0: the first restart is one too many.
    expect(failureVerdict(failure(0), book([0]), { intensity: { maxRestarts: 0, withinMs: 1 } })).toEqual({
      kind: 'escalate',
      because: 'intensity',
    });
    // A stop is decided before the intensity: a task that stops does not restart, so it cannot exceed it.
    expect(failureVerdict(failure(0, { failure: 'budget' }), book([0], [9999, 9999]), { intensity })).toEqual({
      kind: 'stop',
    });
  });

  it('classifies a turn end: budget, guardrail, escalation, model, tool; none for a turn that did not fail', () => {
    expect(failureClassOf('budget_exhausted')).toBe('budget');
    expect(failureClassOf('guardrail_tripped')).toBe('guardrail');
    expect(failureClassOf('error', { name: 'SupervisionEscalated', code: 'escalated' })).toBe('escalation');
    expect(failureClassOf('error', { name: 'ModelError', code: 'rate_limit' })).toBe('model');
    expect(failureClassOf('error', { name: 'OutputValidationError', code: 'output_invalid' })).toBe('tool');
    expect(failureClassOf('error')).toBe('tool');
    for (const reason of ['completed', 'interrupted', 'max_steps', 'repetition', undefined] as const) {
      expect(failureClassOf(reason)).toBeUndefined();
    }
  });

  it('refuses options that cannot work, naming the field', () => {
    expect(() => checkStrategy({ strategy: 'oneForSome' as never })).toThrow(/supervision\.strategy/);
    expect(() => checkStrategy({ intensity: { maxRestarts: -1, withinMs: 5 } }, 'swarm')).toThrow(
      /swarm\.intensity\.maxRestarts/,
    );
    expect(() => checkStrategy({ intensity: { maxRestarts: 1.5, withinMs: 5 } })).toThrow(/maxRestarts/);
    expect(() => checkStrategy({ intensity: { maxRestarts: 1, withinMs: 0 } })).toThrow(/withinMs must be positive/);
    expect(() => checkStrategy({ onFailure: { network: 'stop' } as never })).toThrow(/unknown class: network/);
    expect(() => checkStrategy({ onFailure: { model: 'retry' as never } })).toThrow(/onFailure\.model/);
    const fine = { strategy: 'restForOne', intensity: { maxRestarts: 0, withinMs: Infinity } } as const;
    expect(checkStrategy(fine)).toBe(fine);
  });

  it('is the one the Restate host reaches through troupe/host', () => {
    expect(host.failureVerdict).toBe(failureVerdict);
    expect(escalatedText('t1', 'intensity')).toBe(
      'The task was stopped: its batch escalated the failure of task t1 (too many restarts within the intensity window).',
    );
  });
});

const batches = pure(batchMachine);
const tasks = pure(taskMachine);

describe('batch machine: the verdict on TASK.FAILED, one named guard per outcome', () => {
  const start = (supervision?: StrategyOptions, overrides: Record<string, unknown> = {}) => {
    const spec: BatchSpec = batch('b', [task(0), task(1), task(2), task(3)], 3);
    if (supervision) spec.supervision = supervision;
    const { tasks: queue, ...shape } = spec;
    const [spawned] = batches.start({ ...settings, maxRestarts: 3, ...overrides, batch: { ...shape, size: 4 } });
    return batches.step(spawned, { type: 'QUEUE', tasks: queue })[0];
  };
  const failed = (i: number, over: Record<string, unknown> = {}) => ({
    type: 'TASK.FAILED',
    taskId: `t${i}`,
    attempt: 0,
    failure: 'model',
    text: `t${i} broke`,
    at: 1000,
    ...over,
  });
  const settledEvent = (i: number, status = 'completed') => ({ type: 'TASK.SETTLED', taskId: `t${i}`, status });

  it('oneForOne (default): only the failed task restarts, after its backoff', () => {
    const [after, actions] = batches.step(start(), failed(1));
    expect(actions).toEqual(['verdict restart after 100', 'tell t1 RESTART after 100']);
    expect(after.value).toBe('running');
    expect(after.context).toMatchObject({ attempts: { 1: 1 }, restarts: [1000], done: [] });
  });

  it('oneForAll: every task still running restarts with it, told whose failure; settled ones keep their result', () => {
    let [snapshot] = batches.step(start({ strategy: 'oneForAll' }), settledEvent(0));
    expect(snapshot.context.done).toEqual(['t0']);
    let actions: string[];
    // t0 settled, t3 started in its place: t1 failed, t2 and t3 restart with it.
    [snapshot, actions] = batches.step(snapshot, failed(1));
    expect(actions).toEqual([
      'verdict restart with t2,t3 after 100',
      'tell t1 RESTART after 100',
      'tell t2 RESTART (cause t1) after 100',
      'tell t3 RESTART (cause t1) after 100',
    ]);
    expect(snapshot.context).toMatchObject({ attempts: { 1: 1, 2: 1, 3: 1 }, restarts: [1000] });
  });

  it('restForOne: the failed task and those started after it restart; earlier ones go on', () => {
    const [snapshot, actions] = batches.step(start({ strategy: 'restForOne' }), failed(1));
    expect(actions).toEqual([
      'verdict restart with t2 after 100',
      'tell t1 RESTART after 100',
      'tell t2 RESTART (cause t1) after 100',
    ]);
    expect(snapshot.context.attempts).toEqual({ 1: 1, 2: 1 });
  });

  it('restForOne: a later task that already settled keeps its result; the one started in its place restarts', () => {
    // t0, t1, t2 start; t2 settles and t3 starts in its place; t1 fails: t1 and t3 restart, t2 is done.
    const [snapshot] = batches.step(start({ strategy: 'restForOne' }), settledEvent(2));
    expect(batches.step(snapshot, failed(1))[1]).toEqual([
      'verdict restart with t3 after 100',
      'tell t1 RESTART after 100',
      'tell t3 RESTART (cause t1) after 100',
    ]);
  });

  it('oneForOne keeps no list of settled tasks: only a strategy that restarts siblings needs one', () => {
    let [snapshot] = batches.step(start(), settledEvent(0));
    [snapshot] = batches.step(snapshot, settledEvent(1, 'failed'));
    expect(snapshot.context.done).toEqual([]);
    [snapshot] = batches.step(start({ strategy: 'restForOne' }), settledEvent(0));
    expect(snapshot.context.done).toEqual(['t0']);
  });

  it("a failure of a run the batch already restarted (a sibling's restart overtook it) is stale and ignored", () => {
    let [snapshot] = batches.step(start({ strategy: 'oneForAll' }), failed(0));
    let [same, actions] = batches.step(snapshot, failed(1, { attempt: 0 }));
    expect(actions).toEqual([]);
    expect(same.context).toEqual(snapshot.context);
    // Its next run's failure (attempt 1) counts.
    [snapshot, actions] = batches.step(snapshot, failed(1, { attempt: 1, at: 1001 }));
    expect(actions.slice(0, 2)).toEqual(['verdict restart with t0,t2 after 200', 'tell t1 RESTART after 200']);
    expect(snapshot.context.restarts).toEqual([1000, 1001]);
    // A failure of a task the batch does not know is ignored too.
    expect(batches.step(snapshot, failed(9))[1]).toEqual([]);
  });

  it('stopsTask: a budget failure (and a task out of its restarts) gives up; the task settles with its failure', () => {
    expect(batches.step(start(), failed(2, { failure: 'budget' }))[1]).toEqual(['verdict stop', 'tell t2 GIVE_UP']);
    expect(batches.step(start(), failed(2, { attempt: 3 }))[1]).toEqual(['verdict stop', 'tell t2 GIVE_UP']);
  });

  it('resumesTask: the task is asked again with its history; it counts against the intensity', () => {
    const [snapshot, actions] = batches.step(start({ onFailure: { tool: 'resume' } }), failed(2, { failure: 'tool' }));
    expect(actions).toEqual(['verdict resume after 100', 'tell t2 RESUME after 100']);
    expect(snapshot.context).toMatchObject({ attempts: { 2: 1 }, restarts: [1000] });
  });

  it('exceedsIntensity: the restart one too many within the window escalates; the window slides', () => {
    const intensity = { maxRestarts: 2, withinMs: 100 };
    let [snapshot] = batches.step(start({ intensity }), failed(0, { at: 1000 }));
    [snapshot] = batches.step(snapshot, failed(1, { at: 1050 }));
    // 1000 has left the window by 1100: one restart in it, room for this one.
    let actions: string[];
    [snapshot, actions] = batches.step(snapshot, failed(2, { at: 1100 }));
    expect(actions).toEqual(['verdict restart after 100', 'tell t2 RESTART after 100']);
    expect(snapshot.context.restarts).toEqual([1050, 1100]);
    const before = snapshot;
    [snapshot, actions] = batches.step(snapshot, failed(0, { attempt: 1, at: 1120, text: 'still broken' }));
    expect(snapshot.value).toBe('escalated');
    expect(actions).toEqual([
      'send pool.0 CANCEL_ALL cancelled',
      'settle t3 cancelled',
      'send pool.0 SEAL',
      'escalate t0 intensity',
    ]);
    expect(snapshot.context.escalation).toEqual({
      batchId: 'b',
      taskId: 't0',
      agentId: 'a0',
      failure: 'model',
      because: 'intensity',
      text: 'still broken',
    });
    // The tasks it ends are told why, naming the failed task and the cause.
    const [, raw] = transition(batchMachine, before as never, failed(0, { attempt: 1, at: 1120 }) as never);
    const texts = raw.map((action) => {
      const params = action.params as { text?: string; event?: { text?: string } } | undefined;
      return action.type === 'settleTask' ? params?.text : params?.event?.text;
    });
    expect(texts.filter(Boolean)).toEqual([escalatedText('t0', 'intensity'), escalatedText('t0', 'intensity')]);
  });

  it('escalatesClass: an escalation from below escalates at once; the batch settles once its tasks have', () => {
    let [snapshot, actions] = batches.step(start(), failed(1, { failure: 'escalation' }));
    expect(snapshot.value).toBe('escalated');
    expect(actions.at(-1)).toBe('escalate t1 escalation');
    // Further failures decide nothing; settles are counted until the last one.
    expect(batches.step(snapshot, failed(2))[1]).toEqual([]);
    for (const i of [0, 1, 2]) [snapshot, actions] = batches.step(snapshot, settledEvent(i, 'cancelled'));
    expect(actions).toEqual(['report BATCH.SETTLED b']);
    expect(snapshot.value).toBe('settled');
  });
});

describe('restored from a journal: the batch and its tasks go on from the restarts made before', () => {
  const restored = (extra: Partial<BatchSpec>, second = task(1)) => {
    const { tasks: queue, ...shape } = { ...batch('b', [task(0), second], 2), ...extra };
    const [spawned] = batches.start({ ...settings, maxRestarts: 3, batch: { ...shape, size: 2 } });
    return batches.step(spawned, { type: 'QUEUE', tasks: queue })[0];
  };
  const failed = (i: number, attempt: number, at = 1000) => ({
    type: 'TASK.FAILED',
    taskId: `t${i}`,
    attempt,
    failure: 'model',
    text: 'broke',
    at,
  });

  it("a task's run number goes on: its earlier run's failure is stale, its backoff doubles from there", () => {
    const snapshot = restored({}, { ...task(1), attempt: 1 });
    expect(batches.step(snapshot, failed(1, 0))[1]).toEqual([]);
    expect(batches.step(snapshot, failed(1, 1))[1]).toEqual(['verdict restart after 200', 'tell t1 RESTART after 200']);
  });

  it('the intensity window goes on from the restarts before the crash', () => {
    const intensity = { maxRestarts: 1, withinMs: 100 };
    const [snapshot, actions] = batches.step(restored({ supervision: { intensity }, restarts: [950] }), failed(0, 0));
    expect(snapshot.value).toBe('escalated');
    expect(actions.at(-1)).toBe('escalate t0 intensity');
  });

  it('a task starts at its run number, naming the sibling whose failure restarted it', () => {
    const input = { ...settings, task: { ...task(1), attempt: 2, cause: 't0' }, batchId: 'b', background: false };
    expect(tasks.start(input)[1][0]).toBe('prepare a1#2 (cause t0)');
  });

  it("a task started again in its restart's backoff waits out what is left, with no agent, then runs", () => {
    const waiting = { ...task(1), attempt: 2, cause: 't0', backoffMs: 120 };
    const input = { ...settings, task: waiting, batchId: 'b', background: false };
    const [snapshot, actions] = tasks.start(input);
    expect(snapshot.value).toBe('restarting');
    expect(snapshot.context).toMatchObject({ attempt: 2, alive: false, delayMs: 120 });
    expect(actions).toEqual(['restart a1#2 (cause t0)', 'raise xstate.after.backoff.task.restarting after 120']);
    const [, ran] = tasks.step(snapshot, { type: 'xstate.after.backoff.task.restarting' });
    expect(ran).toEqual(['prepare a1#2 (cause t0)', 'spawn subagent.a1', 'send subagent.a1 PROMPT']);
    // Cancelled meanwhile, it settles with no agent to keep.
    const [, cancelled] = tasks.step(snapshot, { type: 'CANCEL', status: 'cancelled', text: 'stop' });
    expect(cancelled).toEqual(['settle t1 cancelled', 'report TASK.SETTLED t1 cancelled']);
  });

  it('a run ordered as a resume before the crash starts as one, from the history it has', () => {
    const input = { ...settings, task: { ...task(1), attempt: 1, resume: true }, batchId: 'b', background: false };
    expect(tasks.start(input)[1][0]).toBe('prepare a1#1 resumed');
  });
});

describe('task machine: restarted by a sibling, resumed, restarted again', () => {
  const start = () => tasks.start({ ...settings, task: task(1), batchId: 'b', background: false });
  /** Its agent's turn ended. */
  const done = (outcome: string, text: string, failure?: FailureClass) => ({
    type: 'CHILD.DONE',
    agentId: 'a1',
    taskId: 't1',
    outcome,
    text,
    ...(failure ? { failure } : {}),
  });

  it("a sibling's failure restarts a running task: its agent is stopped, and the restart names the sibling", () => {
    let [snapshot, actions] = tasks.step(start()[0], { type: 'RESTART', delayMs: 50, cause: 't0' });
    expect(snapshot.value).toBe('restarting');
    expect(actions).toEqual([
      'stop subagent.a1',
      'release a1',
      'restart a1#1 (cause t0)',
      'raise xstate.after.backoff.task.restarting after 50',
    ]);
    expect(snapshot.context.cause).toBe('t0');
    // A second sibling failing meanwhile counts one more attempt and waits again.
    [snapshot, actions] = tasks.step(snapshot, { type: 'RESTART', delayMs: 80, cause: 't2' });
    expect(actions).toEqual(['restart a1#2 (cause t2)', 'raise xstate.after.backoff.task.restarting after 80']);
    [snapshot, actions] = tasks.step(snapshot, { type: 'xstate.after.backoff.task.restarting' });
    expect(actions).toEqual(['prepare a1#2 (cause t2)', 'spawn subagent.a1', 'send subagent.a1 PROMPT']);
    // The restarted agent is alive: its task settles keeping it, for a resume.
    [, actions] = tasks.step(snapshot, done('completed', 'ok'));
    expect(actions).toEqual(['settle t1 completed kept', 'report TASK.SETTLED t1 completed']);
  });

  it('a restart ordered while a resume waits starts afresh from the prompt, not from the history', () => {
    let [snapshot] = tasks.step(start()[0], done('failed', 'no'));
    [snapshot] = tasks.step(snapshot, { type: 'RESUME', delayMs: 10 });
    let actions: string[];
    [snapshot, actions] = tasks.step(snapshot, { type: 'RESTART', delayMs: 10, cause: 't0' });
    expect(actions).toEqual(['restart a1#2 (cause t0)', 'raise xstate.after.backoff.task.restarting after 10']);
    [, actions] = tasks.step(snapshot, { type: 'xstate.after.backoff.task.restarting' });
    expect(actions[0]).toBe('prepare a1#2 (cause t0)');
  });

  it('RESUME starts it again from the history it has (prepare with resume)', () => {
    let [snapshot] = tasks.step(start()[0], done('failed', 'no'));
    [snapshot] = tasks.step(snapshot, { type: 'RESUME', delayMs: 0 });
    expect(snapshot.context).toMatchObject({ resume: true, attempt: 1 });
    expect(tasks.step(snapshot, { type: 'xstate.after.backoff.task.restarting' })[1][0]).toBe('prepare a1#1 resumed');
  });

  it('a spent budget or a guardrail is a failure too: the batch decides; GIVE_UP settles with its status', () => {
    let [snapshot, actions] = tasks.step(start()[0], done('interrupted', 'The subagent stopped: budget', 'budget'));
    expect(actions).toEqual(['report TASK.FAILED t1 budget#0']);
    [snapshot, actions] = tasks.step(snapshot, { type: 'GIVE_UP' });
    expect(actions).toEqual(['settle t1 interrupted kept', 'report TASK.SETTLED t1 interrupted']);
  });

  it('a cancel while it waits for its verdict settles it with its failure', () => {
    let [snapshot] = tasks.step(start()[0], done('failed', 'broke', 'model'));
    let actions: string[];
    [snapshot, actions] = tasks.step(snapshot, { type: 'CANCEL', status: 'cancelled', text: 'stop' });
    expect(actions).toEqual(['settle t1 failed kept', 'report TASK.SETTLED t1 failed']);
    expect(snapshot.context.result).toEqual({ status: 'failed', text: 'broke' });
    // A settled task ignores a late verdict.
    expect(tasks.step(snapshot, { type: 'RESTART', delayMs: 0 })[1]).toEqual([]);
  });
});
