import type { AgentEventBody, CompactionReason, Message, Model, ModelRequest, UserMessage } from '../protocol/index.js';
import { ModelError } from '../protocol/index.js';
import { chooseCut, compactionNote, keptFacts, summarize } from './compaction.js';
import { type ModelInfo, modelInfo, type Prices } from './models.js';
import { Projection, type ProjectionOptions, project } from './projection.js';
import { retryReasonFor } from './retry.js';
import { estimateMessages, estimatePreamble } from './tokens.js';

export interface ContextOptions {
  /** Corrections and additions to the table of models (context window, output limit, prices), by id or prefix. */
  models?: Record<string, Partial<ModelInfo>>;
  /** The window to keep requests in, overriding the table (a local model, a tighter budget). */
  contextWindow?: number;
  /** Compact before a call that would pass this share of the window (default 0.85); `false` never compacts. */
  compactAt?: number | false;
  /** Tokens of the latest messages kept verbatim by a compaction (default: a quarter of the window). */
  keepRecentTokens?: number;
  /** The model that writes the continuation note (default: the agent's own). */
  summaryModel?: Model;
}

/** What a compaction leaves in front of the verbatim tail, and where that tail starts in the stored history. */
interface View {
  head: Message[];
  base: number;
  /** The stored index of the first prompt kept in the head, and the note: what a session journals. */
  first?: number;
  note?: UserMessage;
  /** Stored length when the view was made: usage reported before it measured another request. */
  since: number;
}

/** The context window as `agent.getState()` shows it. */
export interface ContextWindowState {
  /** Tokens the next request would carry: the provider's last count plus an estimate of what was added since. */
  tokens: number;
  /** The window's size, when the model's is known (the table, `context.models` or `context.contextWindow`). */
  window?: number;
  /** Whether the agent compacts (a known window and `compactAt` not `false`). */
  compaction: boolean;
  /** Compactions so far. */
  compactions: number;
}

/**
 * The view a compaction made, as a session journals it: the stored messages before `base` are replaced by the
 * first prompt (stored index `first`, when kept) and the note. A resumed agent sends what the projection made.
 */
export interface CompactedView {
  base: number;
  first?: number;
  note: UserMessage;
}

export interface Compacted {
  tokensBefore: number;
  tokensAfter: number;
  summarized: number;
  dropped: number;
}

/**
 * One agent's context: turns the stored history into what is sent (the projection, repaired and compacted),
 * estimates its size, and compacts it. It never changes the stored history: a compaction moves the view, the
 * transcript keeps every message (sessions journal the `compaction_end` event to rebuild the view on resume).
 */
export class ContextEngine {
  private view: View = { head: [], base: 0, since: 0 };
  private projection?: Projection;
  private projected = 0;
  private readonly info: ModelInfo | undefined;
  /**
   * The provider's tokens per estimated token, learnt from each answer's usage: the estimate is a character
   * count, and how many characters a token holds differs by model, language and content.
   */
  private scale = 1;
  private calibratedAt = -1;
  private readonly options: ProjectionOptions;
  /** The last request's system prompt, tools and schema, estimated: what {@link windowState} adds to the messages. */
  private preamble = 0;
  /** A running estimate of the stored messages from the view's base, so a glance at the window costs no walk. */
  private estimated = { base: 0, to: 0, tokens: 0 };
  private compactions = 0;
  /** A journaled view whose history is still being rebuilt (see {@link restoreView}). */
  private pendingView?: CompactedView;

  constructor(
    private readonly model: Model,
    private readonly settings: ContextOptions,
    private readonly emit: (body: AgentEventBody) => void,
  ) {
    const known = modelInfo(model.id, settings.models);
    const window = settings.contextWindow ?? known?.contextWindow;
    this.info = window === undefined ? undefined : { maxOutput: 8_192, ...known, contextWindow: window };
    this.options = { mergeUserMessages: model.provider === 'anthropic' };
  }

  /** The view the last compaction made (for a session's journal), or undefined before any. */
  get compactedView(): CompactedView | undefined {
    const { base, first, note } = this.view;
    if (!note) return undefined;
    return first === undefined ? { base, note } : { base, first, note };
  }

  /**
   * Takes back a journaled view on resume, so the first request sends what the projection made before the crash,
   * not the uncompacted history. A view that reaches past the history so far waits until the history has grown to
   * it (a subagent's replay rebuilds its history step by step); one whose kept first prompt is no prompt is ignored.
   */
  restoreView(view: CompactedView, stored: readonly Message[]): void {
    this.pendingView = undefined;
    if (view.first !== undefined && view.first >= view.base) return;
    if (view.base > stored.length) {
      this.pendingView = view;
      return;
    }
    const first = view.first === undefined ? undefined : stored[view.first];
    const head: Message[] = first?.role === 'user' ? [first, view.note] : [view.note];
    this.view = { head, base: view.base, since: stored.length, note: view.note };
    if (first?.role === 'user') this.view.first = view.first;
    this.projection = undefined;
  }

