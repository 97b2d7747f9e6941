// An agent's work in flight as an interrupt sees it: the model call it closes at once (and the partial answer it
// announces as discarded) and the tool batch whose calls abort with it.
import { getEventListeners } from 'node:events';
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
   * name it as its final message will (see `callIdentity`). Made at the attempt's first tool call; the key is there
   * from the start, so that every call has one hidden class (see src/protocol/shapes.ts).
   */
  streamedCalls: { byProvider: Map<string, string>; ids: Set<string> } | undefined;
}

/**
 * Model-call controllers nobody uses, shared by the agents of the process: making an AbortSignal costs several µs
 * on Node 20 (more than the rest of a scripted step outside XState), and a swarm's subagents each make their calls
 * in one run. An agent keeps one for its run's calls and gives it back when the run ends (see AgentEnv).
 */
const idle: AbortController[] = [];
/** Enough for the calls of a wide swarm; past it, a controller given back is left to the collector. */
const MAX_IDLE = 1024;

export function takeController(): AbortController {
  return idle.pop() ?? new AbortController();
}

/**
 * Whether something still listens to a controller's signal after its call: a provider that leaves a listener behind
 * (some SDKs add one per request and never remove it) would collect one per call on a controller that serves
 * another, and an abort meant for a later call would reach it.
 */
export function listened(controller: AbortController): boolean {
  return getEventListeners(controller.signal, 'abort').length > 0;
}

/** Gives back a controller whose calls are over: another call may use it unless it was aborted or is listened to. */
export function giveBack(controller: AbortController): void {
  if (idle.length < MAX_IDLE && !controller.signal.aborted && !listened(controller)) idle.push(controller);
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
