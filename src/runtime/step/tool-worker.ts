import pLimit from 'p-limit';
import type { ToolWorkerRequest, ValidationOutcomes, WorkerReply } from '../../../machines/agent/index.js';
import type { Decision } from '../../permissions/index.js';
import {
  type AssistantMessage,
  describeThrown,
  errorResult,
  redactToolResult,
  type ToolCallPart,
  type ToolResultPart,
} from '../../protocol/index.js';
import {
  type AnyTool,
  describeIssues,
  type FinishedOutput,
  groupCalls,
  type NormalizedOutput,
  type ToolOutput,
  toToolResult,
} from '../../tools/index.js';
import type { AgentEnv } from '../env/env.js';
import { reportInternalError } from '../env/env.js';
import type { HookRunner } from '../env/hooks.js';
import type { ToolBatch } from '../env/in-flight.js';
import { onMicrotask } from '../env/microtask.js';
import { CallContext, isToolTimeout, withTimeout } from './call-context.js';
import { checkOutput } from './output-check.js';
import type { ToolResultOutbox } from './tool-result-outbox.js';

/**
 * The tool half of the agent's worker (worker.ts): answers the tool phases' requests (validate, authorize, execute)
 * and the structured-output check. A batch nothing can refuse runs as soon as it is valid. Tool errors become
 * results; nothing here throws at the machine.
 */
export function requestTools(env: AgentEnv, request: ToolWorkerRequest, outbox: ToolResultOutbox): void {
  switch (request.type) {
    case 'VALIDATE': {
      const validated = validate(env, request.calls);
      outbox.reply({ type: 'VALIDATED', batch: request.batch, ...validated });
      if (validated.allowed) new UnaskedRun(env, request.calls, validated, outbox, request.batch).schedule();
      break;
    }
    case 'AUTHORIZE':
      authorize(env, request.batch, request.calls).then(
        (decided) => outbox.reply(decided),
        (error: unknown) => {
          reportInternalError(`authorizing the tool calls of agent ${env.agentId} failed`, error);
          outbox.reply(denyAll(request.batch, request.calls, `authorization failed: ${describeThrown(error)}`));
        },
      );
      break;
    case 'EXECUTE':
      run(env, request.batch, request.calls, outbox);
      break;
    case 'CHECK_OUTPUT':
      outbox.reply(checkOutput(env, request.turn, request.inputId));
      break;
  }
}

/** Runs the allowed calls of a batch: through the beforeToolCall hooks first where there are some. */
function run(env: AgentEnv, batch: number, calls: ToolCallPart[], outbox: ToolResultOutbox): void {
  const { hooks } = env.settings;
  // Identical calls of one answer run once: their twins share the result (see addTwins). With gates, after them:
  // each call is gated on its own, and only the calls that pass are deduped.
  let running: Promise<void> | undefined;
  if (hooks?.gates) running = gateThenExecute(env, hooks, batch, calls, outbox);
  else {
    const deduped = env.toolResults.dedupe(calls);
    // The usual batch, one call, runs without `execute`: an async function that returns a promise resolves a
    // microtask hop later than the promise it returns.
    running =
      deduped.length === 1
        ? runIfOpen(env, batch, deduped[0] as ToolCallPart, env.toolBatch, outbox)
        : execute(env, batch, deduped, outbox);
  }
  running?.catch((error: unknown) => {
    // runTool turns every failure of a tool into its result; this is for a failure of our own. The calls still get
    // an answer (the machine takes it only for calls still open), or the batch would never end.
    reportInternalError(`running the tools of agent ${env.agentId} failed`, error);
    outbox.reply(failAll(batch, calls, `the runtime failed to run it: ${describeThrown(error)}`));
  });
}

/**
 * A tool answer's calls (`toolCallsOf` the answer), validated as the model worker gives the answer (MODEL_DONE's
 * `validated`), so that the machine asks for no VALIDATE; none for an answer cut off by the output limit, whose
 * calls the machine refuses.
 */
