import type { AgentCommand, ModelWorkerRequest, WorkerReply } from '../../../machines/agent/index.js';
import { costOf } from '../../context/index.js';
import {
  type AssistantMessage,
  callIdentity,
  checkModelAnswer,
  describeThrown,
  ModelError,
  type ModelEvent,
  type ModelRequest,
  type ToolCallPart,
  toModelError,
  toolCallsOf,
} from '../../protocol/index.js';
import { exhaustionError, viewAfter } from '../budget/budget.js';
import { type AgentEnv, reportInternalError } from '../env/env.js';
import type { HookRunner } from '../env/hooks.js';
import { type ModelCall, partialMessage } from '../env/in-flight.js';
import { retryDelay } from '../env/retry.js';
import type { ToolResultOutbox } from './tool-result-outbox.js';
import { runValidatedAnswer, validateAnswer } from './tool-worker.js';

type ModelDone = Extract<WorkerReply, { type: 'MODEL_DONE' }>;

/**
 * The model half of the agent's worker (worker.ts): takes MODEL_REQUEST, streams the answer (deltas go to the event
 * bus, never through the machine) and replies MODEL_DONE or MODEL_ERROR once, after retries.
 */
export function requestModel(
  env: AgentEnv,
  request: ModelWorkerRequest,
  sendBack: (reply: WorkerReply | AgentCommand) => void,
  outbox: ToolResultOutbox,
): void {
  void callModel(env, request, sendBack, outbox);
}

/** What a replay injects after a final answer is no wake-up (the agent is running): its input id is never used. */
const REPLAYED = 'notify.replayed';

/** The answer for the machine, priced where the model's prices are known (for observers: the inspector's usage table). */
function answered(
  env: AgentEnv,
  turn: number,
  step: number,
  message: AssistantMessage,
  calls: ToolCallPart[],
): ModelDone {
  const cost = costOf(message.usage, env.context.prices);
  // Its tool calls are validated as it is given, so that the machine need not ask (see validateAnswer).
  const validated = validateAnswer(env, message, calls);
  const done: ModelDone = { type: 'MODEL_DONE', turn, step, message, cost, validated };
  // The budget as it stands once this answer is charged, for the inspector's usage table.
  if (env.budget) done.budget = viewAfter(env.budget.view(), message.usage, cost);
  return done;
}

/** Gives the machine the answer; calls nothing can refuse run once it has taken it. */
function answer(
  env: AgentEnv,
  turn: number,
  step: number,
  message: AssistantMessage,
  sendBack: (reply: WorkerReply) => void,
  outbox: ToolResultOutbox,
) {
  const calls = toolCallsOf(message);
  const done = answered(env, turn, step, message, calls);
  sendBack(done);
  if (done.validated?.allowed) runValidatedAnswer(env, calls, done.validated, outbox);
}

/**
 * One request, answered once after retries. Each attempt is streamed here rather than in a function of its own,
 * the reply is sent from here rather than from a `.then`, and a failure of our own is caught here rather than by a
 * `.catch`: every async function awaited and every `.then` is a promise and a microtask hop per step, on the path
 * every step takes.
 */
