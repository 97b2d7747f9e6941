import { enqueueActions, fromPromise, sendParent, sendTo } from 'xstate';
import { agentMachine, type CompactorInput } from '../../../machines/agent/index.js';
import {
  type BatchSettled,
  batchMachine,
  batchSystemId,
  leafPoolSystemId,
  POOL_DEPTH,
  type PoolStart,
  poolMachine,
  type SupervisorInput,
  supervisorMachine,
  type TaskFailed,
  type TaskSettled,
  taskMachine,
} from '../../../machines/supervisor/index.js';
import {
  BudgetExhausted,
  emptyUsage,
  GuardrailTripped,
  HookFailed,
  lastAssistant,
  ModelError,
  OutputValidationError,
  type ToolResultPart,
  type TurnError,
  textOf,
} from '../../protocol/index.js';
import type { AgentEnv, RunResult } from '../env/env.js';
import { envOf } from '../env/registry.js';
import { startTurnBudget } from '../step/turn-budget.js';
import { workerActions } from '../step/worker.js';
import { agentIdle, effectsOf } from '../tree/effects.js';
import type { FailureInHand } from '../tree/verdicts.js';

type Context = import('../../../machines/agent/index.js').AgentContext;

/** Compacts what the agent sends (src/context): a summary call, then a new view of the transcript. */
const compactor = fromPromise<void, CompactorInput>(async ({ input, system, signal }) => {
  const env = envOf(system, input.agentId);
  const request = env.buildRequest(env.outputSpecFor(env.currentInputId)?.jsonSchema);
  const cause = input.reason === 'overflow' ? env.lastModelError : undefined;
  await env.context.compact(input.reason, env.transcript.messages, request, signal, cause);
});

/**
 * The agent machine declares no supervisor actor (it does not import the supervisor machine), so XState cannot
 * type this spawn against its actors; the logic and the input are checked here instead.
 */
type SpawnSupervisor = (
  logic: typeof runtimeSupervisorMachine,
  options: { id: 'supervisor'; input: SupervisorInput },
) => void;

/**
 * The one composition of the runtime: the agent machine and the supervision machines (supervisor, batch, pool,
 * task) joined to their effects, each provided once for every actor of its kind (a `provide` per agent would
 * rebuild the machine each time). Each implementation finds its agent's runtime (AgentEnv) or its tree's effects (TreeEffects)
 * through the actor system.
 *
 * The machines are mutually recursive: an agent spawns its supervisor, whose batches' tasks spawn agents. No
 * machine file imports the agent's or the other way round; the knot is tied here, as a fixed point: the agent's
 * `spawnSupervisor` is an action whose body refers to `runtimeSupervisorMachine` (defined below, read when the
 * action runs), and the agent of every task (and every member) is `runtimeAgentMachine`. Nothing is changed after
 * `provide`, and importing any public entry point gives every machine, whole.
 */
