import { createActor } from 'xstate';
import { type AgentWorker, agentMachine, servedBy } from '../../machines/agent/index.js';
import { type AssistantMessage, emptyUsage, type ToolResultPart } from '../../src/protocol/index.js';

/** The run in progress: the fake workers are provided once, as the runtime's are, and read it from here. */
const run = { steps: 0, modelCalls: 0, toolResults: 0 };

function answer(index: number): AssistantMessage {
  const toolStep = index < run.steps;
  return {
    role: 'assistant',
    content: toolStep
      ? [{ type: 'tool_call', id: `call_${index}`, name: 'echo', arguments: { text: `step ${index}` } }]
      : [{ type: 'text', text: 'done' }],
    provider: 'fake',
    model: 'fake',
    stopReason: toolStep ? 'tool_calls' : 'stop',
    usage: emptyUsage(),
  };
}

function okResult(id: string, name: string): ToolResultPart {
  return {
    type: 'tool_result',
    toolCallId: id,
    toolName: name,
    content: [{ type: 'text', text: 'ok' }],
    isError: false,
  };
}

// Replies go out on a microtask, as the runtime's do when a promise settles: each is its own macrostep. As the
// runtime's worker for an agent without permissions: the calls validated with the answer, every one allowed, run
// once the machine has taken it (its batch is one more than the last).
let batch = 0;
const worker: AgentWorker = (request, { self }) => {
  if (request.type !== 'MODEL_REQUEST') return;
  const { turn, step } = request;
  const message = answer(run.modelCalls++);
  const calls = message.content.flatMap((part) => (part.type === 'tool_call' ? [part] : []));
  if (calls.length === 0) {
    queueMicrotask(() => self.send({ type: 'MODEL_DONE', turn, step, message }));
    return;
  }
  const validated = { outcomes: calls.map((c) => ({ toolCallId: c.id })), allowed: true };
  const results = calls.map((c) => ({ toolCallId: c.id, result: okResult(c.id, c.name), terminate: false }));
  run.toolResults += results.length;
  const its = ++batch;
  queueMicrotask(() => {
    self.send({ type: 'MODEL_DONE', turn, step, message, validated });
    queueMicrotask(() => self.send({ type: 'TOOL_RESULTS', batch: its, results }));
  });
};
const machine = agentMachine.provide({ actions: servedBy(worker) });

/**
 * Troupe's agent statechart alone: the real machine, with fake workers that answer every request at once (no
 * model, no tools, no event bus, no transcript). What is left is XState running the turn / step / tool-phase
 * states, so its figure is the floor of what W1 costs with this statechart on this XState.
 */
export function runStatechartAlone(steps: number): Promise<{ modelCalls: number; toolResults: number; idle: boolean }> {
  run.steps = steps;
  run.modelCalls = 0;
  run.toolResults = 0;
  batch = 0;
  const actor = createActor(machine, { input: { agentId: 'statechart', maxSteps: steps + 1 } });
  return new Promise((resolve, reject) => {
    actor.subscribe({
      next: (snapshot) => {
        if (!snapshot.matches('idle') || run.modelCalls === 0) return;
        actor.stop();
        resolve({ modelCalls: run.modelCalls, toolResults: run.toolResults, idle: true });
      },
      error: reject,
    });
    actor.start();
    actor.send({ type: 'PROMPT', input: { inputId: 'in', messages: [], expectsOutput: false } });
  });
}
