import {
  type AssistantContent,
  type AssistantMessage,
  emptyUsage,
  type JsonObject,
  type Model,
  ModelError,
  type ModelErrorInit,
  type ModelEvent,
  type ModelRequest,
  type ModelStopReason,
  textOf,
  type Usage,
} from '../protocol/index.js';
import { keepShape, specimensToTake } from '../protocol/shapes.js';
import { toolCallPart } from './tool-call.js';

/** A tool call in a scripted answer: the tool's name and its arguments (an object, or raw text to test broken JSON). */
export interface ScriptedToolCall {
  name: string;
  /** An object, or raw argument text (which may be deliberately broken JSON). */
  args?: JsonObject | string;
  id?: string;
}

/** One model answer, played back as a stream. */
export interface ScriptedAnswer {
  text?: string;
  reasoning?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: Partial<Usage>;
  /** Defaults to `tool_calls` when there are tool calls, else `stop`. */
  stopReason?: ModelStopReason;
  /** Thrown instead of finishing the answer, after any text has streamed. */
  error?: ModelError | ModelErrorInit;
  /** Waits this long before the first event. */
  latencyMs?: number;
  /** Characters per text / reasoning / argument delta (default: 8; 0 for the whole text in one delta). */
  chunkSize?: number;
  /** Waits this long between deltas, for demos that should look like a live model. */
  deltaDelayMs?: number;
}

/** One entry of a list script: an answer, or a function that makes it from the request (see {@link Script}). */
export type ScriptStep = ScriptedAnswer | ((request: ModelRequest, index: number) => ScriptedAnswer);

/**
 * What a {@link scriptedModel} plays: a list, one answer per call in order (an error once it runs out), or a
 * function called for every request with the request and the call's index (from 0), which may return a promise.
 * A function suits any test whose calls do not come in a fixed order, such as parallel subagents sharing a model.
 *
 * The request is what a provider would be sent: `system`, `messages` (the asking agent's conversation, oldest
 * first: its task is the first user message) and `tools`. After a tool call, the last message is the tool
 * message (`role: 'tool'`), one result per call in `content`, each result's text in its own `content`;
 * `textOf(message)` gives them all, one result a line.
 */
export type Script =
  | ScriptStep[]
  | ((request: ModelRequest, index: number) => ScriptedAnswer | Promise<ScriptedAnswer>);

/** Options of `scriptedModel`: its id, and whether it keeps every request it receives in `requests`. */
export interface ScriptedModelOptions {
  id?: string;
  /** Keep a copy of every request in `requests` (default true; benchmarks turn it off). */
  record?: boolean;
}

export interface ScriptedModel extends Model {
  /** Every request received, in order, with the messages as they were at the time. */
  readonly requests: ModelRequest[];
  /** How many answers have been played. */
  readonly calls: number;
}

/**
 * A model that plays a script: for tests, benchmarks and offline demos. Each answer streams as a provider's would
 * (text, reasoning and tool-call deltas, usage, `done`); `requests` keeps what the model was sent.
 *
 * @example
 * // A list: the first call asks for the weather, the second answers.
 * const listed = scriptedModel([
 *   { toolCalls: [{ name: 'get_weather', args: { city: 'Oslo' } }] },
 *   { text: 'Oslo: sleet. Take a coat.' },
 * ]);
 *
 * @example
 * // A function: every agent of a tree can share it, each answered from its own conversation. Annotate the
 * // return type, so that both branches are checked as one ScriptedAnswer.
 * const shared = scriptedModel((request): ScriptedAnswer => {
 *   const task = textOf(request.messages[0]); // the asking agent's task
 *   const last = request.messages.at(-1);
 *   if (last?.role === 'tool') return { text: `${task} ${textOf(last)}` }; // the tool results' text
 *   return { toolCalls: [{ name: 'get_weather', args: { city: task.split(' ').at(-1) ?? '' } }] };
 * });
 */
export function scriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel {
  return new Scripted(new ScriptState(script, options.id ?? 'scripted', options.record ?? true));
}

/**
 * The model `scriptedModel` returns. Its `stream` is the prototype's `play`, bound: one function's optimised code for
 * every scripted model (V8 drops the code of a function none of whose objects live, so an arrow made per model would
 * be compiled again by each model made after a collection), and still callable detached, as a provider's is. The
 * specimens below keep these classes' hidden classes for the same reason (see src/protocol/shapes.ts).
 */
