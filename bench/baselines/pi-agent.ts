import { Agent, type AgentTool, type StreamFn } from '@mariozechner/pi-agent-core';
import {
  createAssistantMessageEventStream,
  type AssistantMessage as PiAssistantMessage,
  type Model as PiModel,
  type TSchema,
  Type,
} from '@mariozechner/pi-ai';
import type { AssistantMessage, Message, Model } from '../../src/protocol/index.js';
import type { AnyTool, ToolContext } from '../../src/tools/index.js';
import { answerOf } from './plain-loop.js';

/**
 * pi-agent-core, the fastest peer in the harness (`shared/bench-peers/src/pi-agent.ts`), driven as that harness
 * drives it: `new Agent({ initialState, streamFn })` and `agent.prompt()`, tools with typebox parameters (pi
 * validates them), its default parallel tool execution. The `streamFn` plays the same scripted model as every
 * other row (it reads pi's transcript, which has the same roles) and pushes `start` + `done` as pi-ai's providers
 * do.
 */

const usage = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

const piModel: PiModel<string> = {
  id: 'scripted',
  name: 'scripted',
  api: 'bench',
  provider: 'bench',
  baseUrl: '',
  reasoning: false,
  input: ['text'],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 1_000_000,
};

/** Our scripted answer in pi-ai's message shape. */
function toPi(answer: AssistantMessage): PiAssistantMessage {
  const content: PiAssistantMessage['content'] = [];
  for (const part of answer.content) {
    if (part.type === 'text') content.push({ type: 'text', text: part.text });
    else if (part.type === 'tool_call') {
      content.push({ type: 'toolCall', id: part.id, name: part.name, arguments: part.arguments as never });
    }
  }
  const toolUse = content.some((part) => part.type === 'toolCall');
  return {
    role: 'assistant',
    content,
    api: piModel.api,
    provider: piModel.provider,
    model: piModel.id,
    usage,
    stopReason: toolUse ? 'toolUse' : 'stop',
    timestamp: Date.now(),
  };
}

function scriptedStreamFn(model: Model): StreamFn {
  return (_model, context, options) => {
    const stream = createAssistantMessageEventStream();
    // The agent's own signal, as a provider would listen to (pi gives one per run).
    const signal = options?.signal ?? new AbortController().signal;
    void (async () => {
      // pi's transcript has the roles the scripted model reads (it counts assistant messages).
      const answer = toPi(await answerOf(model, context.messages as unknown as Message[], signal));
      stream.push({ type: 'start', partial: answer });
      stream.push({ type: 'done', reason: answer.stopReason as 'stop' | 'toolUse', message: answer });
    })();
    return stream;
  };
}

/** The typebox parameters of the bench's tools (fixtures.ts), which pi validates as Troupe validates zod. */
const PARAMETERS: Record<string, TSchema> = {
  echo: Type.Object({ text: Type.String() }),
  wait: Type.Object({ n: Type.Number() }),
};

const neverAborted = new AbortController().signal;
const context: ToolContext = { toolCallId: '', agentId: 'pi', signal: neverAborted, update: () => {} };

function piTool(tool: AnyTool): AgentTool {
  const parameters = PARAMETERS[tool.name];
  if (!parameters) throw new Error(`pi baseline: no typebox parameters for ${tool.name}`);
  return {
    name: tool.name,
    label: tool.name,
    description: tool.description,
    parameters,
    execute: async (_id, params) => {
      const output = await tool.execute(params, context);
      return {
        content: [{ type: 'text', text: typeof output === 'string' ? output : JSON.stringify(output) }],
        details: {},
      };
    },
  };
}

/** The pi tools of a workload, made once per process as a program's tools are. */
export function piTools(tools: readonly AnyTool[]): AgentTool[] {
  return tools.map(piTool);
}

export interface PiResult {
  /** Roles of pi's transcript, in order (`user`, `assistant`, `toolResult`). */
  roles: string[];
  /** The tool-call ids of the tool results, in transcript order. */
  resultIds: string[];
  text: string;
}

export async function piLoop(model: Model, tools: AgentTool[], prompt: string): Promise<PiResult> {
  const agent = new Agent({
    initialState: { systemPrompt: 'bench', model: piModel, tools },
    streamFn: scriptedStreamFn(model),
  });
  await agent.prompt(prompt);
  const messages = agent.state.messages;
  const last = messages[messages.length - 1];
  const text =
    last && 'role' in last && last.role === 'assistant'
      ? last.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('')
      : '';
  return {
    roles: messages.map((message) => ('role' in message ? message.role : 'custom')),
    resultIds: messages.flatMap((message) =>
      'role' in message && message.role === 'toolResult' ? [message.toolCallId] : [],
    ),
    text,
  };
}