export function validateAnswer(
  env: AgentEnv,
  message: AssistantMessage,
  calls: ToolCallPart[],
): ValidationOutcomes | undefined {
  if (message.stopReason === 'length') return undefined;
  return calls.length === 0 ? undefined : validate(env, calls);
}

/**
 * The valid calls of an answer nothing can refuse run unasked, as the batch the machine makes of them, once it has
 * taken the answer (a microtask later): an answer it dropped runs nothing, nor one whose batch an interrupt closed.
 */
export function runValidatedAnswer(
  env: AgentEnv,
  calls: ToolCallPart[],
  validated: ValidationOutcomes,
  outbox: ToolResultOutbox,
): void {
  new UnaskedRun(env, calls, validated, outbox, undefined).schedule();
}

/**
 * Nothing can refuse these calls: the valid ones run without an EXECUTE (an event each way costs more than the phase
 * it would announce). They start once the machine has taken the answer, a microtask later: an interrupt it takes
 * first closes the batch, and nothing starts. A class and a bound method rather than closures: a closure made per
 * batch dies with it, and a full collection then drops its optimised code, which every next batch compiles again.
 */
export class UnaskedRun {
  private readonly valid: ToolCallPart[];
  private readonly toolBatch: ToolBatch;

  constructor(
    private readonly env: AgentEnv,
    private readonly calls: ToolCallPart[],
    validated: ValidationOutcomes,
    private readonly outbox: ToolResultOutbox,
    /** The batch they were asked as; undefined for an answer's calls, whose batch the machine makes of them. */
    private readonly asked: number | undefined,
  ) {
    this.valid = [];
    for (let index = 0; index < calls.length; index++) {
      if (validated.outcomes[index]?.error === undefined) this.valid.push(calls[index] as ToolCallPart);
    }
    this.toolBatch = env.toolBatch;
  }

  /** Starts them a microtask later, once the machine has taken the answer (see above). */
  schedule(): void {
    onMicrotask(this.start.bind(this));
  }

  private start(): void {
    const batch = this.asked ?? this.answerBatch();
    if (!this.toolBatch.aborted && batch !== undefined) run(this.env, batch, this.valid, this.outbox);
  }

  /** The batch the machine made of the answer's calls (its calls are the answer's own parts); undefined if none. */
  private answerBatch(): number | undefined {
    const context = this.env.machineContext;
    return context !== undefined && context.calls[0]?.call === this.calls[0] ? context.batch : undefined;
  }
}

function validate(env: AgentEnv, calls: ToolCallPart[]): ValidationOutcomes {
  env.parsedArgs.clear();
  const outcomes = calls.map((call) => {
    const validation = env.tools.validate(call, env.settings.toolIntent);
    if (!validation.ok) return { toolCallId: call.id, error: validation.error };
    env.parsedArgs.set(call.id, validation.args);
    return { toolCallId: call.id };
  });
  // Without a policy, rules or a mode every call is allowed: the machine then asks for no authorization at all, and
  // the worker runs the valid calls unasked.
  return !env.settings.policy && env.settings.permissions.inert ? { outcomes, allowed: true } : { outcomes };
}

function denyAll(batch: number, calls: ToolCallPart[], reason: string): WorkerReply {
  return {
    type: 'AUTHORIZED',
    batch,
    decisions: calls.map((call) => ({ toolCallId: call.id, decision: 'deny', reason })),
  };
}

function failAll(batch: number, calls: ToolCallPart[], why: string): WorkerReply {
  const results = calls.map((call) => ({
    toolCallId: call.id,
    result: redactToolResult(errorResult(call, `Tool ${call.name} failed: ${why}`)),
    terminate: false,
  }));
  return { type: 'TOOL_RESULTS', batch, results };
}

