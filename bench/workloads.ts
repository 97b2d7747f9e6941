import type { InspectionEvent } from 'xstate';
import type { AgentEvent } from '../src/protocol/index.js';
import { createAgent, createSupervisor } from '../src/runtime/index.js';
import { naiveLoop } from './baselines/naive-xstate.js';
import { type LoopResult, plainLoop } from './baselines/plain-loop.js';
import { runStatechartAlone } from './baselines/statechart-only.js';
import {
  drainModel,
  echoTool,
  FINAL_TEXT,
  parallelBatchModel,
  streamingModel,
  streamingText,
  swarmModel,
  ToolCounter,
  toolLoopModel,
  waitTool,
} from './fixtures.js';

/** Implementations: Troupe (one or more variants), the two baselines, and the scripted model alone. */
export type ImplId = 'troupe' | 'troupe.on' | 'troupe.stream' | 'plain' | 'naive' | 'model' | 'statechart';
export type WorkloadId = 'W1' | 'W2' | 'W3' | 'W4' | 'W5';
export type Scale = 'full' | 'smoke';

/** One timed run: its wall time, and what it checked (a failed check throws). */
export interface Timed {
  ms: number;
  /** CPU time of the whole process over the same span (user + system, all threads), in ms. */
  cpuMs?: number;
  /** Extra facts the run observed, for the JSON report. */
  facts?: Record<string, number | string>;
}

export interface Target {
  impl: ImplId;
  /** A baseline of the same run, the workload's ideal, or `absolute` (the figure itself against `ratio`). */
  baseline: 'plain' | 'naive' | 'ideal' | 'absolute';
  /** `max`: figure ÷ baseline must be at most `ratio`; `min`: at least. */
  bound: 'max' | 'min';
  ratio: number;
  /** What is compared: the workload's figure (default), the process's peak RSS, or a fact of the last run. */
  metric?: 'figure' | 'rss' | { fact: string; label: string };
}

export interface Workload<S = unknown> {
  id: WorkloadId;
  title: string;
  unit: string;
  better: 'lower' | 'higher';
  sizes: Record<Scale, S>;
  describe(size: S): string;
  /** The figure of one run. */
  figure(run: Timed, size: S): number;
  /** The best figure possible, where the workload has one (W3: waves × model latency). */
  ideal?(size: S): number;
  impls: Partial<Record<ImplId, (size: S) => Promise<Timed>>>;
  /** A separate, untimed run that checks what timing must not pay for (e.g. counting transitions). */
  verify?: Partial<Record<ImplId, (size: S) => Promise<Record<string, number | string>>>>;
  runs: { warmup: number; measured: number };
  /** At most this many rounds of child processes (a long workload runs fewer). */
  rounds?: number;
  targets: Target[];
  /** Set when the workload cannot run yet; the table says why. */
  pending?: string;
}

/** What every implementation answers: Troupe's RunResult and the baselines' LoopResult both have it. */
type Answer = Pick<LoopResult, 'messages' | 'text'>;

export class CheckFailed extends Error {
  override readonly name = 'CheckFailed';
}

export function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new CheckFailed(what);
}

function loopCheck(result: Answer, counter: ToolCounter, calls: number, messages: number): void {
  check(counter.calls === calls, `expected ${calls} tool calls executed, got ${counter.calls}`);
  check(result.messages.length === messages, `expected ${messages} messages, got ${result.messages.length}`);
  check(result.text === FINAL_TEXT, `expected the final text "${FINAL_TEXT}", got "${result.text}"`);
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await fn();
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, value };
}

// ---------------------------------------------------------------------------------------------------------------
// W1: the tool loop

interface ToolLoopSize {
  steps: number;
}

/** The agent statechart's states every tool step must pass through, and every step's. */
const STEP_STATES = ['running.turn.step', 'running.turn.step.model'];
const TOOL_PHASES = [
  'running.turn.step.tools',
  'running.turn.step.tools.validating',
  'running.turn.step.tools.authorizing',
  'running.turn.step.tools.executing',
  'running.turn.step.tools.finalizing',
];

