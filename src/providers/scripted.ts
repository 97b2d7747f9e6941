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
import { toolCallPart } from './tool-call.js';

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

export type ScriptStep = ScriptedAnswer | ((request: ModelRequest, index: number) => ScriptedAnswer);
export type Script =
  | ScriptStep[]
  | ((request: ModelRequest, index: number) => ScriptedAnswer | Promise<ScriptedAnswer>);

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

/** A model that plays a script: for tests, benchmarks and offline demos. */
export function scriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel {
  const requests: ModelRequest[] = [];
  const record = options.record ?? true;
  let calls = 0;
  let nextCallId = 0;
  const id = options.id ?? 'scripted';

  async function nextAnswer(request: ModelRequest): Promise<ScriptedAnswer> {
    const index = calls++;
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

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    if (record) requests.push({ ...request, messages: [...request.messages] });
    const answer = await nextAnswer(request);
    if (answer.latencyMs) await sleep(answer.latencyMs, signal);
    throwIfAborted(signal);

    const chunk = answer.chunkSize ?? 8;
    const pace = answer.deltaDelayMs ?? 0;
    const content: AssistantContent[] = [];

    if (answer.reasoning) {
      for (const delta of split(answer.reasoning, chunk)) {
        yield { type: 'reasoning_delta', delta };
        if (pace) await sleep(pace, signal);
      }
      content.push({ type: 'reasoning', text: answer.reasoning });
    }
    if (answer.text) {
      for (const delta of split(answer.text, chunk)) {
        yield { type: 'text_delta', delta };
        if (pace) await sleep(pace, signal);
        throwIfAborted(signal);
      }
      content.push({ type: 'text', text: answer.text });
    }
    if (answer.error) throw answer.error instanceof ModelError ? answer.error : new ModelError(answer.error);

    for (const call of answer.toolCalls ?? []) {
      const callId = call.id ?? `call_${++nextCallId}`;
      const text = typeof call.args === 'string' ? call.args : JSON.stringify(call.args ?? {});
      yield { type: 'tool_call_start', id: callId, name: call.name };
      for (const delta of split(text, chunk)) yield { type: 'tool_call_delta', id: callId, delta };
      yield { type: 'tool_call_end', id: callId };
      content.push(toolCallPart(callId, call.name, text));
    }

    const usage = { ...emptyUsage(), ...answer.usage };
    if (answer.usage) yield { type: 'usage', usage };
    const stopReason = answer.stopReason ?? (answer.toolCalls?.length ? 'tool_calls' : 'stop');
    const message: AssistantMessage = {
      role: 'assistant',
      content,
      provider: 'scripted',
      model: id,
      stopReason,
      usage,
    };
    yield { type: 'done', message, stopReason };
  }

  return {
    id,
    provider: 'scripted',
    requests,
    get calls() {
      return calls;
    },
    stream,
  };
}

function* split(text: string, size: number): Generator<string> {
  if (size <= 0 || text.length <= size) {
    if (text.length > 0) yield text;
    return;
  }
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted)
    throw new ModelError({ code: 'aborted', message: 'The model call was aborted', provider: 'scripted' });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new ModelError({ code: 'aborted', message: 'The model call was aborted', provider: 'scripted' }));
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ModelError({ code: 'aborted', message: 'The model call was aborted', provider: 'scripted' }));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