async function authorize(env: AgentEnv, batch: number, calls: ToolCallPart[]): Promise<WorkerReply> {
  const { permissions, policy } = env.settings;
  const { tools } = env;
  const decisions = await Promise.all(
    calls.map(async (call) => {
      let decision: Decision;
      try {
        decision = await permissions.decide(call, env.info, tools.get(call.name), policy);
      } catch (error) {
        // A policy that fails cannot have allowed the call.
        decision = { decision: 'deny', reason: `the policy failed: ${describeThrown(error)}` };
      }
      if (decision.decision === 'deny' && env.bus.wants('permission_denied')) {
        env.emit({
          type: 'permission_denied',
          ...env.describeCall(call),
          ...(decision.reason === undefined ? {} : { reason: decision.reason }),
          ...(decision.rule === undefined ? {} : { rule: decision.rule }),
        });
      }
      return decision.reason === undefined
        ? { toolCallId: call.id, decision: decision.decision }
        : { toolCallId: call.id, decision: decision.decision, reason: decision.reason };
    }),
  );
  return { type: 'AUTHORIZED', batch, decisions };
}

async function execute(
  env: AgentEnv,
  batch: number,
  calls: readonly ToolCallPart[],
  outbox: ToolResultOutbox,
): Promise<void> {
  if (calls.length === 0) return;
  const toolBatch = env.toolBatch;
  const { tools } = env;
  const { toolConcurrency } = env.settings;
  const groups = groupCalls(calls, (call) => tools.get(call.name)?.executionMode ?? 'parallel');
  // A limiter only where a group is larger than the cap: a lone call or a group within it runs as it is.
  let limit: ReturnType<typeof pLimit> | undefined;
  for (const group of groups) {
    if (toolBatch.aborted) return;
    if (group.length === 1) await runIfOpen(env, batch, group[0] as ToolCallPart, toolBatch, outbox);
    else if (group.length <= toolConcurrency) {
      await Promise.all(group.map((call) => runIfOpen(env, batch, call, toolBatch, outbox)));
    } else {
      limit ??= pLimit(toolConcurrency);
      const capped = limit;
      await Promise.all(group.map((call) => capped(() => runIfOpen(env, batch, call, toolBatch, outbox))));
    }
  }
}

/**
 * The beforeToolCall hooks see every allowed call of the batch (the machine waits in `tools.gating`): a call a hook
 * answered or refused is done with that result, one whose arguments a hook changed runs with them (checked again
 * against the tool's schema). What the gate lets through then runs as usual, identical calls once: twins are
 * deduped among the calls that passed, so a call a hook held back never leaves a twin waiting for it, and each twin
 * was seen by the hooks. A call whose arguments a hook changed is no twin of anything.
 */
async function gateThenExecute(
  env: AgentEnv,
  hooks: HookRunner,
  batch: number,
  calls: ToolCallPart[],
  outbox: ToolResultOutbox,
): Promise<void> {
  env.toolResults.dedupe([]);
  if (calls.length === 0) return;
  const toolBatch = env.toolBatch;
  outbox.reply({ type: 'GATING', batch });
  const changed = new Set<string>();
  const outcomes = await Promise.all(calls.map((call) => gateOne(env, hooks, call, changed)));
  if (toolBatch.aborted) return;
  outbox.reply({ type: 'GATED', batch, outcomes });
  const passed = calls.filter((_, index) => outcomes[index]?.result === undefined);
  return execute(env, batch, env.toolResults.dedupe(passed, changed), outbox);
}

async function gateOne(
  env: AgentEnv,
  hooks: HookRunner,
  call: ToolCallPart,
  /** Collects the calls whose arguments a hook changed. */
  changed: Set<string>,
): Promise<{ toolCallId: string; result?: ToolResultPart }> {
  const args = env.parsedArgs.get(call.id);
  const outcome = await hooks.gate(call, args, env.info);
  if ('output' in outcome) return { toolCallId: call.id, result: toToolResult(call, outcome.output).result };
  if (outcome.args !== args) {
    const parsed = env.tools.get(call.name)?.schema.safeParse(outcome.args);
    if (!parsed?.success) {
      const why = parsed ? `:\n${describeIssues(parsed.error)}` : '';
      return {
        toolCallId: call.id,
        result: errorResult(call, `A hook changed the arguments of ${call.name} into invalid ones${why}`),
      };
    }
    env.parsedArgs.set(call.id, parsed.data);
    changed.add(call.id);
  }
  return { toolCallId: call.id };
}

