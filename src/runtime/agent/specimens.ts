// A real agent's turn, taken once when the runtime loads and kept with keepShape (see src/protocol/shapes.ts): one
// model call that asks for a tool, the tool's result, the final answer. What a turn makes per agent (its settings,
// env, XState actor, system, mailbox and snapshots, the machine's context as each assign leaves it, the workers'
// objects) gets its hidden class from the hot path's own code, so only a kept object of each keeps those classes
// through a collection with no agent alive; a hand-built look-alike would keep a class of its own. The agent stays
// idle, as a program's agent between two prompts does.
import { z } from 'zod';
import type { AssistantMessage, Model, ModelEvent } from '../../protocol/index.js';
import { keepShape } from '../../protocol/shapes.js';
import { defineTool } from '../../tools/index.js';
import { Agent } from './agent.js';

function answer(content: AssistantMessage['content'], stopReason: AssistantMessage['stopReason']): ModelEvent {
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  const message: AssistantMessage = {
    role: 'assistant',
    content,
    provider: 'specimen',
    model: 'specimen',
    stopReason,
    usage,
  };
  return { type: 'done', message, stopReason };
}

let calls = 0;
const model: Model = {
  id: 'specimen',
  provider: 'specimen',
  async *stream() {
    yield calls++ === 0
      ? answer([{ type: 'tool_call', id: 'specimen', name: 'specimen', arguments: { n: 0 } }], 'tool_calls')
      : answer([{ type: 'text', text: 'specimen' }], 'stop');
  },
};
const tool = defineTool({
  name: 'specimen',
  description: 'specimen',
  schema: z.object({ n: z.number() }),
  execute: async () => 'specimen',
});

const agent = new Agent({ id: 'specimen', model, tools: [tool], retry: false });
keepShape(agent);
void agent.prompt('specimen').catch(() => {});
