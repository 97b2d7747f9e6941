import pLimit from 'p-limit';
import { fromCallback } from 'xstate';
import type { PolicyDecision, ToolWorkerRequest, WorkerInput, WorkerReply } from '../../machines/agent/index.js';
import { errorResult, type ToolCallPart, type ToolResultPart, textOf } from '../protocol/index.js';
import { type AnyTool, describeIssues, describeThrown, groupCalls, toToolResult } from '../tools/index.js';
import type { AgentEnv, PolicyAnswer } from './env.js';
import { envOf } from './env.js';

type Reply = (reply: WorkerReply) => void;

/**
 * The agent's tool worker: lives as long as a run and answers the tool phases' requests (validate,
 * authorize, execute) and the structured-output check. Tool errors become results; nothing here throws at
 * the machine.
 */
export const toolWorker = fromCallback<ToolWorkerRequest, WorkerInput>(({ input, system, receive, sendBack }) => {
  const env = envOf(system, input.agentId);
  const reply: Reply = (message) => {
    if (!env.stopped) sendBack(message);
  };
  receive((request) => {
    switch (request.type) {
      case 'VALIDATE':
        reply(validate(env, request.batch, request.calls));
        break;
      case 'AUTHORIZE':
        // Without a policy every call is allowed: answer at once rather than a promise tick later.
        if (!env.settings.policy) reply(allowAll(request.batch, request.calls));
        else void authorize(env, request.batch, request.calls).then(reply);
        break;
      case 'EXECUTE':
        void execute(env, request.batch, request.calls, reply);
        break;
      case 'CHECK_OUTPUT':
        reply(checkOutput(env, request.turn, request.inputId));
        break;
    }
  });
});

function validate(env: AgentEnv, batch: number, calls: ToolCallPart[]): WorkerReply {
  env.parsedArgs.clear();
  const outcomes = calls.map((call) => {
    const validation = env.settings.tools.validate(call);
    if (!validation.ok) return { toolCallId: call.id, error: validation.error };
    env.parsedArgs.set(call.id, validation.args);
    return { toolCallId: call.id };
  });
  return { type: 'VALIDATED', batch, outcomes };
}

function allowAll(batch: number, calls: ToolCallPart[]): WorkerReply {
  return { type: 'AUTHORIZED', batch, decisions: calls.map((call) => ({ toolCallId: call.id, decision: 'allow' })) };
}

async function authorize(env: AgentEnv, batch: number, calls: ToolCallPart[]): Promise<WorkerReply> {
  const policy = env.settings.policy;
  if (!policy) return allowAll(batch, calls);
  const decisions = await Promise.all(
    calls.map(async (call) => {
      try {
        return { toolCallId: call.id, ...normalizeAnswer(await policy(call, env.info)) };
      } catch (error) {
        // A policy that fails cannot have allowed the call.
        return {
          toolCallId: call.id,
          decision: 'deny' as const,
          reason: `the policy failed: ${describeThrown(error)}`,
        };
      }
    }),
  );
  return { type: 'AUTHORIZED', batch, decisions };
}

function normalizeAnswer(answer: PolicyAnswer): { decision: PolicyDecision; reason?: string } {
  const normalized = typeof answer === 'string' ? { decision: answer } : answer;
  if (normalized.decision !== 'allow' && normalized.decision !== 'deny' && normalized.decision !== 'ask') {
    return { decision: 'deny', reason: `the policy answered ${JSON.stringify(normalized.decision)}` };
  }
  return normalized;
}

async function execute(env: AgentEnv, batch: number, calls: ToolCallPart[], reply: Reply): Promise<void> {
  if (calls.length === 0) return;
  const signal = env.toolsController.signal;
  const { tools, toolConcurrency } = env.settings;
  const groups = groupCalls(calls, (call) => tools.get(call.name)?.executionMode ?? 'parallel');
  const run = async (call: ToolCallPart) => {
    if (!signal.aborted) await runTool(env, batch, call, signal, reply);
  };
  // A limiter only where a group is larger than the cap: a lone call or a group within it runs as it is.
  let limit: ReturnType<typeof pLimit> | undefined;
  for (const group of groups) {
    if (signal.aborted) return;
    if (group.length === 1) await run(group[0] as ToolCallPart);
    else if (group.length <= toolConcurrency) await Promise.all(group.map(run));
    else {
      limit ??= pLimit(toolConcurrency);
      const capped = limit;
      await Promise.all(group.map((call) => capped(() => run(call))));
    }
  }
}

