// An agent's work in flight as an interrupt sees it: the model call it closes at once (and the partial answer it
// announces as discarded) and the tool batch whose calls abort with it.
import { type AssistantContent, type AssistantMessage, emptyUsage, type Model } from '../../protocol/index.js';

/** A model call in flight, so that an interrupt can close it synchronously. */
export interface ModelCall {
  controller: AbortController;
  /** Closed calls publish nothing more and reply nothing. */
  closed: boolean;
  streaming: boolean;
  /** The attempt's streamed answer so far, kept to report what an interrupt or retry throws away. */
  text: string;
  reasoning: string;
  /**
   * The attempt's streamed tool calls: each provider id's latest Troupe identity, so that a call's stream events
   * name it as its final message will (see `callIdentity`). Made at the attempt's first tool call.
   */
  streamedCalls?: { byProvider: Map<string, string>; ids: Set<string> };
}

/** What a model call has streamed so far, as the message a discarded attempt's `message_end` carries. */
export function partialMessage(call: ModelCall, model: Model): AssistantMessage {
  const content: AssistantContent[] = [];
  if (call.reasoning) content.push({ type: 'reasoning', text: call.reasoning });
  if (call.text) content.push({ type: 'text', text: call.text });
  return {
    role: 'assistant',
    content,
    provider: model.provider,
    model: model.id,
    stopReason: 'stop',
    usage: emptyUsage(),
  };
}

/**
 * Whether the tool batch in flight has been closed, and the signals of its calls that must abort with it. A flag
 * and a set rather than an AbortController: a signal costs ~12 µs to make and its abort ~10 µs more (a
 * DOMException) on Node 20, which every run paid at its end, and a call's own signal is only made when its tool
 * reads `ctx.signal`.
 */
export class ToolBatch {
  aborted = false;
  private linked?: Set<AbortController>;

  /** Aborts `controller` with the batch (at once if it is already closed), until it is unlinked. */
  link(controller: AbortController): void {
    if (this.aborted) {
      controller.abort();
      return;
    }
    this.linked ??= new Set();
    this.linked.add(controller);
  }

  unlink(controller: AbortController): void {
    this.linked?.delete(controller);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const linked = this.linked;
    this.linked = undefined;
    if (linked) for (const controller of linked) controller.abort();
  }
}