class Scripted implements ScriptedModel {
  readonly id: string;
  readonly provider: string = 'scripted';
  readonly requests: ModelRequest[];
  readonly stream: (request: ModelRequest, signal: AbortSignal) => AsyncIterable<ModelEvent>;

  constructor(private readonly state: ScriptState) {
    this.id = state.id;
    this.requests = state.requests;
    this.stream = this.play.bind(this);
  }

  get calls(): number {
    return this.state.calls;
  }

  private play(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
    return new Playback(this.state, request, signal);
  }
}

/** What the answers of one scripted model share: the script, the counters and the recorded requests. */
class ScriptState {
  readonly requests: ModelRequest[] = [];
  calls = 0;
  private nextCallId = 0;

  constructor(
    private readonly script: Script,
    readonly id: string,
    private readonly record: boolean,
  ) {}

  /** Records the request and takes the next answer: as it is when the script has it, a promise only if its function returns one. */
  begin(request: ModelRequest): ScriptedAnswer | Promise<ScriptedAnswer> {
    if (this.record) this.requests.push({ ...request, messages: [...request.messages] });
    const index = this.calls++;
    const script = this.script;
    if (typeof script === 'function') return script(request, index);
    const step = script[index];
    if (step === undefined) {
      const last = [...request.messages].reverse().find((m) => m.role === 'user');
      throw new Error(
        `scriptedModel: the script has ${script.length} answer(s) and this is request ${index + 1}` +
          (last ? ` (last user message: ${JSON.stringify(textOf(last).slice(0, 80))})` : ''),
      );
    }
    return typeof step === 'function' ? step(request, index) : step;
  }

  /** The events after the text: tool calls, usage, and `done` with the whole message. */
  finish(answer: ScriptedAnswer, events: ModelEvent[]): void {
    const chunk = answer.chunkSize ?? 8;
    const content: AssistantContent[] = [];
    if (answer.reasoning) content.push({ type: 'reasoning', text: answer.reasoning });
    if (answer.text) content.push({ type: 'text', text: answer.text });
    const toolCalls = answer.toolCalls;
    if (toolCalls) {
      for (const call of toolCalls) {
        const callId = call.id ?? `call_${++this.nextCallId}`;
        const text = typeof call.args === 'string' ? call.args : JSON.stringify(call.args ?? {});
        events.push({ type: 'tool_call_start', id: callId, name: call.name });
        for (const delta of chunks(text, chunk)) events.push({ type: 'tool_call_delta', id: callId, delta });
        events.push({ type: 'tool_call_end', id: callId });
        content.push(toolCallPart(callId, call.name, text));
      }
    }
    // A spread only when the script gives usage: on this V8 it takes a slow path, and most answers have none.
    const usage = answer.usage ? { ...emptyUsage(), ...answer.usage } : emptyUsage();
    if (answer.usage) events.push({ type: 'usage', usage });
    const stopReason = answer.stopReason ?? (toolCalls?.length ? 'tool_calls' : 'stop');
    const message: AssistantMessage = {
      role: 'assistant',
      content,
      provider: 'scripted',
      model: this.id,
      stopReason,
      usage,
    };
    events.push({ type: 'done', message, stopReason });
  }
}

/**
 * One answer played back. An answer the script has at once, without latency or pacing (what tests and benchmarks
 * mostly play), is served straight from the answer, one resolved promise per event: an async generator costs
 * several promise hops per event, which was most of this model's cost. Deltas are cut as they are asked for, so
 * a long answer is never held as a list of events; the short tail (tool calls, usage, `done`) is made when the
 * text is over, as the generator did. Anything that waits (a promised answer, latency, pacing) is played by the
 * generator {@link paced}. Both give the same events in the same order, and check the signal at the same points:
 * before the first event and after each text delta.
 */
class Playback implements AsyncIterableIterator<ModelEvent> {
  private answer?: ScriptedAnswer;
  private chunk = 8;
  /** Where the next delta starts: in the reasoning, then in the text. */
  private phase: 'reasoning' | 'text' | 'tail' = 'reasoning';
  private offset = 0;
  private afterText = false;
  private tail?: ModelEvent[];
  private index = 0;
  private slow?: AsyncGenerator<ModelEvent>;
  private finished = false;

  constructor(
    private readonly state: ScriptState,
    private readonly request: ModelRequest,
    private readonly signal: AbortSignal,
  ) {}

