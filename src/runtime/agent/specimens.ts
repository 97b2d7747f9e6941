// Real turns, taken once the process makes its first agent or supervisor (specimensToTake) and kept with keepShape
// (see src/protocol/shapes.ts): an agent's (a model call that asks for a tool, the tool's result, the final answer),
// and one that runs a swarm of two subagents each taking such a turn. What a turn makes per agent (its settings, env,
// XState actor, system, mailbox and snapshots, the machine's context as each assign leaves it, the workers' objects),
// and what the tree makes per subagent and per task (the spawned actors, their settings, nodes and records, the batch
// and pool actors, their stops), gets its hidden class from the hot path's own code, so only a kept object of each
// keeps those classes through a collection with no agent alive; a hand-built look-alike would keep a class of its
// own. The agents stay idle, as a program's agent between two prompts does. The supervisor keeps a swarm the same way.
import { z } from 'zod';
import type { AssistantMessage, Model, ModelEvent, ToolCallPart } from '../../protocol/index.js';
import { keepShape, specimensToTake } from '../../protocol/shapes.js';
import { defineTool } from '../../tools/index.js';
import { Agent } from './agent.js';

const PROMPT = 'specimen';
const TASK = 'specimen task';

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

/**
 * A model that answers from the conversation alone: after a tool's result, the final text; after the prompt, a call of
 * the specimen tool, or (`lead`, on its own prompt) a swarm of two tasks, whose subagents share this model.
 */
export function specimenModel(lead: boolean): Model {
  return {
    id: 'specimen',
    provider: 'specimen',
    async *stream({ messages }) {
      if (messages.at(-1)?.role === 'tool') {
        yield answer([{ type: 'text', text: 'specimen' }], 'stop');
        return;
      }
      const first = messages[0]?.content[0];
      const call: Pick<ToolCallPart, 'name' | 'arguments'> =
        lead && first?.type === 'text' && first.text === PROMPT
          ? { name: 'swarm', arguments: { tasks: [{ prompt: TASK }, { prompt: TASK }] } }
          : { name: 'specimen', arguments: { n: 0 } };
      yield answer([{ type: 'tool_call', id: 'specimen', ...call }], 'tool_calls');
    },
  };
}

/** A tool a specimen's model calls. */
export const specimenTool = defineTool({
  name: 'specimen',
  description: 'specimen',
  schema: z.object({ n: z.number() }),
  execute: async () => 'specimen',
});
specimensToTake(() => {
  const alone = new Agent({ id: 'specimen', model: specimenModel(false), tools: [specimenTool], retry: false });
  const lead = new Agent({
    id: 'specimen-lead',
    model: specimenModel(true),
    tools: [specimenTool],
    retry: false,
    subagents: {},
  });
  keepShape(alone);
  keepShape(lead);
  void alone.prompt(PROMPT).catch(() => {});
  void lead.prompt(PROMPT).catch(() => {});
});
