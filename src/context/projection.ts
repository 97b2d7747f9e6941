import type {
  AssistantContent,
  AssistantMessage,
  ContextRepair,
  ImagePart,
  Message,
  TextPart,
  ToolCallPart,
  ToolMessage,
  ToolResultPart,
  UserContent,
  UserMessage,
} from '../protocol/index.js';
import { errorResult } from '../protocol/index.js';
import { keepShape } from '../protocol/shapes.js';

export interface ProjectionOptions {
  /** Send adjacent user messages as one (Anthropic wants roles to alternate; a strict projection always merges). */
  mergeUserMessages: boolean;
  /**
   * The projection for a retry after the provider refused the history: also leaves out provider-specific parts
   * (signatures, encrypted reasoning) and reasoning, and opens with a user message.
   */
  strict?: boolean;
  /** Replaces every image by a short note (after a 413 for the request's size). */
  replaceImages?: boolean;
}

export const MISSING_RESULT =
  'No result was recorded for this tool call (it was interrupted or lost). Do not assume it ran; call it again if you still need it.';
const IMAGE_NOTE: TextPart = {
  type: 'text',
  text: '[An image was here; it was left out because the request was too large for the provider.]',
};
/** Calls in one answer that the usual step's shortcut checks pairwise for a repeated id; more go the general way. */
const MAX_IN_ORDER = 16;
const CONTINUING: UserMessage = { role: 'user', content: [{ type: 'text', text: '(The conversation continues.)' }] };

/**
 * The history as it is sent: made from the stored messages for each call, never changing them. It repairs what a
 * provider would refuse (each repair goes to `report`) and shares every message that needs no repair, so a
 * healthy history costs one pointer per message.
 *
 * Incremental: `append` projects the next stored messages onto what was projected before, so an agent pays for
 * what was added since its last call, not for its whole history. A result stored in a later chunk than its call
 * (impossible in a live agent, whose machine drops late results) is then dropped as an orphan rather than moved;
 * a history loaded whole is projected in one chunk and gets every move.
 */
export class Projection {
  readonly messages: Message[] = [];
  /** Calls sent so far (id → tool name), each already followed by its result. */
  private readonly sent = new Map<string, string>();

  constructor(
    private readonly options: ProjectionOptions,
    private readonly report: (repair: ContextRepair) => void,
  ) {}

  /** Projects `source[from..to)` after what was projected before. */
  append(source: readonly Message[], from = 0, to = source.length): readonly Message[] {
    if (from >= to) return this.messages;
    const chunk = new Chunk(source, from, to);
    for (let i = from; i < to; i++) {
      const message = source[i] as Message;
      if (message.role === 'user') this.pushUser(message, chunk);
      else if (message.role === 'assistant') this.pushAssistant(message, i, chunk);
      else if (i !== chunk.sentWhole) this.dropStrays(message.content, chunk);
    }
    if (this.options.strict && this.messages[0]?.role === 'assistant') this.messages.unshift(CONTINUING);
    if (chunk.emptyDropped > 0) this.report({ kind: 'empty_text_dropped', count: chunk.emptyDropped });
    if (chunk.merged > 0) this.report({ kind: 'user_messages_merged', count: chunk.merged });
    if (chunk.opaqueDropped > 0) this.report({ kind: 'opaque_dropped', count: chunk.opaqueDropped });
    if (chunk.imagesReplaced > 0) this.report({ kind: 'images_replaced', count: chunk.imagesReplaced });
    return this.messages;
  }

  private pushUser(message: UserMessage, chunk: Chunk): void {
    const content = this.userContent(message.content, chunk);
    if (content.length === 0) return;
    const out = content === message.content ? message : { ...message, content };
    const last = this.messages[this.messages.length - 1];
    if (last?.role === 'user' && (this.options.mergeUserMessages || this.options.strict)) {
      this.messages[this.messages.length - 1] = { ...last, content: [...last.content, ...out.content] };
      chunk.merged++;
      return;
    }
    this.messages.push(out);
  }