/** Every state path a state value is in, ancestors included: `{ a: { b: 'c' } }` → a, a.b, a.b.c. */
export function activePaths(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [prefix + value];
  if (typeof value !== 'object' || value === null) return [];
  const paths: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    paths.push(prefix + key);
    paths.push(...activePaths(child, `${prefix}${key}.`));
  }
  return paths;
}

/** Counts entries into every state of one actor, microstep by microstep (transient states included). */
export class TransitionCounter {
  readonly entries = new Map<string, number>();
  microsteps = 0;
  private active = new Set<string>();
  private readonly events: InspectionEvent[] = [];

  readonly inspect = (event: InspectionEvent): void => {
    if (event.type === '@xstate.microstep') this.events.push(event);
  };

  /** Replays the recorded microsteps of the actor with this session id. */
  countFor(sessionId: string): this {
    for (const event of this.events) {
      if (event.type !== '@xstate.microstep' || event.actorRef.sessionId !== sessionId) continue;
      this.microsteps++;
      const value = (event.snapshot as { value?: unknown }).value;
      const now = activePaths(value);
      // A state is entered when it was not active before, or when a transition re-enters it (finalizing → the next
      // step leaves and re-enters `step` in one microstep, so both snapshots show it active).
      const reentered = event._transitions.flatMap((t) =>
        t.reenter ? (t.target ?? []).map((node) => node.path.join('.')) : [],
      );
      for (const path of now) {
        const again = reentered.some((root) => path === root || path.startsWith(`${root}.`));
        if (again || !this.active.has(path)) this.entries.set(path, (this.entries.get(path) ?? 0) + 1);
      }
      this.active = new Set(now);
    }
    return this;
  }

  count(path: string): number {
    return this.entries.get(path) ?? 0;
  }
}