/**
 * Runs one call and replies with its result, unless the batch was closed (interrupt) before it finished. The
 * `tool_execution_end` event and the reply happen in one synchronous block, so an observer never sees a tool end
 * whose result the history then replaces with "interrupted".
 */
async function runTool(
  env: AgentEnv,
  batch: number,
  call: ToolCallPart,
  batchSignal: AbortSignal,
  reply: Reply,
): Promise<void> {
  // Validation found the tool and parsed the arguments in this batch; a missing entry means the batch closed.
  const tool = env.settings.tools.get(call.name) as AnyTool;
  if (!env.parsedArgs.has(call.id)) return;
  const args = env.parsedArgs.get(call.id);
  // The call's own controller (aborted with the batch, or by its timeout) costs several µs to make with its
  // signal, more than the rest of a quick call: it is made only when the tool reads `ctx.signal` or has a timeout.
  let controller: AbortController | undefined;
  let onBatchAbort: (() => void) | undefined;
  let settled = false;
  const callController = (): AbortController => {
    if (controller) return controller;
    const own = new AbortController();
    controller = own;
    if (batchSignal.aborted) own.abort(batchSignal.reason);
    else if (!settled) {
      onBatchAbort = () => own.abort(batchSignal.reason);
      batchSignal.addEventListener('abort', onBatchAbort, { once: true });
    }
    return own;
  };
  const { bus } = env;
  const startedAt = performance.now();
  if (bus.wants('tool_execution_start')) {
    env.emit({ type: 'tool_execution_start', toolCallId: call.id, toolName: call.name, args: call.arguments });
  }
  const ctx = {
    toolCallId: call.id,
    agentId: env.agentId,
    get signal() {
      return callController().signal;
    },
    update: (partial: unknown) => {
      if (batchSignal.aborted || controller?.signal.aborted || !bus.wants('tool_execution_update')) return;
      env.emit({ type: 'tool_execution_update', toolCallId: call.id, toolName: call.name, partial: partial as never });
    },
  };

  let outcome: { result: ToolResultPart; terminate: boolean };
  try {
    const running = Promise.resolve(tool.execute(args, ctx));
    const output =
      tool.timeoutMs === undefined ? await running : await withTimeout(running, tool.timeoutMs, callController());
    outcome = toToolResult(call, output);
  } catch (error) {
    const text =
      error instanceof ToolTimeout
        ? `Tool ${call.name} timed out after ${tool.timeoutMs} ms and was cancelled.`
        : `Tool ${call.name} failed: ${describeThrown(error)}`;
    outcome = { result: errorResult(call, text), terminate: false };
  } finally {
    settled = true;
    if (onBatchAbort) batchSignal.removeEventListener('abort', onBatchAbort);
  }
  if (batchSignal.aborted) return; // closed by an interrupt: its "interrupted" result already stands
  if (bus.wants('tool_execution_end')) {
    env.emit({
      type: 'tool_execution_end',
      toolCallId: call.id,
      toolName: call.name,
      result: outcome.result,
      durationMs: performance.now() - startedAt,
    });
  }
  reply({
    type: 'TOOL_RESULTS',
    batch,
    results: [{ toolCallId: call.id, result: outcome.result, terminate: outcome.terminate }],
  });
}

class ToolTimeout extends Error {}

function withTimeout<T>(running: Promise<T>, ms: number, controller: AbortController): Promise<T> {
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

function checkOutput(env: AgentEnv, turn: number, inputId: string): WorkerReply {
  const schema = env.outputSpecFor(inputId)?.schema;
  const pending = env.pending.get(inputId);
  const last = env.transcript.messages[env.transcript.length - 1];
  if (!schema) return { type: 'OUTPUT_CHECKED', turn, ok: true };
  const text = last?.role === 'assistant' ? textOf(last) : '';
  let json: unknown;
  try {
    json = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return {
      type: 'OUTPUT_CHECKED',
      turn,
      ok: false,
      feedback: `Your final answer must be only a JSON object matching the schema, but it is not valid JSON (${describeThrown(error)}). Reply again with the JSON object alone.`,
    };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) {
    if (pending) pending.output = parsed.data;
    return { type: 'OUTPUT_CHECKED', turn, ok: true };
  }
  return {
    type: 'OUTPUT_CHECKED',
    turn,
    ok: false,
    feedback: `Your final answer does not match the schema:\n${describeIssues(parsed.error)}\nReply again with the corrected JSON object alone.`,
  };
}

function stripCodeFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/.exec(text);
  return fenced?.[1] ?? text.trim();
}
