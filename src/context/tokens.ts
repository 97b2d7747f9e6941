import type { Message, ModelRequest, ToolSpec } from '../protocol/index.js';

// An estimate, not a tokenizer: ~4 characters a token holds for English prose and code on both providers' current
// tokenizers, and shipping one tokenizer per model would weigh more than the library. The provider's own count
// (the last answer's usage) is used wherever there is one; estimates only cover what was added since.
const CHARS_PER_TOKEN = 4;
/** Role markers and separators each message costs on the wire. */
const PER_MESSAGE = 4;
/** What one image costs, roughly, at the sizes agents send (a screenshot is ~1,000–1,600). */
const PER_IMAGE = 1_200;

export function estimateText(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

export function estimateMessage(message: Message): number {
  let chars = 0;
  let tokens = PER_MESSAGE;
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
      case 'reasoning':
        chars += part.text.length;
        break;
      case 'image':
        tokens += PER_IMAGE;
        break;
      case 'tool_call':
        chars += part.name.length + JSON.stringify(part.arguments).length;
        break;
      case 'tool_result':
        for (const item of part.content) {
          if (item.type === 'text') chars += item.text.length;
          else tokens += PER_IMAGE;
        }
        break;
      case 'opaque':
        chars += JSON.stringify(part.data).length;
        break;
    }
  }
  return tokens + Math.ceil(chars / CHARS_PER_TOKEN);
}

export function estimateMessages(messages: readonly Message[], from = 0, to = messages.length): number {
  let tokens = 0;
  for (let i = from; i < to; i++) tokens += estimateMessage(messages[i] as Message);
  return tokens;
}

function estimateTools(tools: readonly ToolSpec[]): number {
  let chars = 0;
  for (const tool of tools)
    chars += tool.name.length + tool.description.length + JSON.stringify(tool.inputSchema).length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** Everything a request sends before the messages: system prompt, tools, output schema. */
export function estimatePreamble(request: Pick<ModelRequest, 'system' | 'tools' | 'outputSchema'>): number {
  let tokens = estimateTools(request.tools);
  if (request.system) tokens += estimateText(request.system);
  if (request.outputSchema) tokens += estimateText(JSON.stringify(request.outputSchema.schema));
  return tokens;
}
