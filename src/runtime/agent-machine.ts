import { agentMachine } from '../../machines/agent/index.js';
import {
  emptyUsage,
  lastAssistant,
  ModelError,
  OutputValidationError,
  type TurnError,
  textOf,
} from '../protocol/index.js';
import { type AgentEnv, envOf, type RunResult } from './env.js';
import { modelWorker } from './model-worker.js';
import { toolWorker } from './tool-worker.js';

type Context = import('../../machines/agent/index.js').AgentContext;

/**
 * The agent machine joined to the runtime: workers and effect actions, provided once for every agent (a
 * `provide` per agent would rebuild the machine each time). Each implementation finds its agent's runtime
 * through the actor system and the agent id in context.
 */
export const runtimeAgentMachine = agentMachine.provide({
  actors: { modelWorker, toolWorker },
  actions: {
    startRun: ({ context, system }) => envOf(system, context.agentId).emit({ type: 'agent_start' }),
    endRun: ({ context, system }) => {
      const env = envOf(system, context.agentId);
      env.emit({ type: 'agent_end' });
      env.onIdle?.(context.stopReason, context.error);
    },
    startTurn: ({ context, system }) => {
      const env = envOf(system, context.agentId);
      const input = context.current;
      if (!input) return;
      env.turn = context.turn;
      env.step = 0;
      env.turnUsage = emptyUsage();
      env.currentInputId = input.inputId;
      const pending = env.pending.get(input.inputId);
      if (pending) pending.startIndex = env.transcript.length;
      env.emit({ type: 'turn_start', inputId: input.inputId });
      for (const message of input.messages) env.append(message);
      if (pending?.abortRequested) queueMicrotask(() => env.requestInterrupt?.());
    },
    endTurn: ({ context, system }) => endTurn(envOf(system, context.agentId), context),
    startStep: ({ context, system }, { step }) => {
      const env = envOf(system, context.agentId);
      env.step = step;
      env.emit({ type: 'step_start' });
      for (const message of context.injections) env.append(message);
    },
    endStep: ({ context, system }) => envOf(system, context.agentId).emit({ type: 'step_end' }),
    recordAssistant: ({ context, system, event }) => {
      const { message } = event as Extract<typeof event, { type: 'MODEL_DONE' }>;
      const env = envOf(system, context.agentId);
      env.append(message);
      env.addUsage(message.usage);
    },
    recordToolResults: ({ context, system }) => {
      if (context.calls.length === 0) return;
      const env = envOf(system, context.agentId);
      env.parsedArgs.clear();
      env.append({ role: 'tool', content: context.calls.flatMap((state) => (state.result ? [state.result] : [])) });
    },
    announceApprovals: ({ context, system }) => {
      const env = envOf(system, context.agentId);
      for (const state of context.calls) {
        if (state.status !== 'awaiting') continue;
        env.emit({
          type: 'approval_requested',
          toolCallId: state.call.id,
          toolName: state.call.name,
          args: state.call.arguments,
        });
      }
    },
    abortInFlight: ({ context, system }) => envOf(system, context.agentId).abortInFlight(),
    supervisorFailed: ({ context, event }) =>
      console.error(
        `[troupe] the supervisor of agent ${context.agentId} failed:`,
        (event as { error?: unknown }).error,
      ),
  },
});

function endTurn(env: AgentEnv, context: Context): void {
  const input = context.current;
  const stopReason = context.stopReason ?? 'completed';
  const usage = { ...env.turnUsage };
  env.emit({
    type: 'turn_end',
    inputId: input?.inputId ?? '',
    stopReason,
    usage,
    ...(context.error ? { error: context.error } : {}),
  });
  if (!input) return;
  const pending = env.pending.get(input.inputId);
  if (!pending) return;
  env.pending.delete(input.inputId);
  const messages = env.transcript.since(pending.startIndex);
  const result: RunResult = { stopReason, messages, text: textOf(lastAssistant(messages)), usage };
  if (pending.output !== undefined) result.output = pending.output;
  const error = turnError(env, context);
  if (error) result.error = error;
  pending.resolve(result);
}

function turnError(env: AgentEnv, context: Context): TurnError | undefined {
  const serialized = context.error;
  if (!serialized) return undefined;
  if (serialized.code === 'output_invalid')
    return new OutputValidationError(serialized.message, context.outputAttempts + 1);
  const known = env.lastModelError;
  if (known && known.code === serialized.code && known.message === serialized.message) return known;
  return new ModelError({
    code: serialized.code as ModelError['code'],
    message: serialized.message,
    status: serialized.status,
  });
}
