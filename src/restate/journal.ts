import * as restate from '@restatedev/restate-sdk';
import { type RetryOptions, type SerializedError, toModelError } from '../host/index.js';
import { type AssistantMessage, type Model, ModelError, type ModelEvent } from '../index.js';

/**
 * What one invocation journals, and how. Model calls and tool calls are Restate `ctx.run` side effects: a result
 * in the journal is never produced again; a replay (a retry, a worker that died, another worker) reads it back.
 * Only what a call adds is journaled (one answer, one result), never the conversation the call was made with.
 *
 * Journal entries are matched by position, so the order in which this invocation asks for effects must be the same
 * on every replay: the agent machine asks for them in the order of its steps and of a batch's calls, and every
 * name below comes from the journaled facts (the step's number, the model's call id), never from a clock or a
 * per-process id.
 */
export interface JournalScope {
  ctx: restate.ObjectContext;
  /** How many model calls this invocation has made: names each one's journal entry. */
  modelCalls: number;
  /** The tail of the invocation's effect queue (see {@link serially}). */
  tail: Promise<unknown>;
  /** How many effects have been queued: the last one's place in the queue, the same on every replay. */
  queued: number;
  /**
   * The last model answer: its effect's place in the queue, and whether its run ran in this attempt (`fresh`) rather
   * than being read back from the journal. Its tool calls start only once it is journaled, so a fresh answer says
   * that no earlier attempt started any of them (`tool-batch.ts` folds their `started` markers into it).
   */
  answered?: { at: number; fresh: boolean };
  /** Counts the effects that really ran in this process (not read back from the journal): for tests and benches. */
  ran: { model: number; tools: number };
  /** Called when Restate cancels the invocation (an effect's await throws `CancelledError`): ends the turn. */
  onCancel?: () => void;
  /**
   * Waits for one journaled effect: the turn's control (`control.ts`) races it with the doorbell that steers and
   * interrupts ring. `abandon` answers instead once the turn is interrupted, for waits nobody needs then.
   */
  wait<T>(effect: restate.RestatePromise<T>, abandon?: () => T): Promise<T>;
}

/** A fresh scope for one invocation; without `wait`, effects are awaited as they are. */
export function journalScope(ctx: restate.ObjectContext, wait?: JournalScope['wait']): JournalScope {
  return {
    ctx,
    modelCalls: 0,
    tail: Promise.resolve(),
    queued: 0,
    ran: { model: 0, tools: 0 },
    wait: wait ?? (async (effect) => effect),
  };
}

/**
 * Runs an invocation's effects one after the other, in the order they are asked for. Two reasons: journal entries
 * are matched by position, so the order must be one a replay reproduces (the order the machine asks, not the
 * order acknowledgements happen to arrive); and the SDK drives an invocation with one await at a time (a second
 * concurrent await fails with "awaitNext already pending" and aborts the attempt). Effects that may run together
 * are issued together inside one queued effect and awaited with one combinator (a tool batch, `tool-batch.ts`; a
 * swarm, `swarm.ts`).
 */
