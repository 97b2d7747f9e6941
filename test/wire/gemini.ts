/**
 * Gemini's `streamGenerateContent?alt=sse` wire format, from its public API reference: each SSE `data:` is a
 * `GenerateContentResponse` (`candidates[].content.parts[]` with `text`, `thought: true` for thought summaries,
 * `functionCall { name, args }` or, when arguments stream, `{ name, willContinue }` followed by `partialArgs`
 * pieces and a closing empty `functionCall`; `thoughtSignature` beside a part), the last one carrying the
 * candidate's `finishReason` and the `usageMetadata`. Errors are Google's `{ error: { code, message, status } }`.
 */
import { pieces } from './builders.js';
import type { SseEvent, WireReply } from './server.js';

/** One piece of streamed arguments: a JSON path and its value (a string may continue in the next piece). */
export interface PartialArg {
  jsonPath: string;
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  willContinue?: boolean;
}

export interface GeminiTurn {
  thought?: string;
  text?: string;
  /** Function calls sent whole, one part each. */
  calls?: { name: string; args: Record<string, unknown>; signature?: string }[];
  /** A function call whose arguments stream over several events, one array of pieces an event. */
  streamedCall?: { name: string; pieces: PartialArg[][]; signature?: string };
  /** Characters per text event (default 4). */
  split?: number;
  /** `STOP` by default; null for none (a stream that ends without its last chunk). */
  finish?: string | null;
  usage?: { prompt: number; candidates: number; thoughts?: number; cached?: number };
}

type Part = Record<string, unknown>;

export function geminiEvents(turn: GeminiTurn): SseEvent[] {
  const size = turn.split ?? 4;
  const chunk = (parts: Part[], last?: { finishReason: string; usage?: GeminiTurn['usage'] }): SseEvent => {
    const usage = last?.usage;
    return {
      data: JSON.stringify({
        candidates: [
          { content: { parts, role: 'model' }, index: 0, ...(last ? { finishReason: last.finishReason } : {}) },
        ],
        ...(usage
          ? {
              usageMetadata: {
                promptTokenCount: usage.prompt,
                candidatesTokenCount: usage.candidates,
                totalTokenCount: usage.prompt + usage.candidates + (usage.thoughts ?? 0),
                ...(usage.thoughts ? { thoughtsTokenCount: usage.thoughts } : {}),
                ...(usage.cached ? { cachedContentTokenCount: usage.cached } : {}),
              },
            }
          : {}),
        modelVersion: 'gemini-test',
        responseId: 'resp-gemini-1',
      }),
    };
  };
  const events: SseEvent[] = [];
  const thought = pieces(turn.thought ?? '', size);
  thought.forEach((text, i) => {
    events.push(
      chunk([{ text, thought: true, ...(i === thought.length - 1 ? { thoughtSignature: 'c2lnLXRob3VnaHQ=' } : {}) }]),
    );
  });
  for (const text of pieces(turn.text ?? '', size)) events.push(chunk([{ text }]));
  for (const call of turn.calls ?? []) {
    events.push(
      chunk([
        {
          functionCall: { name: call.name, args: call.args },
          ...(call.signature ? { thoughtSignature: call.signature } : {}),
        },
      ]),
    );
  }
  const streamed = turn.streamedCall;
  if (streamed) {
    const signature = streamed.signature ? { thoughtSignature: streamed.signature } : {};
    events.push(chunk([{ functionCall: { name: streamed.name, willContinue: true }, ...signature }]));
    for (const partialArgs of streamed.pieces)
      events.push(chunk([{ functionCall: { partialArgs, willContinue: true } }]));
    events.push(chunk([{ functionCall: {} }]));
  }
  if (turn.finish !== null) {
    events.push(
      chunk([{ text: '' }], {
        finishReason: turn.finish ?? 'STOP',
        usage: turn.usage ?? { prompt: 10, candidates: 5 },
      }),
    );
  }
  return events;
}

export function geminiReply(turn: GeminiTurn, extra: Partial<Extract<WireReply, { kind: 'sse' }>> = {}): WireReply {
  return { kind: 'sse', events: geminiEvents(turn), split: true, ...extra };
}

/** An error as Google's APIs send it: the HTTP status, and the same code with its RPC status name in the body. */
export function geminiError(status: number, rpcStatus: string, message: string, details?: unknown[]): WireReply {
  return {
    kind: 'json',
    status,
    body: { error: { code: status, message, status: rpcStatus, ...(details ? { details } : {}) } },
  };
}
