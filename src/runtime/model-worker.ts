import { fromCallback } from 'xstate';
import type { ModelWorkerRequest, WorkerInput, WorkerReply } from '../../machines/agent/index.js';
import { type AssistantMessage, ModelError, toModelError } from '../protocol/index.js';
import { type AgentEnv, envOf, type ModelCall, PartialMessage } from './env.js';
import { retryDelay } from './retry.js';
import { sleep } from './sleep.js';

/**
 * The agent's model worker: lives as long as a run, takes MODEL_REQUEST, streams the answer (deltas go to the
 * event bus, never through the machine) and replies MODEL_DONE or MODEL_ERROR once, after retries.
 */
export const modelWorker = fromCallback<ModelWorkerRequest, WorkerInput>(({ input, system, receive, sendBack }) => {
  const env = envOf(system, input.agentId);
  receive((request) => {
    void callModel(env, request).then((reply) => {
      if (reply && !env.stopped) sendBack(reply);
    });
  });
  return () => env.abortInFlight();
});

async function callModel(env: AgentEnv, request: ModelWorkerRequest): Promise<WorkerReply | undefined> {
  const call: ModelCall = {
    controller: new AbortController(),
    closed: false,
    streaming: false,
    partial: new PartialMessage(),
  };
  env.modelCall = call;
  const { turn, step } = request;
  const modelRequest = env.buildRequest(env.outputSpecFor(request.inputId)?.jsonSchema);

  for (let attempt = 1; ; attempt++) {
    try {
      const message = await streamAttempt(env, call, modelRequest, attempt);
      if (call.closed) return undefined;
      call.closed = true;
      return { type: 'MODEL_DONE', turn, step, message };
    } catch (thrown) {
      if (call.closed) return undefined; // interrupted: the interrupt already reported the discarded attempt
      const error = toModelError(thrown, env.settings.model.provider);
      const delayMs = retryDelay(error, attempt, env.settings.retry);
      if (delayMs === undefined) return fail(env, call, turn, step, error);
      discardAttempt(env, call, 'retry');
      env.emit({ type: 'model_retry', attempt, delayMs, error: error.toJSON() });
      try {
        await sleep(delayMs, call.controller.signal);
      } catch {
        return undefined; // interrupted while waiting
      }
    }
  }
}

async function streamAttempt(
  env: AgentEnv,
  call: ModelCall,
  request: ReturnType<AgentEnv['buildRequest']>,
  attempt: number,
): Promise<AssistantMessage> {
  const { bus } = env;
  const partial = new PartialMessage();
  call.partial = partial;
  call.streaming = true;
  if (bus.wants('message_start')) env.emit({ type: 'message_start', role: 'assistant', attempt });
  for await (const event of env.settings.model.stream(request, call.controller.signal)) {
    if (call.closed) break;
    switch (event.type) {
      case 'text_delta':
        partial.text += event.delta;
        if (bus.wants('message_update'))
          env.emit({ type: 'message_update', delta: { type: 'text', delta: event.delta } });
        break;
      case 'reasoning_delta':
        partial.reasoning += event.delta;
        if (bus.wants('message_update')) {
          env.emit({ type: 'message_update', delta: { type: 'reasoning', delta: event.delta } });
        }
        break;
      case 'tool_call_start':
        if (bus.wants('message_update')) {
          env.emit({
            type: 'message_update',
            delta: { type: 'tool_call_start', toolCallId: event.id, toolName: event.name },
          });
        }
        break;
      case 'tool_call_delta':
        if (bus.wants('message_update'))
          env.emit({ type: 'message_update', delta: { type: 'tool_call', toolCallId: event.id, delta: event.delta } });
        break;
      case 'tool_call_end':
        if (bus.wants('message_update'))
          env.emit({ type: 'message_update', delta: { type: 'tool_call_end', toolCallId: event.id } });
        break;
      case 'usage':
        break;
      case 'done':
        call.streaming = false;
        return event.message;
    }
  }
  if (call.closed) throw new ModelError({ code: 'aborted', message: 'The model call was aborted' });
  throw new ModelError({
    code: 'bad_response',
    message: 'The model stream ended without a final message',
    provider: env.settings.model.provider,
  });
}

function discardAttempt(env: AgentEnv, call: ModelCall, why: 'retry' | 'error'): void {
  if (!call.streaming) return;
  call.streaming = false;
  if (env.bus.wants('message_end')) {
    env.emit({ type: 'message_end', message: call.partial.toMessage(env.settings.model), discarded: why });
  }
}

function fail(env: AgentEnv, call: ModelCall, turn: number, step: number, error: ModelError): WorkerReply {
  discardAttempt(env, call, 'error');
  call.closed = true;
  env.lastModelError = error;
  return { type: 'MODEL_ERROR', turn, step, error: error.toJSON() };
}