export function serially<T>(scope: JournalScope, effect: () => Promise<T>): Promise<T> {
  scope.queued++;
  const run = scope.tail.then(effect).catch((error: unknown) => {
    // Restate delivers a cancellation to the await in progress: the turn is interrupted before the error goes on,
    // so the machine closes the open calls and drops what this effect answers.
    if (error instanceof restate.CancelledError) scope.onCancel?.();
    throw error;
  });
  scope.tail = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

/**
 * What a journaled model call stores: its final answer, or the classified error it ended with (with what the
 * runtime's retry policy reads and `toJSON` leaves out: whether to retry, and the provider's `retry-after`).
 */
type ModelOutcome =
  | { message: AssistantMessage }
  | { error: SerializedError; retryable: boolean; retryAfterMs?: number };

function journaledError(error: ModelError): ModelOutcome {
  return {
    error: error.toJSON(),
    retryable: error.retryable,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
  };
}

/**
 * The agent's model, journaled. A call streams the model inside `ctx.run` and journals the final message (at least
 * once: a call in flight when a worker dies is asked again; once journaled, its answer is what every replay sees).
 * A model error is journaled too, as a value, so the runtime's own retry policy decides.
 */
export function journaledModel(scope: JournalScope, model: Model): Model {
  return {
    id: model.id,
    provider: model.provider,
    stream(request, signal) {
      const name = `model ${++scope.modelCalls}`;
      return (async function* (): AsyncGenerator<ModelEvent> {
        // The call runs inside its journaled run; its deltas come out here as they arrive (live only: a replay
        // reads the final message back, and has none), then the journaled outcome.
        const deltas: ModelEvent[] = [];
        let wake: (() => void) | undefined;
        const more = () => {
          wake?.();
          wake = undefined;
        };
        let settled = false;
        let fresh = false;
        const at = scope.queued + 1; // this call's place in the effect queue
        const outcomeOf = serially(scope, async () => {
          const outcome = await scope.wait(
            scope.ctx.run<ModelOutcome>(name, async () => {
              fresh = true;
              scope.ran.model++;
              try {
                // Interrupted before this call could start (a steer's take, a cancellation): the model is not asked.
                if (signal.aborted) throw signal.reason;
                const stream = model.stream(request, signal);
                const answer = untilAborted(
                  finalMessage(stream, (delta) => {
                    deltas.push(delta);
                    more();
                  }),
                  signal,
                );
                return { message: await answer };
              } catch (error) {
                return journaledError(toModelError(error, model.provider));
              }
            }),
          );
          scope.answered = { at, fresh };
          return outcome;
        });
        const done = () => {
          settled = true;
          more();
        };
        outcomeOf.then(done, done);
        while (!settled || deltas.length > 0) {
          const delta = deltas.shift();
          if (delta) yield delta;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
        const outcome = await outcomeOf;
        if ('error' in outcome) {
          const { error, retryable, retryAfterMs } = outcome;
          throw new ModelError({
            ...error,
            code: error.code as ModelError['code'],
            shouldRetry: retryable,
            ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          });
        }
        yield { type: 'done', message: outcome.message, stopReason: outcome.message.stopReason ?? 'stop' };
      })();
    },
  };
}

/** A model stream's final message, its deltas on the way; a stream that ends without one is a `bad_response`. */
async function finalMessage(
  stream: AsyncIterable<ModelEvent>,
  onDelta: (delta: ModelEvent) => void,
): Promise<AssistantMessage> {
  for await (const event of stream) {
    if (event.type === 'done') return event.message;
    onDelta(event);
  }
  throw new ModelError({ code: 'bad_response', message: 'The model stream ended without a final message' });
}

/**
 * The runtime's model retries, waiting on durable timers: the backoff is a journaled `ctx.sleep` (a retry after a
 * crash waits until the first attempt's deadline, not a new one) and its jitter comes from Restate's deterministic
 * random, so a replay asks for the same waits in the same places.
 */
export function journaledRetry(scope: JournalScope, retry: RetryOptions | false | undefined): RetryOptions | false {
  if (retry === false) return false;
  return {
    ...retry,
    sleep: (ms, signal) =>
      untilAborted(
        // Given up when the turn is interrupted: the runtime has stopped waiting (its signal), and so does the turn.
        serially(scope, () => scope.wait(scope.ctx.sleep(ms), () => undefined)),
        signal,
      ),
    random: () => scope.ctx.rand.random(),
  };
}

/**
 * A tool that ignores its signal must not hold the invocation: its `ctx.run` would stay open, every later effect
 * (queued behind it) would wait, and the object's key would stay locked. When the runtime gives up on the call (its
 * `timeoutMs`, an interrupt), the run ends with the abort's reason, journaled like a thrown error; the hung promise
 * is left behind in this process.
 */
export function untilAborted<T>(running: T | Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    Promise.resolve(running).catch(() => {}); // given up on: its own failure concerns nobody
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(running)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}