export const W1: Workload<ToolLoopSize> = {
  id: 'W1',
  title: 'tool loop',
  unit: 'µs/step',
  better: 'lower',
  sizes: { full: { steps: 200 }, smoke: { steps: 5 } },
  describe: ({ steps }) => `${steps} steps with one synchronous echo call each, then a final text; latency 0`,
  // A step is one model call plus its batch: `steps` tool steps and the final answer.
  figure: (run, { steps }) => (run.ms * 1000) / (steps + 1),
  runs: { warmup: 10, measured: 31 },
  targets: [{ impl: 'troupe', baseline: 'naive', bound: 'max', ratio: 0.3 }],
  impls: {
    async troupe({ steps }) {
      const counter = new ToolCounter();
      const agent = createAgent({ model: toolLoopModel(steps), tools: [echoTool(counter)], maxSteps: steps + 1 });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      await agent.stop();
      check(result.stopReason === 'completed', `expected stopReason completed, got ${result.stopReason}`);
      loopCheck(result, counter, steps, 2 + 2 * steps);
      return { ms, cpuMs };
    },
    async plain({ steps }) {
      const counter = new ToolCounter();
      const model = toolLoopModel(steps);
      const options = { maxSteps: steps + 1, toolConcurrency: 8 };
      const { ms, cpuMs, value } = await timed(() => plainLoop(model, [echoTool(counter)], 'go', options));
      loopCheck(value, counter, steps, 2 + 2 * steps);
      return { ms, cpuMs };
    },
    async naive({ steps }) {
      const counter = new ToolCounter();
      const model = toolLoopModel(steps);
      const options = { maxSteps: steps + 1, toolConcurrency: 8 };
      const { ms, cpuMs, value } = await timed(() => naiveLoop(model, [echoTool(counter)], 'go', options));
      loopCheck(value, counter, steps, 2 + 2 * steps);
      return { ms, cpuMs };
    },
    async model({ steps }) {
      const model = toolLoopModel(steps);
      const {
        ms,
        cpuMs,
        value: events,
      } = await timed(async () => {
        let events = 0;
        for (let i = 0; i <= steps; i++) events += await drainModel(model);
        return events;
      });
      check(model.calls === steps + 1, `expected ${steps + 1} model calls, got ${model.calls}`);
      return { ms, cpuMs, facts: { events } };
    },
    /** The agent statechart alone, its workers answering synchronously: the floor of W1 on this statechart. */
    async statechart({ steps }) {
      const { ms, cpuMs, value } = await timed(() => runStatechartAlone(steps));
      check(value.idle, 'expected the statechart back in idle');
      check(value.modelCalls === steps + 1, `expected ${steps + 1} model requests, got ${value.modelCalls}`);
      check(value.toolResults === steps, `expected ${steps} tool results, got ${value.toolResults}`);
      return { ms, cpuMs };
    },
  },
  verify: {
    /** Every step passes through every step state, every tool step through every tool phase, as transitions. */
    async troupe({ steps }) {
      const counter = new ToolCounter();
      const transitions = new TransitionCounter();
      const agent = createAgent({
        model: toolLoopModel(steps),
        tools: [echoTool(counter)],
        maxSteps: steps + 1,
        inspect: transitions.inspect,
      });
      const result = await agent.prompt('go');
      await agent.stop();
      loopCheck(result, counter, steps, 2 + 2 * steps);
      transitions.countFor(agent.actor.sessionId);
      for (const path of STEP_STATES) {
        const n = transitions.count(path);
        check(n === steps + 1, `expected ${steps + 1} entries into ${path}, got ${n}`);
      }
      for (const path of TOOL_PHASES) {
        const n = transitions.count(path);
        check(n === steps, `expected ${steps} entries into ${path}, got ${n}`);
      }
      const approvals = transitions.count('running.turn.step.tools.awaitingApproval');
      check(approvals === 0, `no call asks for approval, yet awaitingApproval was entered ${approvals} times`);
      return {
        microsteps: transitions.microsteps,
        ...Object.fromEntries([...STEP_STATES, ...TOOL_PHASES].map((path) => [path, transitions.count(path)])),
      };
    },
  },
};

// ---------------------------------------------------------------------------------------------------------------
// W2: one parallel batch

interface BatchSize {
  calls: number;
  waitMs: number;
}

function batchCheck(result: Answer, counter: ToolCounter, calls: number): void {
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
      const counter = new ToolCounter();
      const agent = createAgent({
        model: parallelBatchModel(calls),
        tools: [waitTool(counter, waitMs)],
        toolConcurrency: calls,
      });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      await agent.stop();
      check(result.stopReason === 'completed', `expected stopReason completed, got ${result.stopReason}`);
      batchCheck(result, counter, calls);
      return { ms, cpuMs };
    },
    async plain({ calls, waitMs }) {
      const counter = new ToolCounter();
      const model = parallelBatchModel(calls);
      const options = { maxSteps: 2, toolConcurrency: calls };
      const { ms, cpuMs, value } = await timed(() => plainLoop(model, [waitTool(counter, waitMs)], 'go', options));
      batchCheck(value, counter, calls);
      return { ms, cpuMs };
    },
    async naive({ calls, waitMs }) {
      const counter = new ToolCounter();
      const model = parallelBatchModel(calls);
      const options = { maxSteps: 2, toolConcurrency: calls };
      const { ms, cpuMs, value } = await timed(() => naiveLoop(model, [waitTool(counter, waitMs)], 'go', options));
      batchCheck(value, counter, calls);
      return { ms, cpuMs };
    },
    async model({ calls }) {
      const model = parallelBatchModel(calls);
      const { ms, cpuMs } = await timed(async () => (await drainModel(model)) + (await drainModel(model)));
      return { ms, cpuMs };
    },
  },
};

// ---------------------------------------------------------------------------------------------------------------
// W3: a swarm through a supervisor

interface SwarmSize {
  agents: number;
  toolSteps: number;
  latencyMs: number;
  concurrency: number;
}