async function callModel(
  env: AgentEnv,
  request: ModelWorkerRequest,
  sendBack: (reply: WorkerReply | AgentCommand) => void,
  outbox: ToolResultOutbox,
): Promise<void> {
  try {
    const { turn, step } = request;
    const recorded = env.journal.answer(turn, step);
    if (recorded) {
      // A resumed or replayed step whose answer is in the journal: the model is not asked again (and a budget that
      // ran out meanwhile is judged once the replay has caught up: the journaled steps happened).
      if (env.bus.wants('message_start')) env.emit({ type: 'message_start', role: 'assistant', attempt: 1 });
      if (env.stopped) return;
      // A final answer the turn went on after (a steer or a notification arrived meanwhile): they are injected
      // first, so that the replay goes round too instead of ending the turn.
      const after = recorded.content.some((part) => part.type === 'tool_call')
        ? undefined
        : env.journal.joinedAt(env.transcript.length + 1);
      if (after) sendBack({ type: 'NOTIFY', messages: after, inputId: REPLAYED });
      answer(env, turn, step, recorded, sendBack, outbox);
      return;
    }
    // A step does not start on a spent budget (an ancestor's may have run out before this turn began).
    const over = env.budget?.exhaustion();
    if (over) {
      if (!env.stopped) sendBack({ type: 'BUDGET_EXHAUSTED', turn, error: exhaustionError(over) });
      return;
    }
    // Its subagents escalated a failure (see Tree.escalate): the turn ends failed with the cause, once.
    const escalation = env.escalation;
    if (escalation) {
      env.escalation = undefined;
      if (!env.stopped) sendBack({ type: 'MODEL_ERROR', turn, step, error: escalation });
      return;
    }
    // A turn's first request evaluates the system prompt's function parts (synchronously when none is async).
    if (env.systemPrompt.isStale(turn)) {
      const refreshed = env.systemPrompt.refresh(env.agentId, turn);
      if (typeof refreshed === 'object') await refreshed;
      if (env.stopped) return;
    }
    let modelRequest = env.buildRequest(env.outputSpecFor(request.inputId)?.jsonSchema);
    // Context (src/context): a request past the compaction threshold goes back to the machine, which compacts.
    const full = request.mayCompact ? env.context.overThreshold(modelRequest, env.transcript.messages) : undefined;
    if (full) {
      if (!env.stopped) sendBack({ type: 'CONTEXT_FULL', turn, step, ...full });
      return;
    }
    const call = env.openModelCall();
    const { bus } = env;
    const model = env.settings.model;
    const { hooks } = env.settings;
    try {
      if (hooks?.prepares(step)) {
        const prepared = await prepareWithHooks(env, hooks, call, request, modelRequest, sendBack);
        if (!prepared) return;
        modelRequest = prepared;
      }
      for (let attempt = 1; ; attempt++) {
        let message: AssistantMessage | undefined;
        try {
          call.text = '';
          call.reasoning = '';
          call.streamedCalls = undefined;
          call.streaming = true;
          if (bus.wants('message_start')) env.emit({ type: 'message_start', role: 'assistant', attempt });
          for await (const event of model.stream(modelRequest, call.controller.signal)) {
            if (call.closed) break;
            if (event.type === 'done') {
              call.streaming = false;
              // A custom model's answer is checked here, at the boundary: a malformed one would otherwise throw
              // inside the machine's guards and take the actor down with every prompt waiting on it.
              const checked = checkModelAnswer(event.message, model, env.transcript.callIds());
              if ('problem' in checked) {
                throw new ModelError({ code: 'bad_response', message: checked.problem, provider: model.provider });
              }
              message = checked.message;
              for (const repair of checked.reused) {
                env.emit({ type: 'context_repair', repair: { kind: 'call_id_reused', ...repair }, strict: false });
              }
              break;
            }
            onDelta(env, call, event);
          }
          if (message === undefined) {
            if (call.closed) throw new ModelError({ code: 'aborted', message: 'The model call was aborted' });
            throw new ModelError({
              code: 'bad_response',
              message: 'The model stream ended without a final message',
              provider: model.provider,
            });
          }
        } catch (thrown) {
          if (call.closed) return; // interrupted: the interrupt already reported the discarded attempt
          const error = toModelError(thrown, model.provider);
          // A history or media refusal is sent once more, repaired (src/context).
          const repaired = env.context.retry(error, modelRequest, env.transcript.messages);
          if (repaired) {
            discardAttempt(env, call, 'retry');
            modelRequest = repaired;
            continue;
          }
          const delayMs = retryDelay(error, attempt, env.settings.retry, env.settings.retry.random);
          if (delayMs === undefined) {
            const reply = fail(env, call, turn, step, error);
            if (!env.stopped) sendBack(reply);
            return;
          }
          discardAttempt(env, call, 'retry');
          env.emit({ type: 'model_retry', attempt, delayMs, error: error.toJSON() });
          try {
            await env.settings.retry.sleep(delayMs, call.controller.signal);
          } catch {
            return; // interrupted while waiting
          }
          continue;
        }
        if (call.closed) return;
        if (hooks?.reviews) {
          const reviewed = await reviewWithHooks(env, hooks, call, request, message, sendBack);
          if (!reviewed) return;
          message = reviewed;
        }
        call.closed = true;
        if (!env.stopped) answer(env, turn, step, message, sendBack, outbox);
        return;
      }
    } finally {
      env.closeModelCall(call);
    }
  } catch (error) {
    lastResort(env, request, sendBack, error);
  }
}

/** A streamed event before `done`: kept in the partial answer, and published when somebody listens. */
function onDelta(env: AgentEnv, call: ModelCall, event: Exclude<ModelEvent, { type: 'done' }>): void {
  const wanted = env.bus.wants('message_update');
  switch (event.type) {
    case 'text_delta':
      call.text += event.delta;
      if (wanted) env.emitDelta({ type: 'text', delta: event.delta });
      break;
    case 'reasoning_delta':
      call.reasoning += event.delta;
      if (wanted) env.emitDelta({ type: 'reasoning', delta: event.delta });
      break;
    case 'tool_call_start': {
      const toolCallId = streamedCall(env, call, event.id);
      if (wanted) env.emitDelta({ type: 'tool_call_start', toolCallId, toolName: event.name });
      break;
    }
    case 'tool_call_delta':
      if (wanted)
        env.emitDelta({
          type: 'tool_call',
          toolCallId: call.streamedCalls?.byProvider.get(event.id) ?? event.id,
          delta: event.delta,
        });
      break;
    case 'tool_call_end':
      if (wanted)
        env.emitDelta({ type: 'tool_call_end', toolCallId: call.streamedCalls?.byProvider.get(event.id) ?? event.id });
      break;
    case 'usage':
      break;
  }
}

