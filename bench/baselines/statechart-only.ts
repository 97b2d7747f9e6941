import { createActor, fromCallback } from 'xstate';
import { agentMachine, type ModelWorkerRequest, type ToolWorkerRequest } from '../../machines/agent/index.js';
import { type AssistantMessage, emptyUsage, type ToolResultPart } from '../../src/protocol/index.js';

/**
 * Troupe's agent statechart alone: the real machine, with workers that answer every request synchronously (no
 * model, no tools, no event bus, no transcript). What is left is XState running the turn / step / tool-phase
 * states, so its figure is the floor of what W1 costs with this statechart on this XState.
 */
export function runStatechartAlone(steps: number): { modelCalls: number; toolResults: number; idle: boolean } {
  let modelCalls = 0;
  let toolResults = 0;
  const answer = (index: number): AssistantMessage => ({
    role: 'assistant',
    content:
      index < steps
        ? [{ type: 'tool_call', id: `call_${index}`, name: 'echo', arguments: { text: `step ${index}` } }]
        : [{ type: 'text', text: 'done' }],
    provider: 'fake',
    model: 'fake',
    stopReason: index < steps ? 'tool_calls' : 'stop',
    usage: emptyUsage(),
  });
  const machine = agentMachine.provide({
    actors: {
      modelWorker: fromCallback<ModelWorkerRequest, { agentId: string }>(({ receive, sendBack }) => {
        receive((request) => {
          sendBack({ type: 'MODEL_DONE', turn: request.turn, step: request.step, message: answer(modelCalls++) });
        });
      }),
      toolWorker: fromCallback<ToolWorkerRequest, { agentId: string }>(({ receive, sendBack }) => {
        receive((request) => {
          if (request.type === 'VALIDATE') {
            sendBack({
              type: 'VALIDATED',
              batch: request.batch,
              outcomes: request.calls.map((c) => ({ toolCallId: c.id })),
            });
          } else if (request.type === 'AUTHORIZE') {
            const decisions = request.calls.map((c) => ({ toolCallId: c.id, decision: 'allow' as const }));
            sendBack({ type: 'AUTHORIZED', batch: request.batch, decisions });
          } else if (request.type === 'EXECUTE') {
            for (const call of request.calls) {
              const result: ToolResultPart = {
                type: 'tool_result',
                toolCallId: call.id,
                toolName: call.name,
                content: [{ type: 'text', text: 'ok' }],
                isError: false,
              };
              toolResults++;
              sendBack({
                type: 'TOOL_RESULTS',
                batch: request.batch,
                results: [{ toolCallId: call.id, result, terminate: false }],
              });
            }
          }
        });
      }),
    },
  });
  const actor = createActor(machine, { input: { agentId: 'statechart', maxSteps: steps + 1 } });
  actor.start();
  actor.send({ type: 'PROMPT', input: { inputId: 'in', messages: [], expectsOutput: false } });
  const idle = actor.getSnapshot().matches('idle');
  actor.stop();
  return { modelCalls, toolResults, idle };
}