/** The swarm's ideal wall time: waves of `concurrency` agents, each of its model calls waiting `latencyMs`. */
function idealSwarmMs({ agents, toolSteps, latencyMs, concurrency }: SwarmSize): number {
  return Math.ceil(agents / concurrency) * (toolSteps + 1) * latencyMs;
}

/** Runs `count` tasks with at most `concurrency` at once; results in task order. */
async function pool<T>(count: number, concurrency: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
}

function swarmCheck(texts: readonly string[], counter: ToolCounter, size: SwarmSize): void {
  check(texts.length === size.agents, `expected ${size.agents} results, got ${texts.length}`);
  const wrong = texts.filter((text) => text !== FINAL_TEXT).length;
  check(wrong === 0, `${wrong} of ${size.agents} subagent results are missing or wrong`);
  const calls = size.agents * size.toolSteps;
  check(counter.calls === calls, `expected ${calls} tool calls executed, got ${counter.calls}`);
}

export const W3: Workload<SwarmSize> = {
  id: 'W3',
  title: 'swarm',
  unit: 'wall ms',
  better: 'lower',
  sizes: {
    full: { agents: 500, toolSteps: 3, latencyMs: 5, concurrency: 100 },
    smoke: { agents: 6, toolSteps: 1, latencyMs: 1, concurrency: 3 },
  },
  describe: (size) =>
    `${size.agents} subagents through a supervisor, ${size.toolSteps} tool steps + a final answer each, model ` +
    `latency ${size.latencyMs} ms, concurrency ${size.concurrency}; ideal ${idealSwarmMs(size)} ms`,
  figure: (run) => run.ms,
  ideal: idealSwarmMs,
  runs: { warmup: 1, measured: 7 },
  targets: [
    { impl: 'troupe', baseline: 'ideal', bound: 'max', ratio: 1.2 },
    { impl: 'troupe', baseline: 'plain', bound: 'max', ratio: 1.5, metric: 'rss' },
  ],
  impls: {
    async troupe(size) {
      const counter = new ToolCounter();
      const supervisor = createSupervisor({
        model: swarmModel(size),
        tools: [echoTool(counter)],
        concurrency: size.concurrency,
        maxRestarts: 0,
      });
      const prompts = Array.from({ length: size.agents }, (_, n) => `task ${n}`);
      const { ms, cpuMs, value: results } = await timed(() => supervisor.swarm(prompts));
      await supervisor.stop();
      const failed = results.filter((result) => result.status !== 'completed').length;
      check(failed === 0, `${failed} of ${size.agents} subagents did not complete`);
      swarmCheck(
        results.map((result) => result.text),
        counter,
        size,
      );
      return { ms, cpuMs };
    },
    async plain(size) {
      const counter = new ToolCounter();
      const model = swarmModel(size);
      const tools = [echoTool(counter)];
      const options = { maxSteps: size.toolSteps + 1, toolConcurrency: 8 };
      const { ms, cpuMs, value } = await timed(() =>
        pool(size.agents, size.concurrency, (n) => plainLoop(model, tools, `task ${n}`, options)),
      );
      swarmCheck(
        value.map((result) => result.text),
        counter,
        size,
      );
      return { ms, cpuMs };
    },
    async naive(size) {
      const counter = new ToolCounter();
      const model = swarmModel(size);
      const tools = [echoTool(counter)];
      const options = { maxSteps: size.toolSteps + 1, toolConcurrency: 8 };
      const { ms, cpuMs, value } = await timed(() =>
        pool(size.agents, size.concurrency, (n) => naiveLoop(model, tools, `task ${n}`, options)),
      );
      swarmCheck(
        value.map((result) => result.text),
        counter,
        size,
      );
      return { ms, cpuMs };
    },
  },
};

// ---------------------------------------------------------------------------------------------------------------
// W5: scale

interface ScaleSize {
  idle: number;
  subagents: number;
  concurrency: number;
}