  /** The journaled view, once the rebuilt history reaches it. */
  private takePendingView(stored: readonly Message[]): void {
    const view = this.pendingView;
    if (view && stored.length >= view.base) this.restoreView(view, stored);
  }

  /** The model's prices per million tokens, when the table (or the agent's `context.models`) knows them. */
  get prices(): Prices | undefined {
    return this.info?.prices;
  }

  /** The context window this agent manages, when its model's is known. */
  get window(): number | undefined {
    return this.info?.contextWindow;
  }

  /** What is sent of `stored`: the compaction's head, then the stored messages from its base, repaired. */
  project(stored: readonly Message[]): readonly Message[] {
    if (this.pendingView) this.takePendingView(stored);
    let projection = this.projection;
    if (!projection) {
      projection = new Projection(this.options, (repair) =>
        this.emit({ type: 'context_repair', repair, strict: false }),
      );
      projection.append(this.view.head);
      this.projection = projection;
      this.projected = this.view.base;
    }
    const to = stored.length;
    projection.append(stored, this.projected, to);
    this.projected = to;
    return projection.messages;
  }

  /**
   * The request's size when it would pass the compaction threshold (or leave no room for the answer), else
   * undefined. The provider's count of the last request plus an estimate of what was added since; an estimate
   * of the whole request when there is no count (a new view, a model that reports no usage).
   */
  overThreshold(request: ModelRequest, stored: readonly Message[]): { tokens: number; window: number } | undefined {
    const window = this.info?.contextWindow;
    const share = this.settings.compactAt ?? 0.85;
    if (window === undefined || share === false) return undefined;
    const tokens = this.tokens(request, stored);
    const limit = Math.min(window * share, window - (request.maxTokens ?? 0));
    return tokens > limit ? { tokens, window } : undefined;
  }

  tokens(request: ModelRequest, stored: readonly Message[]): number {
    this.preamble = estimatePreamble(request);
    return this.counted(stored) ?? Math.ceil((this.preamble + estimateMessages(request.messages)) * this.scale);
  }

  /** The provider's count of the last request, its answer and an estimate of what was stored since; calibrates. */
  private counted(stored: readonly Message[]): number | undefined {
    for (let i = stored.length - 1; i >= this.view.since; i--) {
      const message = stored[i] as Message;
      if (message.role !== 'assistant') continue;
      const { usage } = message;
      const prompt = usage.input + usage.cacheRead + usage.cacheWrite;
      if (prompt === 0) break;
      if (this.calibratedAt !== i) this.calibrate(prompt, stored, i);
      return prompt + usage.output + Math.ceil(estimateMessages(stored, i + 1) * this.scale);
    }
    return undefined;
  }

  /**
   * The window as it stands, for `getState()`: the provider's last count plus an estimate of what came since, or
   * (before any count) an estimate of the view, kept up to date incrementally.
   */
  windowState(stored: readonly Message[]): ContextWindowState {
    if (this.pendingView) this.takePendingView(stored);
    let tokens = this.counted(stored);
    if (tokens === undefined) {
      const { base } = this.view;
      if (this.estimated.base !== base || this.estimated.to > stored.length)
        this.estimated = { base, to: base, tokens: 0 };
      const estimated = this.estimated;
      estimated.tokens += estimateMessages(stored, Math.max(estimated.to, base));
      estimated.to = stored.length;
      tokens = Math.ceil((this.preamble + estimateMessages(this.view.head) + estimated.tokens) * this.scale);
    }
    const window = this.info?.contextWindow;
    const state: ContextWindowState = {
      tokens,
      compaction: window !== undefined && this.settings.compactAt !== false,
      compactions: this.compactions,
    };
    if (window !== undefined) state.window = window;
    return state;
  }

  /** Learns the scale from the prompt the provider counted for the request that stored message `at` answered. */
  private calibrate(counted: number, stored: readonly Message[], at: number): void {
    this.calibratedAt = at;
    const { head, base } = this.view;
    const estimate = this.preamble + estimateMessages(head) + estimateMessages(stored, base, at);
    if (estimate > 0) this.scale = Math.min(4, Math.max(0.5, counted / estimate));
  }

