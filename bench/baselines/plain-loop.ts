import type { AssistantMessage, Message, Model, ToolCallPart, ToolResultPart } from '../../src/protocol/index.js';
import { toolCallsOf, userMessage } from '../../src/protocol/index.js';
import { type AnyTool, type ToolContext, toToolResult } from '../../src/tools/index.js';

/**
 * The two baselines are as lean as the peer harness's (`shared/bench-peers`: plain-loop.ts, xstate-loop.ts), so
 * that the project's table cannot flatter Troupe: they call the tools straight (no argument validation), run a
 * step's calls with one `Promise.all`, and share one tool context. Each run has its own abort signal, as each
 * Troupe agent has: the scripted model listens to it while it waits, and one signal shared by thousands of waiting
 * calls (W7) would make every `addEventListener` walk all their listeners. What they keep is the scripted model
 * that every row of a workload shares (its cost is the "scripted model alone" row).
 */

export interface LoopOptions {
  maxSteps: number;
  /** Called with every text delta, as a UI would be. */
  onTextDelta?: (delta: string) => void;
}

export interface LoopResult {
  messages: Message[];
  steps: number;
  text: string;
}

export type ToolTable = ReadonlyMap<string, AnyTool>;

export function toolTable(tools: readonly AnyTool[]): ToolTable {
  return new Map(tools.map((tool) => [tool.name, tool]));
}

const neverAborted = new AbortController().signal;
const NO_TOOL_SPECS: [] = [];
const context: ToolContext = { toolCallId: '', agentId: 'baseline', signal: neverAborted, update: () => {} };

/** The loop people write by hand: model call → run the tools it asked for → repeat. */
export async function plainLoop(
  model: Model,
  tools: ToolTable,
  prompt: string,
  options: LoopOptions,
): Promise<LoopResult> {
  const messages: Message[] = [userMessage(prompt)];
  const { signal } = new AbortController();
  for (let step = 1; step <= options.maxSteps; step++) {
    const answer = await answerOf(model, messages, signal, options.onTextDelta);
    messages.push(answer);
    const calls = toolCallsOf(answer);
    if (calls.length === 0) return { messages, steps: step, text: textOfAnswer(answer) };
    messages.push({ role: 'tool', content: await runBatch(tools, calls) });
  }
  return { messages, steps: options.maxSteps, text: '' };
}

/** One model call: the answer of its stream, every text delta passed on. */
export async function answerOf(
  model: Model,
  messages: Message[],
  signal: AbortSignal,
  onTextDelta?: (delta: string) => void,
): Promise<AssistantMessage> {
  for await (const event of model.stream({ messages, tools: NO_TOOL_SPECS }, signal)) {
    if (event.type === 'text_delta') onTextDelta?.(event.delta);
    else if (event.type === 'done') return event.message;
  }
  throw new Error('baseline: the model stream ended without a message');
}

/** Every call of a step at once; results in call order. */
export function runBatch(tools: ToolTable, calls: ToolCallPart[]): Promise<ToolResultPart[]> {
  return Promise.all(calls.map((call) => runCall(tools, call)));
}

async function runCall(tools: ToolTable, call: ToolCallPart): Promise<ToolResultPart> {
  const tool = tools.get(call.name);
  if (!tool) throw new Error(`baseline: no tool ${call.name}`);
  return toToolResult(call, await tool.execute(call.arguments, context)).result;
}

export function textOfAnswer(message: AssistantMessage): string {
  return message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
}