/**
 * The identity a streamed tool call gets, by the rule its final message's calls get theirs (checkModelAnswer): a
 * provider id that the history or an earlier call of this answer holds is given a suffix, so that the call's stream
 * events, its execution and its result all name it alike.
 */
function streamedCall(env: AgentEnv, call: ModelCall, providerId: string): string {
  call.streamedCalls ??= { byProvider: new Map(), ids: new Set() };
  const streamed = call.streamedCalls;
  const history = env.transcript.callIds();
  // A fresh id, the usual case, is checked without a closure: one made per call dies with it, and a collection
  // drops its optimised code, which the next calls compile again.
  const fresh = !history.has(providerId) && !streamed.ids.has(providerId);
  const id = fresh
    ? providerId
    : callIdentity(providerId, (candidate) => history.has(candidate) || streamed.ids.has(candidate));
  streamed.byProvider.set(providerId, id);
  streamed.ids.add(id);
  return id;
}

/**
 * `callModel` catches everything a model can throw; this is for a bug of our own (or a listener of the bus that
 * throws past its guard). The call must still be answered, or the turn would wait for it forever; a reply for a
 * call that is no longer current is dropped by the machine.
 */
function lastResort(
  env: AgentEnv,
  request: ModelWorkerRequest,
  sendBack: (reply: WorkerReply) => void,
  thrown: unknown,
): void {
  reportInternalError(`the model worker of agent ${env.agentId} failed`, thrown);
  const error = new ModelError({ code: 'unknown', message: `The model call failed: ${describeThrown(thrown)}` });
  if (!env.stopped) sendBack({ type: 'MODEL_ERROR', turn: request.turn, step: request.step, error: error.toJSON() });
}

function discardAttempt(env: AgentEnv, call: ModelCall, why: 'retry' | 'error'): void {
  if (!call.streaming) return;
  call.streaming = false;
  if (env.bus.wants('message_end')) {
    env.emit({ type: 'message_end', message: partialMessage(call, env.settings.model), discarded: why });
  }
}

function fail(env: AgentEnv, call: ModelCall, turn: number, step: number, error: ModelError): WorkerReply {
  discardAttempt(env, call, 'error');
  call.closed = true;
  env.lastModelError = error;
  return { type: 'MODEL_ERROR', turn, step, error: error.toJSON() };
}

/**
 * The step waits in `preparing` while the turn's input checks (first step) and the beforeModelCall hooks run;
 * undefined when they failed (the failure was sent) or the call was closed meanwhile.
 */
async function prepareWithHooks(
  env: AgentEnv,
  hooks: HookRunner,
  call: ModelCall,
  { turn, step }: ModelWorkerRequest,
  modelRequest: ModelRequest,
  sendBack: (reply: WorkerReply) => void,
): Promise<ModelRequest | undefined> {
  if (!env.stopped) sendBack({ type: 'PREPARING', turn, step });
  let prepared: ModelRequest;
  try {
    prepared = await hooks.prepare(modelRequest, env.info, step === 1 ? env.turnInput() : undefined);
  } catch (error) {
    if (!call.closed && !env.stopped) sendBack(hookFailure(call, turn, step, error));
    return undefined;
  }
  if (call.closed) return undefined;
  if (!env.stopped) sendBack({ type: 'PREPARED', turn, step });
  return prepared;
}

/** The answer waits in `reviewing` while the afterModelCall hooks change or reject it. */
async function reviewWithHooks(
  env: AgentEnv,
  hooks: HookRunner,
  call: ModelCall,
  { turn, step }: ModelWorkerRequest,
  message: AssistantMessage,
  sendBack: (reply: WorkerReply) => void,
): Promise<AssistantMessage | undefined> {
  if (!env.stopped) sendBack({ type: 'REVIEWING', turn, step });
  let reviewed: AssistantMessage;
  try {
    reviewed = await hooks.review(message, env.info);
  } catch (error) {
    if (!call.closed && !env.stopped) sendBack(hookFailure(call, turn, step, error));
    return undefined;
  }
  return call.closed ? undefined : reviewed;
}

/** A model hook failed closed or a guardrail tripped: the turn ends with the hook's own error code. */
function hookFailure(call: ModelCall, turn: number, step: number, error: unknown): WorkerReply {
  call.closed = true;
  const code = (error as { code?: unknown } | null)?.code;
  return {
    type: 'MODEL_ERROR',
    turn,
    step,
    error: {
      name: error instanceof Error ? error.name : 'HookFailed',
      code: typeof code === 'string' ? code : 'hook_failed',
      message: describeThrown(error),
    },
  };
}