/** Heap in use after a full collection (when `--expose-gc` gave us `gc`; the smoke test runs without it). */
function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

export const W5: Workload<ScaleSize> = {
  id: 'W5',
  title: 'scale',
  unit: 'KB heap/idle agent',
  better: 'lower',
  sizes: {
    full: { idle: 10_000, subagents: 10_000, concurrency: 200 },
    smoke: { idle: 20, subagents: 20, concurrency: 5 },
  },
  describe: (size) =>
    `${size.idle} idle agents (heap per agent); then ${size.subagents} subagents, one tool step + a final answer ` +
    `each, run to completion under one supervisor, concurrency ${size.concurrency} (wall; heap after ÷ before)`,
  figure: (run, size) => Number(run.facts?.idleHeapBytes ?? 0) / size.idle / 1024,
  // A run takes tens of seconds (see the report): fewer runs than the others, in one round.
  runs: { warmup: 0, measured: 3 },
  rounds: 1,
  targets: [
    { impl: 'troupe', baseline: 'absolute', bound: 'max', ratio: 10 },
    {
      impl: 'troupe',
      baseline: 'absolute',
      bound: 'max',
      ratio: 1.1,
      metric: { fact: 'heapAfterRatio', label: 'heap after the subagents ÷ before' },
    },
  ],
  impls: {
    async troupe(size) {
      // 1. Idle agents: what each one costs in heap, created and left idle.
      const model = swarmModel({ toolSteps: 1, latencyMs: 0 });
      const counter = new ToolCounter();
      const tools = [echoTool(counter)];
      const before = settledHeap();
      const agents = Array.from({ length: size.idle }, () => createAgent({ model, tools }));
      const idleHeapBytes = settledHeap() - before;
      check(
        agents.every((agent) => agent.actor.getSnapshot().matches('idle')),
        'expected every created agent to be idle',
      );
      await Promise.all(agents.map((agent) => agent.stop()));
      agents.length = 0;

      // 2. Subagents run to completion under one supervisor; the heap must come back.
      // The harness's own data (the prompts in, the results out) is made before the first reading and dropped
      // before the second: the ratio is what the runtime keeps, not what the benchmark holds on to.
      const supervisor = createSupervisor({ model, tools, concurrency: size.concurrency, maxRestarts: 0 });
      const prompts = Array.from({ length: size.subagents }, (_, n) => `task ${n}`);
      const start = settledHeap();
      const { ms, cpuMs, value: results } = await timed(() => supervisor.swarm(prompts));
      let completed = 0;
      for (const result of results) if (result.status === 'completed' && result.text === FINAL_TEXT) completed++;
      check(completed === size.subagents, `${size.subagents - completed} subagents did not complete`);
      check(counter.calls === size.subagents, `expected ${size.subagents} tool calls, got ${counter.calls}`);
      results.length = 0;
      prompts.length = 0;
      const end = settledHeap();
      await supervisor.stop();
      return {
        ms,
        cpuMs,
        facts: {
          idleHeapBytes,
          swarmWallMs: ms,
          heapStartMB: start / 2 ** 20,
          heapEndMB: end / 2 ** 20,
          heapAfterRatio: end / start,
        },
      };
    },
  },
};

// ---------------------------------------------------------------------------------------------------------------
// W4: streaming

interface StreamSize {
  deltas: number;
  chars: number;
}

