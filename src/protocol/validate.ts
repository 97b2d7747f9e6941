import type {
  AssistantContent,
  AssistantMessage,
  Message,
  ModelStopReason,
  ToolCallPart,
  ToolMessage,
  Usage,
} from './messages.js';

/**
 * Shape checks for messages that come from outside the runtime: a custom `Model`'s answer and a history handed to
 * `createAgent({ messages })`. Plain checks rather than a schema library: the model's answer is checked on every
 * step. Each returns a sentence saying what is wrong, or undefined.
 */

const STOP_REASONS: ReadonlySet<string> = new Set<ModelStopReason>([
  'stop',
  'tool_calls',
  'length',
  'content_filter',
  'refusal',
  'pause_turn',
]);
const USAGE_KEYS = ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning'] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function imageProblem(part: Record<string, unknown>): string | undefined {
  const source = part.source;
  if (!isRecord(source)) return 'an image part without a source';
  if (source.kind === 'url') return nonEmptyString(source.url) ? undefined : 'an image url that is not a string';
  if (source.kind === 'base64') {
    return typeof source.data === 'string' && nonEmptyString(source.mediaType)
      ? undefined
      : 'a base64 image without string data and mediaType';
  }
  return `an image source of kind ${JSON.stringify(source.kind)} (expected "url" or "base64")`;
}

/** What is wrong with a part of user or tool-result content (text or image), if anything. */
export function contentPartProblem(part: unknown): string | undefined {
  if (!isRecord(part)) return `a content part that is ${describe(part)}`;
  if (part.type === 'text') return typeof part.text === 'string' ? undefined : 'a text part whose text is not a string';
  if (part.type === 'image') return imageProblem(part);
  return `a content part of type ${JSON.stringify(part.type)} (expected "text" or "image")`;
}

function toolCallProblem(part: Record<string, unknown>): string | undefined {
  if (!nonEmptyString(part.id)) return 'a tool call without an id';
  if (!nonEmptyString(part.name)) return `tool call ${part.id} without a name`;
  if (!isRecord(part.arguments)) return `tool call ${part.id} whose arguments are ${describe(part.arguments)}`;
  return undefined;
}

function assistantPartProblem(part: unknown): string | undefined {
  if (!isRecord(part)) return `a part that is ${describe(part)}`;
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return typeof part.text === 'string' ? undefined : `a ${part.type} part whose text is not a string`;
    case 'tool_call':
      return toolCallProblem(part);
    case 'opaque':
      return nonEmptyString(part.provider) && nonEmptyString(part.kind)
        ? undefined
        : 'an opaque part without provider and kind';
    default:
      return `a part of unknown type ${JSON.stringify(part.type)}`;
  }
}