  private userContent(content: UserContent[], chunk: Chunk): UserContent[] {
    let kept: UserContent[] | undefined;
    for (let i = 0; i < content.length; i++) {
      const part = content[i] as UserContent;
      let replacement: UserContent | undefined = part;
      if (part.type === 'text' && part.text.trim() === '') {
        replacement = undefined;
        chunk.emptyDropped++;
      } else if (part.type === 'image' && this.options.replaceImages) {
        replacement = IMAGE_NOTE;
        chunk.imagesReplaced++;
      }
      if (replacement !== part && !kept) kept = content.slice(0, i);
      if (kept && replacement) kept.push(replacement);
    }
    return kept ?? content;
  }

  private pushAssistant(message: AssistantMessage, index: number, chunk: Chunk): void {
    const content = this.assistantContent(message.content, chunk);
    if (content.length === 0) return;
    this.messages.push(content === message.content ? message : { ...message, content });
    let calls: ToolCallPart[] | undefined;
    for (let i = 0; i < content.length; i++) {
      const part = content[i] as AssistantContent;
      if (part.type !== 'tool_call') continue;
      calls ??= [];
      calls.push(part);
    }
    if (calls === undefined) return;
    const next = chunk.source[index + 1];
    if (next?.role === 'tool' && index + 1 < chunk.to && this.answersInOrder(calls, next, chunk)) {
      for (let i = 0; i < calls.length; i++) {
        const call = calls[i] as ToolCallPart;
        this.sent.set(call.id, call.name);
      }
      chunk.sentWhole = index + 1;
      this.messages.push(next);
      return;
    }
    const results: ToolResultPart[] = [];
    for (const call of calls) {
      const found = chunk.resultFor(call.id);
      if (found && !this.sent.has(call.id)) {
        if (found.index !== index + 1) {
          this.report({ kind: 'late_result_moved', toolCallId: call.id, toolName: call.name });
        }
        chunk.use(found.part);
        results.push(this.options.replaceImages ? this.resultWithoutImages(found.part, chunk) : found.part);
      } else {
        this.report({ kind: 'missing_result', toolCallId: call.id, toolName: call.name });
        results.push(errorResult(call, MISSING_RESULT));
      }
      this.sent.set(call.id, call.name);
    }
    const same =
      next?.role === 'tool' &&
      next.content.length === results.length &&
      next.content.every((part, i) => part === results[i]);
    this.messages.push(same ? next : { role: 'tool', content: results });
  }

  /**
   * A live agent's usual step: the stored message after the calls holds their results, one each and in order, and
   * is sent as it is. It must be the chunk's first tool message that was not sent whole this way, so that no earlier
   * one can hold a result for these calls (the general path takes a call's first result in the chunk).
   */
  private answersInOrder(calls: ToolCallPart[], next: ToolMessage, chunk: Chunk): boolean {
    const n = calls.length;
    if (chunk.straysBefore || this.options.replaceImages || next.content.length !== n || n > MAX_IN_ORDER) return false;
    for (let i = 0; i < n; i++) {
      const id = (calls[i] as ToolCallPart).id;
      if ((next.content[i] as ToolResultPart).toolCallId !== id || this.sent.has(id)) return false;
      for (let j = 0; j < i; j++) if ((calls[j] as ToolCallPart).id === id) return false;
    }
    return true;
  }

