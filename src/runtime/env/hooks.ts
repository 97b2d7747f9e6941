import type { AgentInfo } from '../../permissions/index.js';
import {
  type AssistantMessage,
  describeThrown,
  GuardrailTripped,
  HookFailed,
  type ModelRequest,
  type ToolCallPart,
  type TurnError,
  type TurnStopReason,
  type Usage,
  type UserMessage,
} from '../../protocol/index.js';
import type { ToolOutput } from '../../tools/index.js';

/** What a before-tool-call hook may answer: nothing (go on), other arguments, an answer without running, or a refusal. */
export type BeforeToolCallAnswer = undefined | { args: unknown } | { result: ToolOutput } | { deny: string };

/** How a turn ended, as the afterTurn hooks see it. */
export interface TurnEnd {
  stopReason: TurnStopReason;
  /** The text of the turn's last assistant message. */
  text: string;
  usage: Usage;
  error?: TurnError;
}

/**
 * Hooks around an agent's phases. Each point takes one function or a list; a list runs in order and each hook sees
 * what the previous one made (rewrites compose, none is lost). Hooks may be async. Subagents inherit their parent's
 * hooks unless `subagents: false`, so a hook on the root sees every call of the tree (`agent.parentId` says whose
 * it is).
 *
 * A hook that throws or outlives `timeoutMs` fails closed: a tool hook gives the call an error result (the tool does
 * not run), a turn or model hook ends the turn with a classified error (`hook_failed`). A hook declared with
 * `failOpen: true` (`{ run, failOpen: true }`) is skipped instead, and its failure reported on the console. A hook
 * that throws {@link GuardrailTripped} ends the turn with the stop reason `guardrail_tripped` (fail-open or not).
 *
 * While a hook runs, the agent's statechart says so: `step.preparing` (beforeTurn, beforeModelCall),
 * `step.reviewing` (afterModelCall), `step.tools.gating` (beforeToolCall); afterToolCall runs inside
 * `step.tools.executing`, as part of each call, so that `tool_execution_end` already carries the changed result.
 */
export interface Hooks {
  /** Before the first model call of a turn, with the turn's input: throw {@link GuardrailTripped} to refuse it. */
  beforeTurn?: HookList<(input: readonly UserMessage[], agent: AgentInfo) => void | Promise<void>>;
  /** Before each model call: change the request (messages, tools, tool choice, settings) — the AI SDK's prepareStep. */
  beforeModelCall?: HookList<
    (request: ModelRequest, agent: AgentInfo) => ModelRequest | undefined | Promise<ModelRequest | undefined>
  >;
  /** After each model call: change the answer, or throw (e.g. {@link GuardrailTripped}) to reject it. */
  afterModelCall?: HookList<
    (
      message: AssistantMessage,
      agent: AgentInfo,
    ) => AssistantMessage | undefined | Promise<AssistantMessage | undefined>
  >;
  /** Before a tool runs (after validation and permissions): change its arguments, answer it, or refuse it. */
  beforeToolCall?: HookList<
    (call: ToolCallPart, args: unknown, agent: AgentInfo) => BeforeToolCallAnswer | Promise<BeforeToolCallAnswer>
  >;
  /** After a tool ran (or a hook answered for it): change its result. */
  afterToolCall?: HookList<
    (
      call: ToolCallPart,
      output: ToolOutput,
      agent: AgentInfo,
    ) => ToolOutput | undefined | Promise<ToolOutput | undefined>
  >;
  /**
   * When a turn has ended, every turn (one a steer or a background result opened too, which no caller awaits):
   * observe only (a failure is reported on the console, the result stands).
   */
  afterTurn?: HookList<(end: TurnEnd, agent: AgentInfo) => void | Promise<void>>;
  /** How long a hook may take before it counts as failed (default 10,000 ms). */
  timeoutMs?: number;
  /** Whether subagents (and their subagents) run these hooks too (default true). */
  subagents?: boolean;
}

// biome-ignore lint/suspicious/noExplicitAny: a hook list is typed at its point; this only erases it to run it.
type AnyHook = (...args: any[]) => unknown;
export type HookList<F extends AnyHook> =
  | F
  | { run: F; failOpen?: boolean }
  | ReadonlyArray<F | { run: F; failOpen?: boolean }>;

interface Entry<F extends AnyHook> {
  run: F;
  failOpen: boolean;
}

function entries<F extends AnyHook>(list: HookList<F> | undefined): Entry<F>[] {
  if (list === undefined) return [];
  const items = Array.isArray(list) ? list : [list];
  return items.map((item: F | { run: F; failOpen?: boolean }) =>
    typeof item === 'function' ? { run: item, failOpen: false } : { run: item.run, failOpen: item.failOpen === true },
  );
}

function isGuardrailTrip(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'guardrail_tripped';
}