function usageOk(usage: unknown): usage is Usage {
  if (!isRecord(usage)) return false;
  for (const key of USAGE_KEYS) {
    const value = usage[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return false;
  }
  return true;
}

function assistantProblem(message: Record<string, unknown>): string | undefined {
  if (!Array.isArray(message.content)) return `its content is ${describe(message.content)}, not an array`;
  for (let i = 0; i < message.content.length; i++) {
    const problem = assistantPartProblem(message.content[i]);
    if (problem) return `content[${i}] is ${problem}`;
  }
  if (message.stopReason !== undefined && !STOP_REASONS.has(message.stopReason as string)) {
    return `its stopReason ${JSON.stringify(message.stopReason)} is not one of ${[...STOP_REASONS].join(', ')}`;
  }
  return undefined;
}

/**
 * The identity Troupe gives a tool call whose provider id is `id`, the calls before it (in the history, and earlier
 * in the same answer) holding the ids `taken` says are: the provider's id verbatim when it is free, else that id with
 * the first free suffix (`call_1_2`). One rule, applied call by call in order, so that a streamed call's events and
 * the final answer name the call alike.
 */
export function callIdentity(id: string, taken: (id: string) => boolean): string {
  if (!taken(id)) return id;
  for (let n = 2; ; n++) {
    const candidate = `${id}_${n}`;
    if (!taken(candidate)) return candidate;
  }
}

const NONE_REUSED: readonly ReusedCallId[] = Object.freeze([]);

/** A tool call whose provider id was already taken, and the id it was given (see {@link checkModelAnswer}). */
export interface ReusedCallId {
  toolCallId: string;
  providerId: string;
  toolName: string;
}

/**
 * A model's final message as the history can hold it, or a sentence saying why it cannot be. Besides the shape
 * check: a missing `provider` / `model` / `stopReason` / `usage` is filled in (a custom model that reports no
 * usage used none we know of), and every tool call gets an identity of its own within the agent's history: a
 * provider's id is kept verbatim on its first use (so histories and prompt caches stay byte-stable), and one the
 * history (`taken`) or an earlier call of the same message already holds gets a deterministic suffix
 * ({@link callIdentity}), listed in `reused`. Results are paired, journaled and replayed by that identity: a
 * provider that numbers its ids per answer or per process would otherwise get a new call answered with an old one's
 * result. The model's object is never changed: a repaired message is a copy.
 */
export function checkModelAnswer(
  raw: unknown,
  model: { id: string; provider: string },
  taken: ReadonlySet<string> = new Set(),
): { message: AssistantMessage; reused: readonly ReusedCallId[] } | { problem: string } {
  if (!isRecord(raw)) return { problem: `the model's final message is ${describe(raw)}` };
  if (raw.role !== 'assistant') return { problem: `the model's final message has role ${JSON.stringify(raw.role)}` };
  const problem = assistantProblem(raw);
  if (problem) return { problem: `the model's final message: ${problem}` };
  const message = raw as unknown as AssistantMessage;
  let repaired: AssistantMessage | undefined;
  let calls = 0;
  // The ids of this message's calls so far: the first alone, a set from the second on (most answers make one).
  let first: string | undefined;
  let ids: Set<string> | undefined;
  let reused: ReusedCallId[] | undefined;
  for (let i = 0; i < message.content.length; i++) {
    const part = message.content[i] as AssistantContent;
    if (part.type !== 'tool_call') continue;
    calls++;
    if (calls === 2) ids = new Set([first as string]);
    let id = part.id;
    if (id === first || ids?.has(id) || taken.has(id)) {
      const seen = ids;
      const only = first;
      id = callIdentity(part.id, (candidate) => candidate === only || seen?.has(candidate) || taken.has(candidate));
      repaired ??= copyOf(message);
      repaired.content[i] = { ...part, id } satisfies ToolCallPart;
      reused ??= [];
      reused.push({ toolCallId: id, providerId: part.id, toolName: part.name });
    }
    if (ids) ids.add(id);
    else first = id;
  }
  if (!nonEmptyString(message.provider)) {
    repaired ??= copyOf(message);
    repaired.provider = model.provider;
  }
  if (!nonEmptyString(message.model)) {
    repaired ??= copyOf(message);
    repaired.model = model.id;
  }
  if (message.stopReason === undefined) {
    repaired ??= copyOf(message);
    repaired.stopReason = calls > 0 ? 'tool_calls' : 'stop';
  }
  if (!usageOk(message.usage)) {
    const given: Record<string, unknown> = isRecord(message.usage) ? message.usage : {};
    const usage = {} as Usage;
    for (const key of USAGE_KEYS) {
      const value = given[key];
      usage[key] = typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
    }
    repaired ??= copyOf(message);
    repaired.usage = usage;
  }
  return { message: repaired ?? message, reused: reused ?? NONE_REUSED };
}

/** A copy to repair: the model's object is never changed. */
function copyOf(message: AssistantMessage): AssistantMessage {
  return { ...message, content: [...message.content] };
}

/** A history given to `createAgent({ messages })` that cannot be resumed: says which message, and why. */
export class HistoryError extends TypeError {
  override readonly name = 'HistoryError';
  constructor(
    readonly index: number,
    problem: string,
  ) {
    super(`messages[${index}]: ${problem}`);
  }
}

/**
 * Checks a saved history and returns it ready to resume: every message is of a known shape (a malformed one throws
 * a {@link HistoryError} naming it). The order of calls and results is not checked here, and nothing is added:
 * the stored history stays as it was given, and what is sent of it is repaired for each call by the context
 * layer's projection (a late result moved to its call, a call without a result closed with an error result, an
 * orphan result dropped), each repair reported as a `context_repair` event.
 */
export function resumableHistory(messages: unknown): Message[] {
  if (!Array.isArray(messages)) throw new HistoryError(-1, `the history is ${describe(messages)}, not an array`);
  const out: Message[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message: unknown = messages[index];
    if (!isRecord(message)) throw new HistoryError(index, `a message is an object, not ${describe(message)}`);
    if (message.role === 'tool') {
      const tool = message as unknown as ToolMessage;
      if (!Array.isArray(tool.content)) throw new HistoryError(index, 'a tool message whose content is not an array');
      for (let i = 0; i < tool.content.length; i++) {
        const problem = toolResultProblem(tool.content[i] as unknown);
        if (problem) throw new HistoryError(index, `content[${i}] is ${problem}`);
      }
      out.push(tool);
      continue;
    }
    if (message.role === 'user') {
      if (!Array.isArray(message.content))
        throw new HistoryError(index, 'a user message whose content is not an array');
      for (let i = 0; i < message.content.length; i++) {
        const problem = contentPartProblem(message.content[i]);
        if (problem) throw new HistoryError(index, `content[${i}] is ${problem}`);
      }
      out.push(message as unknown as Message);
      continue;
    }
    if (message.role !== 'assistant') {
      throw new HistoryError(index, `role ${JSON.stringify(message.role)} (expected "user", "assistant" or "tool")`);
    }
    const problem = assistantProblem(message);
    if (problem) throw new HistoryError(index, problem);
    const assistant = message as unknown as AssistantMessage;
    const seen = new Set<string>();
    for (const part of assistant.content) {
      if (part.type !== 'tool_call') continue;
      if (seen.has(part.id)) throw new HistoryError(index, `two tool calls share the id ${part.id}`);
      seen.add(part.id);
    }
    out.push(assistant);
  }
  return out;
}

function toolResultProblem(result: unknown): string | undefined {
  if (!isRecord(result) || result.type !== 'tool_result') return `${describe(result)} that is not a tool_result part`;
  if (typeof result.toolCallId !== 'string') return 'a tool result without a toolCallId';
  if (!Array.isArray(result.content)) return `the result for ${result.toolCallId}, whose content is not an array`;
  for (const part of result.content) {
    const problem = contentPartProblem(part);
    if (problem) return `the result for ${result.toolCallId}, with ${problem}`;
  }
  return undefined;
}