export const runtimeAgentMachine = agentMachine.provide({
  actors: { compactor },
  actions: {
    ...workerActions,
    // An action runs before the snapshot it makes is current: what it publishes is placed by its context.
    startRun: ({ context, system }) => envOf(system, context.agentId).emit({ type: 'agent_start' }, context),
    endRun: ({ context, system }) => {
      const env = envOf(system, context.agentId);
      env.emit({ type: 'agent_end' }, context);
      agentIdle(system, context.agentId, context.stopReason, context.error);
    },
    startTurn: ({ context, system, self }) => {
      const env = envOf(system, context.agentId);
      const input = context.current;
      if (!input) return;
      env.turnUsage = emptyUsage();
      const pending = env.pending.get(input.inputId);
      env.turnStart = env.transcript.length;
      startTurnBudget(env, self, context.turn, input.inputId, pending?.budget);
      env.emit({ type: 'turn_start', inputId: input.inputId }, context);
      for (const message of input.messages) env.append(message, context);
    },
    endTurn: ({ context, system }) => endTurn(envOf(system, context.agentId), context),
    startStep: ({ context, system }, { step }) => {
      const env = envOf(system, context.agentId);
      // Its step is counted after it (`nextStep`): its events are placed at the step it opens.
      const at = { turn: context.turn, step };
      // The step boundary: what the live tool set changed since the last step applies from here.
      if (env.liveTools) env.tools = env.liveTools.forStep(env.info, at.turn, at.step);
      env.emit({ type: 'step_start' }, at);
      for (const message of context.injections) env.append(message, at);
      // A replay (a member or subagent, which have no snapshot) passes the boundary where a steer or a
      // notification joined.
      const joined = env.journal.joinedAt(env.transcript.length);
      if (joined) for (const message of joined) env.append(message, at);
    },
    endStep: ({ context, system }) => envOf(system, context.agentId).emit({ type: 'step_end' }, context),
    recordAssistant: ({ context, system, event }) => {
      const { message } = event as Extract<typeof event, { type: 'MODEL_DONE' }>;
      const env = envOf(system, context.agentId);
      env.append(message, context);
      env.addUsage(message.usage, context);
      // Spending counts against the turn's budget and every ancestor's; one may run out here (BUDGET_EXHAUSTED).
      env.budget?.charge(message.usage, (event as { cost?: number }).cost);
    },
    recordToolResults: ({ context, system }) => {
      if (context.calls.length === 0) return;
      const env = envOf(system, context.agentId);
      env.closeApprovals();
      env.parsedArgs.clear();
      // A loop, not flatMap's callback: a closure made per step dies with it, and a collection drops its code.
      const results: ToolResultPart[] = [];
      for (const state of context.calls) if (state.result) results.push(state.result);
      env.append({ role: 'tool', content: results }, context);
    },
    announceApprovals: ({ context, system, self }) => {
      const env = envOf(system, context.agentId);
      for (const state of context.calls) {
        if (state.status !== 'awaiting') continue;
        env.awaitApproval(self, state.call.id);
        env.emit({ type: 'approval_requested', ...env.describeCall(state.call) }, context);
      }
    },
    abortInFlight: ({ context, system }) => envOf(system, context.agentId).abortInFlight(context),
    settleDropped: ({ context, system }, { inputIds }) => {
      const env = envOf(system, context.agentId);
      for (const inputId of inputIds) settleDroppedInput(env, inputId);
    },
    announceBudgetExhausted: ({ context, system }) => {
      const env = envOf(system, context.agentId);
      const over = env.budget?.exhaustion();
      if (over) env.emit({ type: 'budget_exhausted', ...over }, context);
    },
    spawnSupervisor: enqueueActions(({ context, system, enqueue }) => {
      const spawn = enqueue.spawnChild as unknown as SpawnSupervisor;
      spawn(runtimeSupervisorMachine, {
        id: 'supervisor',
        input: effectsOf(system).supervisorInput(context.agentId, true),
      });
    }),
    supervisorFailed: ({ context, event }) =>
      console.error(
        `[troupe] the supervisor of agent ${context.agentId} failed:`,
        (event as { error?: unknown }).error,
      ),
  },
});

/**
 * A task joined to its tree's runtime: the task's lifecycle facts (started, restarted, settled) and its agent's
 * release go to the tree's effects, which record them; its agent is `runtimeAgentMachine`. Each effect is guarded: a bug here
 * must fail one task, never put the task (and its pools, batch and supervisor) in error.
 */
const runtimeTaskMachine = taskMachine.provide({
  actors: { subagent: runtimeAgentMachine },
  actions: {
    prepareTask: ({ context, system, self }, params) =>
      guarded(() => effectsOf(system).prepareTask(context.ownerId, self, params)),
    settleTask: ({ context, system }, params) => guarded(() => effectsOf(system).settleTask(context.ownerId, params)),
    releaseChild: ({ system, self }, params) => guarded(() => effectsOf(system).releaseChild(params.agentId, self)),
    notifyOwner: ({ context, system }, params) => guarded(() => effectsOf(system).notifyOwner(context.ownerId, params)),
    announceRestart: () => {},
    // Its batch is alive as long as the task is (it is the task's ancestor), so the look-up always finds it.
    reportSettled: sendTo(
      ({ context, system }) => system.get(batchSystemId(context.batchId)),
      (_, params: TaskSettled) => params,
    ),
    // The batch's intensity window is measured on when failures happen: the runtime's clock stamps it here.
    reportFailed: sendTo(
      ({ context, system }) => system.get(batchSystemId(context.batchId)),
      (_, params: Omit<TaskFailed, 'at'>) => ({ ...params, at: Date.now() }),
    ),
  },
});

/** A pool of depth `depth` joined to the runtime: its children are pools one level down, or (at 0) tasks. */
const runtimePool = (depth: number): typeof poolMachine =>
  poolMachine.provide({
    actors: depth === 0 ? { task: runtimeTaskMachine } : { task: runtimeTaskMachine, pool: runtimePool(depth - 1) },
  });