const texts = new Map<string, string>();
function textFor({ deltas, chars }: StreamSize): string {
  const key = `${deltas}x${chars}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = streamingText(deltas, chars);
    texts.set(key, text);
  }
  return text;
}

/** Collects deltas as a UI would: counts them and keeps the text. */
class DeltaSink {
  deltas = 0;
  private readonly parts: string[] = [];

  add(delta: string): void {
    this.deltas++;
    this.parts.push(delta);
  }

  check(size: StreamSize, expected: string, merged = false): void {
    const text = this.parts.join('');
    check(text.length === expected.length, `expected ${expected.length} characters, got ${text.length}`);
    check(text === expected, 'the streamed text differs from the model text');
    if (!merged) check(this.deltas === size.deltas, `expected ${size.deltas} deltas, got ${this.deltas}`);
  }
}

export const W4: Workload<StreamSize> = {
  id: 'W4',
  title: 'streaming',
  unit: 'deltas/s',
  better: 'higher',
  sizes: { full: { deltas: 50_000, chars: 4 }, smoke: { deltas: 50, chars: 4 } },
  describe: ({ deltas, chars }) => `one model call streaming ${deltas} text deltas of ${chars} characters; latency 0`,
  figure: (run, { deltas }) => deltas / (run.ms / 1000),
  runs: { warmup: 2, measured: 9 },
  targets: [
    { impl: 'troupe.on', baseline: 'plain', bound: 'min', ratio: 0.4 },
    { impl: 'troupe.stream', baseline: 'plain', bound: 'min', ratio: 0.4 },
  ],
  impls: {
    async 'troupe.on'(size) {
      const expected = textFor(size);
      const agent = createAgent({ model: streamingModel(expected, size.chars) });
      const sink = new DeltaSink();
      agent.on('message_update', (event) => {
        if (event.delta.type === 'text') sink.add(event.delta.delta);
      });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      await agent.stop();
      check(result.stopReason === 'completed', `expected stopReason completed, got ${result.stopReason}`);
      sink.check(size, expected);
      return { ms, cpuMs };
    },
    async 'troupe.stream'(size) {
      const expected = textFor(size);
      const agent = createAgent({ model: streamingModel(expected, size.chars) });
      const sink = new DeltaSink();
      let last: AgentEvent | undefined;
      const { ms, cpuMs } = await timed(async () => {
        for await (const event of agent.stream('go')) {
          if (event.type === 'message_update' && event.delta.type === 'text') sink.add(event.delta.delta);
          last = event;
        }
      });
      await agent.stop();
      check(last?.type === 'turn_end' && last.stopReason === 'completed', 'expected the stream to end with turn_end');
      // The stream may merge consecutive deltas when its reader falls behind (bounded buffering): every
      // character must arrive, in order; how many events carried them is reported.
      sink.check(size, expected, true);
      return { ms, cpuMs, facts: { events: sink.deltas } };
    },
    async plain(size) {
      const expected = textFor(size);
      const sink = new DeltaSink();
      const options = { maxSteps: 1, toolConcurrency: 1, onTextDelta: (delta: string) => sink.add(delta) };
      const { ms, cpuMs } = await timed(() => plainLoop(streamingModel(expected, size.chars), [], 'go', options));
      sink.check(size, expected);
      return { ms, cpuMs };
    },
    async naive(size) {
      const expected = textFor(size);
      const sink = new DeltaSink();
      const options = { maxSteps: 1, toolConcurrency: 1, onTextDelta: (delta: string) => sink.add(delta) };
      const { ms, cpuMs } = await timed(() => naiveLoop(streamingModel(expected, size.chars), [], 'go', options));
      sink.check(size, expected);
      return { ms, cpuMs };
    },
    async model(size) {
      const expected = textFor(size);
      const { ms, cpuMs, value: events } = await timed(() => drainModel(streamingModel(expected, size.chars)));
      check(events === size.deltas + 1, `expected ${size.deltas + 1} model events, got ${events}`);
      return { ms, cpuMs };
    },
  },
};

// biome-ignore lint/suspicious/noExplicitAny: the registry holds workloads of different sizes.
export const WORKLOADS: Record<WorkloadId, Workload<any>> = { W1, W2, W3, W4, W5 };

/** The implementations of a workload in table order: Troupe's variants, the baselines, the model alone. */
export function implsOf(workload: Workload): ImplId[] {
  const order: ImplId[] = ['troupe', 'troupe.on', 'troupe.stream', 'plain', 'naive', 'model', 'statechart'];
  return order.filter((id) => workload.impls[id] !== undefined);
}