  /**
   * A repaired request after the provider refused `request` for its history (strict projection) or its size with
   * images (images replaced), or undefined when a repair would not help or was already tried for this call.
   */
  retry(error: ModelError, request: ModelRequest, stored: readonly Message[]): ModelRequest | undefined {
    if (retried.has(request)) return undefined;
    const reason = retryReasonFor(error, request.messages);
    if (!reason) return undefined;
    const options: ProjectionOptions =
      reason === 'media' ? { ...this.options, replaceImages: true } : { mergeUserMessages: true, strict: true };
    this.emit({ type: 'context_retry', reason, error: error.toJSON() });
    const { messages, repairs } = project([...this.view.head, ...stored.slice(this.view.base)], options);
    for (const repair of repairs) this.emit({ type: 'context_repair', repair, strict: reason === 'history' });
    const repaired = { ...request, messages };
    retried.add(repaired);
    return repaired;
  }

  /**
   * Replaces older messages by a continuation note: the first user message and the latest ones stay verbatim.
   * `preamble` is the request without messages, to count what every request carries.
   */
  async compact(
    reason: CompactionReason,
    stored: readonly Message[],
    preamble: Omit<ModelRequest, 'messages'>,
    signal: AbortSignal,
    /** The provider's overflow error, given back as it was when there is nothing older to compact. */
    cause?: ModelError,
  ): Promise<Compacted> {
    const before = this.tokens({ ...preamble, messages: this.project(stored) }, stored);
    // A model of unknown window that overflowed: what was sent is the best bound there is.
    const window = this.info?.contextWindow ?? before;
    this.emit({ type: 'compaction_start', reason, tokens: before, window });
    const keepTokens = Math.min(
      this.settings.keepRecentTokens ?? window / 4,
      reason === 'overflow' ? before / 4 : window,
    );
    const keep = Math.floor(keepTokens / this.scale);
    const length = stored.length;
    const { head, base } = this.view;
    const cut = chooseCut(stored, base, keep) ?? base;
    if (cut === base && reason === 'overflow') {
      // Nothing older to summarise: another call would be refused the same way.
      throw (
        cause ??
        new ModelError({
          code: 'context_overflow',
          message: 'The request is too long for the context window, and there is nothing older to compact',
          provider: this.model.provider,
        })
      );
    }
    const older = [...head.filter((m) => m.role !== 'user' || m.source === 'compaction'), ...stored.slice(base, cut)];
    const maxTokens = Math.max(256, Math.min(4_096, Math.floor(window * 0.15)));
    const summary =
      older.length === 0
        ? { text: '', dropped: 0 }
        : await summarize({
            model: this.settings.summaryModel ?? this.model,
            messages: older,
            window,
            maxTokens,
            scale: this.scale,
            signal,
          });
    // Race check: messages stored while the summary was written come after the cut, so they stay in the tail; an
    // interrupt during the call leaves the view as it was.
    if (stored.length < length) throw new Error('The history shrank during compaction');
    signal.throwIfAborted();
    const first = firstPrompt(stored);
    const note = compactionNote(summary.text, keptFacts(older, textOfTail(stored, cut)), cut - base, summary.dropped);
    const keepFirst = first !== undefined && first.index < cut;
    const nextHead: Message[] = keepFirst ? [first.message, note] : [note];
    this.view = { head: nextHead, base: cut, since: stored.length, note };
    if (keepFirst) this.view.first = first.index;
    this.projection = undefined;
    this.compactions++;
    const after = Math.ceil((estimatePreamble(preamble) + estimateMessages(this.project(stored))) * this.scale);
    const done: Compacted = {
      tokensBefore: before,
      tokensAfter: after,
      summarized: cut - base,
      dropped: summary.dropped,
    };
    this.emit({ type: 'compaction_end', reason, ...done, summary: summary.text });
    return done;
  }
}

/** Requests already sent once repaired: a second refusal is final. */
const retried = new WeakSet<ModelRequest>();

function firstPrompt(stored: readonly Message[]): { message: UserMessage; index: number } | undefined {
  for (let i = 0; i < stored.length; i++) {
    const message = stored[i] as Message;
    if (message.role === 'user') return { message, index: i };
  }
  return undefined;
}

/** Notifications in the verbatim tail: a background task they report is no longer open. */
function textOfTail(stored: readonly Message[], from: number): string {
  let text = '';
  for (let i = from; i < stored.length; i++) {
    const message = stored[i] as Message;
    if (message.role === 'user' && message.source === 'notification') {
      for (const part of message.content) if (part.type === 'text') text += part.text;
    }
  }
  return text;
}
