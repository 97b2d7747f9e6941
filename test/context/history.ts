/** Builders for hand-made histories, healthy and broken. */

import type { AssistantMessage, JsonObject, UserMessage } from '../../src/index.js';
import {
  type AssistantContent,
  emptyUsage,
  type ImagePart,
  type ToolCallPart,
  type ToolMessage,
  type ToolResultPart,
  type UserMessageSource,
} from '../../src/protocol/index.js';

export const user = (text: string, source?: UserMessageSource): UserMessage => ({
  role: 'user',
  content: [{ type: 'text', text }],
  ...(source ? { source } : {}),
});

export const assistant = (...content: AssistantContent[]): AssistantMessage => ({
  role: 'assistant',
  content,
  provider: 'scripted',
  model: 'scripted',
  stopReason: content.some((part) => part.type === 'tool_call') ? 'tool_calls' : 'stop',
  usage: emptyUsage(),
});

export const text = (value: string) => ({ type: 'text' as const, text: value });

export const call = (id: string, name = 'echo', args: JsonObject = { text: id }): ToolCallPart => ({
  type: 'tool_call',
  id,
  name,
  arguments: args,
});

export const result = (id: string, value = `result of ${id}`, name = 'echo'): ToolResultPart => ({
  type: 'tool_result',
  toolCallId: id,
  toolName: name,
  content: [{ type: 'text', text: value }],
  isError: false,
});

export const tool = (...content: ToolResultPart[]): ToolMessage => ({ role: 'tool', content });

export const image: ImagePart = {
  type: 'image',
  source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
};