/** Runs one hook under its deadline; undefined when it failed open. */
async function runOne<F extends AnyHook>(
  entry: Entry<F>,
  point: string,
  timeoutMs: number,
  args: Parameters<F>,
): Promise<{ value: Awaited<ReturnType<F>> } | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const value = await Promise.race([
      Promise.resolve().then(() => entry.run(...args)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new HookFailed(`the ${point} hook did not answer within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
    return { value: value as Awaited<ReturnType<F>> };
  } catch (error) {
    if (isGuardrailTrip(error)) throw error;
    if (entry.failOpen) {
      console.error(`[troupe] a fail-open ${point} hook failed and was skipped:`, error);
      return undefined;
    }
    throw error instanceof HookFailed ? error : new HookFailed(`the ${point} hook failed: ${describeThrown(error)}`);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** What the gate made of one call: its (maybe changed) arguments, or the output that stands for the tool's. */
export type GateOutcome = { args: unknown } | { output: ToolOutput };

/** The agent's hooks, resolved once into lists, and applied by the workers. */
export class HookRunner {
  private readonly beforeTurnHooks;
  private readonly beforeModel;
  private readonly afterModel;
  private readonly beforeTool;
  private readonly afterTool;
  private readonly afterTurnHooks;
  private readonly timeoutMs: number;
  /** What subagents inherit: these hooks, or none. */
  readonly inherited: HookRunner | undefined;

  constructor(hooks: Hooks) {
    this.beforeTurnHooks = entries(hooks.beforeTurn);
    this.beforeModel = entries(hooks.beforeModelCall);
    this.afterModel = entries(hooks.afterModelCall);
    this.beforeTool = entries(hooks.beforeToolCall);
    this.afterTool = entries(hooks.afterToolCall);
    this.afterTurnHooks = entries(hooks.afterTurn);
    this.timeoutMs = hooks.timeoutMs ?? 10_000;
    this.inherited = hooks.subagents === false ? undefined : this;
  }

  /** Step `step` waits on hooks before its model call. */
  prepares(step: number): boolean {
    return this.beforeModel.length > 0 || (step === 1 && this.beforeTurnHooks.length > 0);
  }

  /** Whether any afterTurn hook observes turn ends (a turn nobody awaits builds its result only for them). */
  get observesTurns(): boolean {
    return this.afterTurnHooks.length > 0;
  }

  get reviews(): boolean {
    return this.afterModel.length > 0;
  }

  get gates(): boolean {
    return this.beforeTool.length > 0;
  }

  get changesResults(): boolean {
    return this.afterTool.length > 0;
  }

  /** The turn's input checks (on its first step), then the request rewrites, in order. */
  async prepare(
    request: ModelRequest,
    agent: AgentInfo,
    turnInput: readonly UserMessage[] | undefined,
  ): Promise<ModelRequest> {
    if (turnInput) {
      for (const entry of this.beforeTurnHooks) await runOne(entry, 'beforeTurn', this.timeoutMs, [turnInput, agent]);
    }
    let current = request;
    for (const entry of this.beforeModel) {
      const answer = await runOne(entry, 'beforeModelCall', this.timeoutMs, [current, agent]);
      if (answer?.value) current = answer.value;
    }
    return current;
  }

  async review(message: AssistantMessage, agent: AgentInfo): Promise<AssistantMessage> {
    let current = message;
    for (const entry of this.afterModel) {
      const answer = await runOne(entry, 'afterModelCall', this.timeoutMs, [current, agent]);
      if (answer?.value) current = answer.value;
    }
    return current;
  }

  /**
   * One call through the beforeToolCall hooks. A refusal or a failed hook is an error output the model sees (the
   * tool does not run); an answer from a hook stands for the tool's (the afterToolCall hooks still see it).
   */
  async gate(call: ToolCallPart, args: unknown, agent: AgentInfo): Promise<GateOutcome> {
    let current = args;
    for (const entry of this.beforeTool) {
      let answer: { value: BeforeToolCallAnswer } | undefined;
      try {
        answer = await runOne(entry, 'beforeToolCall', this.timeoutMs, [call, current, agent]);
      } catch (error) {
        return { output: { content: `Tool ${call.name} was not run: ${describeThrown(error)}`, isError: true } };
      }
      const value = answer?.value;
      if (value === undefined || value === null) continue;
      if ('deny' in value) {
        const text = `A hook refused this call: ${value.deny}. Do not retry it or try to reach the same result another way.`;
        return { output: { content: text, isError: true } };
      }
      if ('result' in value) return { output: await this.afterToolCall(call, value.result, agent) };
      current = value.args;
    }
    return { args: current };
  }

  /** A call's output through the afterToolCall hooks; a failed hook withholds the result (an error the model sees). */
  async afterToolCall(call: ToolCallPart, output: ToolOutput, agent: AgentInfo): Promise<ToolOutput> {
    let current = output;
    for (const entry of this.afterTool) {
      try {
        const answer = await runOne(entry, 'afterToolCall', this.timeoutMs, [call, current, agent]);
        if (answer?.value !== undefined) current = answer.value;
      } catch (error) {
        return { content: `The result of ${call.name} was withheld: ${describeThrown(error)}`, isError: true };
      }
    }
    return current;
  }

  /** Observers of a turn's end: never awaited by the agent, never able to change the result. */
  afterTurn(end: TurnEnd, agent: AgentInfo): void {
    if (this.afterTurnHooks.length === 0) return;
    void (async () => {
      for (const entry of this.afterTurnHooks) {
        try {
          await runOne(entry, 'afterTurn', this.timeoutMs, [end, agent]);
        } catch (error) {
          console.error('[troupe] an afterTurn hook failed:', error);
        }
      }
    })();
  }
}
