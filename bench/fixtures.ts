import { z } from 'zod';
import type { Message, ModelEvent, ModelRequest } from '../src/protocol/index.js';
import { type ScriptedAnswer, type ScriptedModel, scriptedModel } from '../src/providers/scripted.js';
import type { Store, StoreWriter } from '../src/session/index.js';
import { type AnyTool, defineTool } from '../src/tools/index.js';

/**
 * What every implementation of a workload shares: the scripted model's answers and the tools. Baselines and
 * Troupe get the same objects, so the figures differ only by the orchestration around them. Imported from the
 * modules that define them, not from an index: a baseline's process must not load Troupe's runtime, or its peak
 * RSS would carry it (every row carries zod and Troupe's tool and protocol modules, about 8 MB).
 */

/** Counts what the tools really did, so that a workload can check every call ran. */
export class ToolCounter {
  calls = 0;
}

// Schemas are made once, as a program's tools are: zod compiles a parser per schema object on its first parse,
// which a schema made per run would pay again in every run of every implementation.
const echoSchema = z.object({ text: z.string() });
const waitSchema = z.object({ n: z.number() });

/** W1's tool: synchronous, returns its argument. */
export function echoTool(counter: ToolCounter): AnyTool {
  return defineTool({
    name: 'echo',
    description: 'Returns its text.',
    schema: echoSchema,
    execute: ({ text }) => {
      counter.calls++;
      return text;
    },
  });
}

/** W2's tool: waits, then answers. */
export function waitTool(counter: ToolCounter, ms: number): AnyTool {
  return defineTool({
    name: 'wait',
    description: 'Waits, then answers.',
    schema: waitSchema,
    execute: ({ n }) =>
      new Promise<string>((resolve) =>
        setTimeout(() => {
          counter.calls++;
          resolve(`waited ${n}`);
        }, ms),
      ),
  });
}

export const FINAL_TEXT = 'done';

/** W1: `steps` answers with one echo call each, then a final text. Latency 0. */
export function toolLoopModel(steps: number): ScriptedModel {
  return scriptedModel(
    (_request, index): ScriptedAnswer =>
      index < steps ? { toolCalls: [{ name: 'echo', args: { text: `step ${index}` } }] } : { text: FINAL_TEXT },
    { record: false },
  );
}

/**
 * W3 / W5: one model shared by many agents; each conversation gets `toolSteps` echo calls, then a final text.
 * Which step a request is at comes from its own history (its assistant messages), not from a global index.
 */
export function swarmModel(size: { toolSteps: number; latencyMs: number }): ScriptedModel {
  return scriptedModel(
    (request): ScriptedAnswer => {
      let step = 0;
      for (const message of request.messages) if (message.role === 'assistant') step++;
      // Literals, not spreads: a literal's hidden class lives as long as its code, a spread's only while an answer
      // made by it does (a collection between two runs would free it, and the model's code that reads answers).
      const latencyMs = size.latencyMs;
      return step < size.toolSteps
        ? { latencyMs, toolCalls: [{ name: 'echo', args: { text: `step ${step}` } }] }
        : { latencyMs, text: FINAL_TEXT };
    },
    { record: false },
  );
}

/** W2: one answer with `calls` wait calls, then a final text. */
export function parallelBatchModel(calls: number): ScriptedModel {
  const batch = Array.from({ length: calls }, (_, n) => ({ name: 'wait', args: { n } }));
  return scriptedModel(
    (_request, index): ScriptedAnswer => (index === 0 ? { toolCalls: batch } : { text: FINAL_TEXT }),
    {
      record: false,
    },
  );
}

/** W4: one answer streaming `deltas` text deltas of `size` characters. */
export function streamingText(deltas: number, size: number): string {
  const unit = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let text = '';
  for (let i = 0; i < deltas; i++) {
    const start = i % (unit.length - size);
    text += unit.slice(start, start + size);
  }
  return text;
}

export function streamingModel(text: string, size: number): ScriptedModel {
  return scriptedModel([{ text, chunkSize: size }], { record: false });
}

// One signal for every drained request: making an AbortSignal costs several µs on Node 20, as much as the answer.
const neverAborted = new AbortController().signal;

/** The scripted model alone: a request, every event read, nothing done with them. */
export async function drainModel(model: ScriptedModel, messages: Message[] = []): Promise<number> {
  const request: ModelRequest = { messages, tools: [] };
  let events = 0;
  const signal = neverAborted;
  for await (const _event of model.stream(request, signal) as AsyncIterable<ModelEvent>) events++;
  return events;
}

/**
 * A session store that takes every record and keeps none: the journal's own work (events, records, encoding) with
 * no system call behind it. Only for measuring; a session on it cannot be opened again.
 */
export class DiscardingStore implements Store {
  list(): string[] {
    return [];
  }
  read(): string[] {
    return [];
  }
  acquire(): StoreWriter {
    return { append() {}, truncate() {}, release() {} };
  }
  isLocked(): boolean {
    return false;
  }
  remove(): void {}
}