  next(): Promise<IteratorResult<ModelEvent>> {
    if (this.slow) return this.slow.next();
    if (this.finished) return Promise.resolve({ value: undefined, done: true });
    let answer = this.answer;
    if (answer === undefined) {
      let next: ScriptedAnswer | Promise<ScriptedAnswer>;
      try {
        next = this.state.begin(this.request);
      } catch (error) {
        return this.fail(error);
      }
      if (isPromise(next) || next.latencyMs || next.deltaDelayMs) {
        this.slow = paced(this.state, next, this.signal);
        return this.slow.next();
      }
      if (this.signal.aborted) return this.fail(aborted());
      answer = next;
      this.answer = answer;
      this.chunk = answer.chunkSize ?? 8;
    } else if (this.afterText && this.signal.aborted) {
      return this.fail(aborted());
    }
    if (this.phase === 'reasoning') {
      const delta = this.cut(answer.reasoning);
      if (delta !== undefined) return Promise.resolve({ value: { type: 'reasoning_delta', delta }, done: false });
      this.phase = 'text';
      this.offset = 0;
    }
    if (this.phase === 'text') {
      const delta = this.cut(answer.text);
      if (delta !== undefined) {
        this.afterText = true;
        return Promise.resolve({ value: { type: 'text_delta', delta }, done: false });
      }
      this.phase = 'tail';
      this.afterText = false;
      if (answer.error) return this.fail(toModelError(answer.error));
      this.tail = [];
      this.state.finish(answer, this.tail);
    }
    const tail = this.tail as ModelEvent[];
    if (this.index < tail.length) return Promise.resolve({ value: tail[this.index++] as ModelEvent, done: false });
    this.finished = true;
    return Promise.resolve({ value: undefined, done: true });
  }

  return(): Promise<IteratorResult<ModelEvent>> {
    if (this.slow) return this.slow.return(undefined);
    this.finished = true;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next delta of `text` (`chunk` characters, or all of it for a chunk of 0), or undefined at its end. */
  private cut(text: string | undefined): string | undefined {
    if (!text || this.offset >= text.length) return undefined;
    const start = this.offset;
    this.offset = this.chunk <= 0 ? text.length : start + this.chunk;
    return start === 0 && this.offset >= text.length ? text : text.slice(start, this.offset);
  }

  private fail(error: unknown): Promise<never> {
    this.finished = true;
    return Promise.reject(error);
  }
}

/** An answer that waits: for the script's promise, its latency, or between deltas. */
async function* paced(
  state: ScriptState,
  pending: ScriptedAnswer | Promise<ScriptedAnswer>,
  signal: AbortSignal,
): AsyncGenerator<ModelEvent> {
  // An answer the script has at once starts its latency with the call: an `await` on it would first wait for the
  // microtask queue, which a burst of thousands of calls fills, so every latency would start after the burst.
  const answer = isPromise(pending) ? await pending : pending;
  if (answer.latencyMs) await sleep(answer.latencyMs, signal);
  throwIfAborted(signal);
  const chunk = answer.chunkSize ?? 8;
  const pace = answer.deltaDelayMs ?? 0;
  if (answer.reasoning) {
    for (const delta of chunks(answer.reasoning, chunk)) {
      yield { type: 'reasoning_delta', delta };
      if (pace) await sleep(pace, signal);
    }
  }
  if (answer.text) {
    for (const delta of chunks(answer.text, chunk)) {
      yield { type: 'text_delta', delta };
      if (pace) await sleep(pace, signal);
      throwIfAborted(signal);
    }
  }
  if (answer.error) throw toModelError(answer.error);
  const rest: ModelEvent[] = [];
  state.finish(answer, rest);
  for (const event of rest) yield event;
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown }).then === 'function';
}

function toModelError(error: ModelError | ModelErrorInit): ModelError {
  return error instanceof ModelError ? error : new ModelError(error);
}

/** The deltas of a text: `size` characters each, the whole text at once for a size of 0, none for an empty text. */
function* chunks(text: string, size: number): Generator<string> {
  if (size <= 0 || text.length <= size) {
    if (text.length > 0) yield text;
    return;
  }
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

function aborted(): ModelError {
  return new ModelError({ code: 'aborted', message: 'The model call was aborted', provider: 'scripted' });
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw aborted();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(aborted());
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

specimensToTake(() => {
  // A model that has played a tool call to its end, as every scripted step does (see `Scripted`).
  const model = new Scripted(new ScriptState([{ toolCalls: [{ name: 'specimen', args: {} }] }], 'specimen', false));
  const playback = model.stream({ messages: [], tools: [] }, new AbortController().signal) as Playback;
  for (let i = 0; i < 8; i++) void playback.next();
  keepShape(model);
  keepShape(playback);
});