/** A batch settles the tasks that never started with the same effects as a task actor. */
const runtimeBatchMachine = batchMachine.provide({
  actors: { pool: runtimePool(POOL_DEPTH) },
  actions: {
    settleTask: ({ context, system }, params) => guarded(() => effectsOf(system).settleTask(context.ownerId, params)),
    notifyOwner: ({ context, system }, params) => guarded(() => effectsOf(system).notifyOwner(context.ownerId, params)),
    reportSettled: sendParent((_, params: BatchSettled) => params),
    // The pool exists (the batch started a task in it before) and lives as long as it holds a task.
    startInLeaf: sendTo(
      ({ context, system }, params) => system.get(leafPoolSystemId(context.batchId, params.leaf)),
      (_, params: { event: PoolStart }) => params.event,
    ),
    tellTask: ({ system }, params) => guarded(() => effectsOf(system).tellTask(params.taskId, params.event)),
    // Verdicts answer the failure in hand (the event): the tree's journal keeps each as a fact.
    recordVerdict: ({ context, event, system }, params) =>
      guarded(() => effectsOf(system).verdict(failedIn(context, event), params)),
    reportEscalation: ({ context, event, system }, params) =>
      guarded(() => effectsOf(system).escalate(context.ownerId, params, failedIn(context, event))),
  },
});

/** The supervisor machine joined to its tree's runtime; its batches' agents are `runtimeAgentMachine` agents. */
export const runtimeSupervisorMachine = supervisorMachine.provide({
  actors: { batch: runtimeBatchMachine, subagent: runtimeAgentMachine },
  actions: {
    prepareMember: ({ system, self }, params) => guarded(() => effectsOf(system).prepareMember(params.agentId, self)),
    releaseChild: ({ system, self }, params) => guarded(() => effectsOf(system).releaseChild(params.agentId, self)),
    stopTasks: ({ system }, params) => guarded(() => effectsOf(system).stopTasks(params.ownerId)),
  },
});

/** The failure a batch's verdict answers, with the batch it is of. */
function failedIn(context: { ownerId: string; batchId: string }, event: { type: string }): FailureInHand | undefined {
  if (event.type !== 'TASK.FAILED') return undefined;
  return { ownerId: context.ownerId, batchId: context.batchId, failed: event as TaskFailed };
}

function guarded(effect: () => void): void {
  try {
    effect();
  } catch (error) {
    console.error('[troupe] a supervisor effect failed:', error);
  }
}

function endTurn(env: AgentEnv, context: Context): void {
  env.budget?.close();
  const input = context.current;
  const stopReason = context.stopReason ?? 'completed';
  const usage = { ...env.turnUsage };
  env.emit(
    {
      type: 'turn_end',
      inputId: input?.inputId ?? '',
      stopReason,
      usage,
      ...(context.error ? { error: context.error } : {}),
    },
    context,
  );
  if (!input) return;
  const pending = env.pending.get(input.inputId);
  // afterTurn observes every turn that ends, as beforeTurn sees every turn that starts: a turn no caller awaits (one
  // a background result or a steer to an idle agent opened) has no pending entry, but it is a turn all the same.
  const observed = env.settings.hooks?.observesTurns === true;
  if (!pending && !observed) return;
  if (pending) env.pending.delete(input.inputId);
  const messages = pending?.outputOnly && !observed ? [] : env.transcript.since(env.turnStart);
  const result: RunResult = { stopReason, messages, text: textOf(lastAssistant(messages)), usage };
  if (pending?.output !== undefined) result.output = pending.output;
  const error = turnError(env, context);
  if (error) result.error = error;
  if (observed) env.settings.hooks?.afterTurn(result, env.info);
  if (!pending) return;
  env.journal.stored(pending.resolve, result);
}

/** What the caller of an input that never started hears: interrupted, with nothing added to the history. */
export function droppedResult(): RunResult {
  return { stopReason: 'interrupted', messages: [], text: '', usage: emptyUsage() };
}

/** Input `inputId` leaves without a turn: the drop is journaled, then its caller hears it. */
export function settleDroppedInput(env: AgentEnv, inputId: string): void {
  env.journal.dropped(inputId);
  // An input the session submitted again after a restart has no caller here.
  const pending = env.pending.get(inputId);
  if (!pending) return;
  env.pending.delete(inputId);
  env.journal.stored(pending.resolve, droppedResult());
}

function turnError(env: AgentEnv, context: Context): TurnError | undefined {
  const serialized = context.error;
  if (!serialized) return undefined;
  if (serialized.code === 'output_invalid')
    return new OutputValidationError(serialized.message, context.outputAttempts + 1);
  if (serialized.code === 'guardrail_tripped') return new GuardrailTripped(serialized.message);
  if (serialized.code === 'hook_failed') return new HookFailed(serialized.message);
  if (serialized.code === 'budget_exhausted') return new BudgetExhausted(serialized.message);
  const known = env.lastModelError;
  if (known && known.code === serialized.code && known.message === serialized.message) return known;
  return new ModelError({
    code: serialized.code as ModelError['code'],
    message: serialized.message,
    status: serialized.status,
  });
}
