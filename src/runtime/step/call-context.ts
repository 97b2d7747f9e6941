// What a tool call runs with: its `ctx`, and the deadline a tool's `timeout` sets.
import { type JsonValue, redactJson, type ToolCallPart } from '../../protocol/index.js';
import type { ToolContext } from '../../tools/index.js';
import type { AgentEnv } from '../env/env.js';
import type { ToolBatch } from '../env/in-flight.js';

/**
 * What a tool gets as `ctx`. A class rather than an object literal with a getter and closures: on this V8 a
 * literal with an accessor takes a slow path (~1.5 µs a call here, more than the rest of a quick call), and every
 * closure was one more allocation per call. `update` stays an own function, so `const { update } = ctx` works;
 * `signal` is a getter on the prototype, read as `ctx.signal` or destructured. The runtime's side is in `#`
 * fields, so a tool that logs or serialises its ctx shows the ids, never the agent's runtime (its model client).
 */
export class CallContext implements ToolContext {
  readonly toolCallId: string;
  readonly agentId: string;
  readonly update: (partial: JsonValue) => void;
  readonly #env: AgentEnv;
  readonly #call: ToolCallPart;
  readonly #batch: ToolBatch;
  // The call's own controller (aborted with the batch, or by its timeout) costs several µs to make with its
  // signal, more than the rest of a quick call: it is made only when the tool reads `ctx.signal` or has a timeout.
  #own: AbortController | undefined = undefined;
  #settled = false;

  constructor(env: AgentEnv, call: ToolCallPart, batch: ToolBatch) {
    this.toolCallId = call.id;
    this.agentId = env.agentId;
    this.update = updater(this);
    this.#env = env;
    this.#call = call;
    this.#batch = batch;
  }

  get signal(): AbortSignal {
    return this.controller().signal;
  }

  denied(path: string): boolean {
    return this.#env.settings.permissions.deniesPath(this.#call.name, path);
  }

  controller(): AbortController {
    if (this.#own) return this.#own;
    const own = new AbortController();
    this.#own = own;
    if (this.#batch.aborted) own.abort();
    else if (!this.#settled) this.#batch.link(own);
    return own;
  }

  publishUpdate(partial: JsonValue): void {
    const env = this.#env;
    const call = this.#call;
    if (this.#batch.aborted || this.#own?.signal.aborted || !env.bus.wants('tool_execution_update')) return;
    env.emit({ type: 'tool_execution_update', toolCallId: call.id, toolName: call.name, partial: redactJson(partial) });
  }

  /** The call is over: a later abort of the batch no longer reaches its signal. */
  settle(): void {
    this.#settled = true;
    if (this.#own) this.#batch.unlink(this.#own);
  }
}

// Made by a function so that the closure is anonymous: a named one costs a `__name` call under tsx.
function updater(ctx: CallContext): (partial: JsonValue) => void {
  return (partial) => ctx.publishUpdate(partial);
}

class ToolTimeout extends Error {}

export function isToolTimeout(error: unknown): boolean {
  try {
    return error instanceof ToolTimeout;
  } catch {
    return false; // `instanceof` on a revoked proxy throws: a tool threw it, so it is no timeout of ours
  }
}

export function withTimeout<T>(running: Promise<T>, ms: number, controller: AbortController): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      const timeout = new ToolTimeout(`timed out after ${ms} ms`);
      controller.abort(timeout);
      reject(timeout);
    }, ms);
    // Whatever the tool produces after its deadline is dropped: the promise has already settled.
    running.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