function runIfOpen(
  env: AgentEnv,
  batch: number,
  call: ToolCallPart,
  toolBatch: ToolBatch,
  outbox: ToolResultOutbox,
): Promise<void> | undefined {
  return toolBatch.aborted ? undefined : runTool(env, batch, call, toolBatch, outbox);
}

/**
 * Runs one call and hands its result to the outbox, unless the batch was closed (interrupt) before it finished.
 * A tool that answers synchronously is not awaited: its result is delivered on the outbox's microtask like any
 * other, one promise hop sooner.
 */
async function runTool(
  env: AgentEnv,
  batch: number,
  call: ToolCallPart,
  toolBatch: ToolBatch,
  outbox: ToolResultOutbox,
): Promise<void> {
  // Validation found the tool and parsed the arguments in this batch; a missing entry means the batch closed.
  const parsedArgs = env.parsedArgs;
  if (!parsedArgs.has(call.id)) return;
  const args = parsedArgs.get(call.id);
  const tool = env.tools.get(call.name) as AnyTool;
  const { bus } = env;
  const startedAt = performance.now();
  if (bus.wants('tool_execution_start')) {
    env.emit({ type: 'tool_execution_start', ...env.describeCall(call) });
  }
  const recorded = env.journal.toolResult(call, tool.safeToRepeat === true);
  if (recorded) {
    // Its result is in the session's journal (or it was running when the process died): it does not run again,
    // but it counts on the repetition ladder and a result saved to a file is readable again.
    const replayed = env.toolResults.replayed(call, recorded, env.turn);
    env.offerResultReader();
    outbox.add({ batch, call, outcome: replayed, startedAt, toolBatch });
    addTwins(env, batch, call, replayed, startedAt, toolBatch, outbox);
    return;
  }
  const stored = env.journal.durable();
  if (stored) {
    // Its start is not in the session's journal yet (grouped with other agents' starts into one write): a call
    // that ran and was not journaled would run again after a crash.
    await stored;
    if (toolBatch.aborted) return;
  }
  const ctx = new CallContext(env, call, toolBatch);
  let outcome: NormalizedOutput;
  outbox.running++;
  try {
    const output = tool.execute(args, ctx);
    let settled: unknown;
    if (tool.timeoutMs !== undefined) {
      settled = await withTimeout(Promise.resolve(output), tool.timeoutMs, ctx.controller());
    } else {
      settled = isThenable(output) ? await output : output;
    }
    const { hooks } = env.settings;
    if (hooks?.changesResults) settled = await hooks.afterToolCall(call, settled as ToolOutput, env.info);
    outcome = toToolResult(call, settled);
  } catch (error) {
    const text = isToolTimeout(error)
      ? `Tool ${call.name} timed out after ${tool.timeoutMs} ms and was cancelled.`
      : `Tool ${call.name} failed: ${describeThrown(error)}`;
    outcome = { result: redactToolResult(errorResult(call, text)), terminate: false };
  } finally {
    outbox.running--;
    ctx.settle();
  }
  if (toolBatch.aborted) return; // closed by an interrupt: its "interrupted" result already stands
  const finished = env.toolResults.finish(call, outcome, env.turn);
  if (finished.result !== outcome.result) env.offerResultReader();
  outbox.add({ batch, call, outcome: finished, startedAt, toolBatch });
  addTwins(env, batch, call, finished, startedAt, toolBatch, outbox);
}

/** Calls identical to `call` in the same answer did not run: each gets its result, under its own id. */
function addTwins(
  env: AgentEnv,
  batch: number,
  call: ToolCallPart,
  outcome: FinishedOutput,
  startedAt: number,
  toolBatch: ToolBatch,
  outbox: ToolResultOutbox,
): void {
  for (const twin of env.toolResults.twinsOf(call, outcome)) {
    if (env.bus.wants('tool_execution_start'))
      env.emit({ type: 'tool_execution_start', ...env.describeCall(twin.call) });
    outbox.add({ batch, call: twin.call, outcome: twin.outcome, startedAt, toolBatch });
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