  private assistantContent(content: AssistantContent[], chunk: Chunk): AssistantContent[] {
    const strict = this.options.strict === true;
    let kept: AssistantContent[] | undefined;
    for (let i = 0; i < content.length; i++) {
      const part = content[i] as AssistantContent;
      let replacement: AssistantContent | undefined = part;
      if (part.type === 'text' && part.text.trim() === '') {
        replacement = undefined;
        chunk.emptyDropped++;
      } else if (strict && (part.type === 'opaque' || part.type === 'reasoning')) {
        replacement = undefined;
        chunk.opaqueDropped++;
      } else if (strict && part.type === 'tool_call' && part.opaque) {
        const { opaque: _dropped, ...bare } = part;
        replacement = bare;
        chunk.opaqueDropped++;
      }
      if (replacement !== part && !kept) kept = content.slice(0, i);
      if (kept && replacement) kept.push(replacement);
    }
    return kept ?? content;
  }

  private resultWithoutImages(part: ToolResultPart, chunk: Chunk): ToolResultPart {
    if (!part.content.some((item) => item.type === 'image')) return part;
    const content = part.content.map((item): TextPart | ImagePart => {
      if (item.type !== 'image') return item;
      chunk.imagesReplaced++;
      return IMAGE_NOTE;
    });
    return { ...part, content };
  }

  /** Results in a stored tool message that were not sent with their call. */
  private dropStrays(parts: ToolResultPart[], chunk: Chunk): void {
    chunk.straysBefore = true;
    for (const part of parts) {
      if (chunk.used(part)) continue; // sent with its call
      if (chunk.callAhead(part.toolCallId) && !this.sent.has(part.toolCallId)) continue; // its call comes later
      this.report({ kind: 'orphan_result_dropped', toolCallId: part.toolCallId, toolName: part.toolName });
    }
  }
}

/**
 * One run of stored messages being projected: counts, and where each result is and which calls it makes, looked up
 * only when a step is not the usual one (see Projection.answersInOrder).
 */
class Chunk {
  emptyDropped = 0;
  merged = 0;
  opaqueDropped = 0;
  imagesReplaced = 0;
  /** The tool message last sent whole with the calls before it. */
  sentWhole = -1;
  /** Whether a tool message of the chunk went the general way: the usual step's shortcut no longer holds. */
  straysBefore = false;
  /** Results sent with their call by the general way. */
  private usedParts?: Set<ToolResultPart>;
  private calls?: Set<string>;
  private results?: Map<string, { part: ToolResultPart; index: number }>;

  constructor(
    readonly source: readonly Message[],
    private readonly from: number,
    readonly to: number,
  ) {}

  /** The chunk's first result for a call, and the index of its message. */
  resultFor(toolCallId: string): { part: ToolResultPart; index: number } | undefined {
    if (!this.results) {
      this.results = new Map();
      for (let i = this.from; i < this.to; i++) {
        const message = this.source[i] as Message;
        if (message.role !== 'tool') continue;
        for (const part of message.content) {
          if (!this.results.has(part.toolCallId)) this.results.set(part.toolCallId, { part, index: i });
        }
      }
    }
    return this.results.get(toolCallId);
  }

  use(part: ToolResultPart): void {
    this.usedParts ??= new Set();
    this.usedParts.add(part);
  }

  used(part: ToolResultPart): boolean {
    return this.usedParts?.has(part) ?? false;
  }

  /** Whether a message of the chunk makes this call. */
  callAhead(toolCallId: string): boolean {
    if (!this.calls) {
      this.calls = new Set();
      for (let i = this.from; i < this.to; i++) {
        const message = this.source[i] as Message;
        if (message.role !== 'assistant') continue;
        for (const part of message.content) if (part.type === 'tool_call') this.calls.add(part.id);
      }
    }
    return this.calls.has(toolCallId);
  }
}

// Made and dropped by every append: see src/protocol/shapes.ts.
keepShape(new Chunk([], 0, 0));

/** The projection of a whole history at once, with the repairs it made. */
export function project(
  messages: readonly Message[],
  options: ProjectionOptions,
): { messages: Message[]; repairs: ContextRepair[] } {
  const repairs: ContextRepair[] = [];
  const projection = new Projection(options, (repair) => repairs.push(repair));
  projection.append(messages);
  return { messages: projection.messages, repairs };
}
