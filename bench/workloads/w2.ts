import type { Message } from '../../src/protocol/index.js';
import { naiveLoop } from '../baselines/naive-xstate.js';
import { plainLoop, toolTable } from '../baselines/plain-loop.js';
import { drainModel, parallelBatchModel, ToolCounter, waitTool } from '../fixtures.js';
import { piRunner, troupe } from '../impls.js';
import { check, timed, type Workload } from '../workload.js';
import { loopCheck, piCheck } from './checks.js';

interface BatchSize {
  calls: number;
  waitMs: number;
}

function batchCheck(result: { messages: readonly Message[]; text: string }, counter: ToolCounter, calls: number) {
  loopCheck(result, counter, calls, 4);
  const tool = result.messages[2];
  check(tool?.role === 'tool', 'expected the tool results as the third message');
  const assistant = result.messages[1];
  const callIds =
    assistant?.role === 'assistant' ? assistant.content.flatMap((p) => (p.type === 'tool_call' ? [p.id] : [])) : [];
  const resultIds = tool.role === 'tool' ? tool.content.map((part) => part.toolCallId) : [];
  check(resultIds.join() === callIds.join(), 'expected one result per call, in call order');
  check(tool.role === 'tool' && tool.content.every((part) => !part.isError), 'expected every tool call to succeed');
}

// One tool (and one pi runner) per wait time, made once per process; every run resets the counter.
const counter = new ToolCounter();
const toolsByWait = new Map<number, ReturnType<typeof waitTool>>();
function toolFor(waitMs: number) {
  const tool = toolsByWait.get(waitMs) ?? waitTool(counter, waitMs);
  toolsByWait.set(waitMs, tool);
  counter.calls = 0;
  return tool;
}
const pis = new Map<number, ReturnType<typeof piRunner>>();
function piFor(waitMs: number) {
  const pi = pis.get(waitMs) ?? piRunner([toolFor(waitMs)]);
  pis.set(waitMs, pi);
  return pi;
}

export const W2: Workload<BatchSize> = {
  id: 'W2',
  title: 'parallel batch',
  unit: 'wall ms',
  better: 'lower',
  sizes: { full: { calls: 50, waitMs: 20 }, smoke: { calls: 4, waitMs: 1 } },
  describe: ({ calls, waitMs }) =>
    `one step with ${calls} tool calls each waiting ${waitMs} ms, toolConcurrency ${calls}`,
  figure: (run) => run.ms,
  runs: { warmup: 3, measured: 15 },
  targets: [{ impl: 'troupe', baseline: 'plain', bound: 'max', ratio: 1.1 }],
  impls: {
    async troupe({ calls, waitMs }) {
      const { createAgent } = await troupe();
      const tool = toolFor(waitMs);
      const agent = createAgent({ model: parallelBatchModel(calls), tools: [tool], toolConcurrency: calls });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      await agent.stop();
      check(result.stopReason === 'completed', `expected stopReason completed, got ${result.stopReason}`);
      batchCheck(result, counter, calls);
      return { ms, cpuMs };
    },
    async plain({ calls, waitMs }) {
      const tools = toolTable([toolFor(waitMs)]);
      const model = parallelBatchModel(calls);
      const { ms, cpuMs, value } = await timed(() => plainLoop(model, tools, 'go', { maxSteps: 2 }));
      batchCheck(value, counter, calls);
      return { ms, cpuMs };
    },
    async naive({ calls, waitMs }) {
      const tools = toolTable([toolFor(waitMs)]);
      const model = parallelBatchModel(calls);
      const { ms, cpuMs, value } = await timed(() => naiveLoop(model, tools, 'go', { maxSteps: 2 }));
      batchCheck(value, counter, calls);
      return { ms, cpuMs };
    },
    async pi({ calls, waitMs }) {
      const run = await piFor(waitMs)();
      toolFor(waitMs);
      const model = parallelBatchModel(calls);
      const { ms, cpuMs, value } = await timed(() => run(model, 'go'));
      piCheck(value, counter, calls, 1);
      return { ms, cpuMs };
    },
    async model({ calls }) {
      const model = parallelBatchModel(calls);
      const { ms, cpuMs } = await timed(async () => (await drainModel(model)) + (await drainModel(model)));
      return { ms, cpuMs };
    },
  },
};
