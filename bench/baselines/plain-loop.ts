import type { AssistantMessage, Message, Model, ToolCallPart, ToolResultPart } from '../../src/protocol/index.js';
import { toolCallsOf, userMessage } from '../../src/protocol/index.js';
import { type AnyTool, ToolRegistry, toToolResult } from '../../src/tools/index.js';

export interface LoopOptions {
  maxSteps: number;
  /** How many calls of one batch run at once. */
  toolConcurrency: number;
  /** Called with every text delta, as a UI would be. */
  onTextDelta?: (delta: string) => void;
}

export interface LoopResult {
  messages: Message[];
  steps: number;
  text: string;
}

/**
 * The floor: the loop people write by hand. Model call → run the tools it asked for → repeat, with the same
 * validation (the tools' zod schemas) and result normalisation as Troupe, and nothing else.
 */
export async function plainLoop(
  model: Model,
  tools: readonly AnyTool[],
  prompt: string,
  options: LoopOptions,
): Promise<LoopResult> {
  const registry = new ToolRegistry(tools);
  const messages: Message[] = [userMessage(prompt)];
  const signal = new AbortController().signal;
  for (let step = 1; step <= options.maxSteps; step++) {
    let answer: AssistantMessage | undefined;
    for await (const event of model.stream({ messages, tools: registry.specs }, signal)) {
      if (event.type === 'text_delta') options.onTextDelta?.(event.delta);
      else if (event.type === 'done') answer = event.message;
    }
    if (!answer) throw new Error('plain loop: the model stream ended without a message');
    messages.push(answer);
    const calls = toolCallsOf(answer);
    if (calls.length === 0) return { messages, steps: step, text: textOfAnswer(answer) };
    messages.push({ role: 'tool', content: await runBatch(registry, calls, options.toolConcurrency, signal) });
  }
  return { messages, steps: options.maxSteps, text: '' };
}

/** Runs a batch with at most `concurrency` calls at once; results in call order. */
export async function runBatch(
  registry: ToolRegistry,
  calls: ToolCallPart[],
  concurrency: number,
  signal: AbortSignal,
): Promise<ToolResultPart[]> {
  const results: ToolResultPart[] = new Array(calls.length);
  let next = 0;
  const lane = async () => {
    while (next < calls.length) {
      const index = next++;
      results[index] = await runCall(registry, calls[index] as ToolCallPart, signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, calls.length) }, lane));
  return results;
}

/** One call: validated with its schema, run, its output normalised. Tools share the run's signal. */
async function runCall(registry: ToolRegistry, call: ToolCallPart, signal: AbortSignal): Promise<ToolResultPart> {
  const validation = registry.validate(call);
  if (!validation.ok) return validation.error;
  const ctx = { toolCallId: call.id, agentId: 'plain', signal, update: () => {} };
  return toToolResult(call, await validation.tool.execute(validation.args, ctx)).result;
}

export function textOfAnswer(message: AssistantMessage): string {
  return message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
}
