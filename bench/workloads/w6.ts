import type { AgentEvent, Message, ModelRequest } from '../../src/index.js';
import { type ScriptedAnswer, scriptedModel } from '../../src/providers/scripted.js';
import { echoTool, ToolCounter } from '../fixtures.js';
import { troupe } from '../impls.js';
import { check, settledHeap, timed, type Workload } from '../workload.js';

interface LongSession {
  turns: number;
  /** The context window the agent keeps its requests in (tokens). */
  window: number;
  /** Heap and per-turn CPU are sampled every this many turns. */
  every: number;
}

const SUMMARY = 'I have been answering numbered questions with one lookup each; nothing is left open.';
const ANSWER = `The lookup found it. ${'Here is what the item says, in a few sentences. '.repeat(6)}`;
const RESULT = `found: ${'a line of the looked-up record, '.repeat(24)}`;

/**
 * Every turn is a prompt, one tool step (a lookup with a ~800-character result) and a ~300-character answer: ~350
 * tokens a turn, so a 6,000-token window compacts every dozen turns or so. The summary call is scripted (instant),
 * so what the compaction costs here is the runtime's own work: the cut, the rendering, the note, the new view.
 */
function longSessionModel() {
  return scriptedModel(
    (request: ModelRequest): ScriptedAnswer => {
      if (request.system?.startsWith('You are compacting')) return { text: SUMMARY };
      const last = request.messages[request.messages.length - 1] as Message;
      if (last.role === 'user') return { toolCalls: [{ name: 'echo', args: { text: RESULT } }] };
      return { text: ANSWER };
    },
    { record: false },
  );
}

/** Least-squares slope of y over x. */
function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function longSession(size: LongSession, compaction: boolean) {
  const { createAgent } = await troupe();
  const counter = new ToolCounter();
  const agent = createAgent({
    model: longSessionModel(),
    tools: [echoTool(counter)],
    context: compaction ? { contextWindow: size.window } : { contextWindow: size.window, compactAt: false },
  });
  let compactions = 0;
  let compactionMs = 0;
  let compactionStarted = 0;
  let maxTokens = 0;
  agent.on('compaction_start', (event: AgentEvent) => {
    compactionStarted = performance.now();
    if (event.type === 'compaction_start') maxTokens = Math.max(maxTokens, event.tokens);
  });
  agent.on('compaction_end', () => {
    compactions++;
    compactionMs += performance.now() - compactionStarted;
  });
  const heap: [number, number][] = [];
  const cpuPerTurn: [number, number][] = [];
  const heapStart = settledHeap();
  const run = await timed(async () => {
    let cpu = process.cpuUsage();
    for (let turn = 1; turn <= size.turns; turn++) {
      const result = await agent.prompt(`question ${turn}: look it up`);
      check(result.stopReason === 'completed', `turn ${turn} ended with ${result.stopReason}`);
      if (turn % size.every === 0) {
        const used = process.cpuUsage(cpu);
        cpuPerTurn.push([turn, (used.user + used.system) / size.every]);
        heap.push([turn, (settledHeap() - heapStart) / 1024]);
        cpu = process.cpuUsage();
      }
    }
  });
  check(counter.calls === size.turns, `expected ${size.turns} tool calls, got ${counter.calls}`);
  check(!compaction || compactions > 0, 'expected the session to compact');
  const state = agent.getState();
  check(!compaction || state.context.tokens <= size.window, `the window holds ${state.context.tokens} tokens`);
  const stored = state.messages;
  await agent.stop();
  const tenth = Math.max(1, Math.floor(cpuPerTurn.length / 10));
  const mean = (points: [number, number][]) => points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  const first = mean(cpuPerTurn.slice(0, tenth));
  const last = mean(cpuPerTurn.slice(-tenth));
  return {
    ms: run.ms,
    cpuMs: run.cpuMs,
    facts: {
      usPerTurn: (run.cpuMs * 1000) / size.turns,
      cpuSlopeUsPerTurnPer1k: slope(cpuPerTurn) * 1000,
      lastOverFirst: last / first,
      heapSlopeBytesPerTurn: slope(heap) * 1024,
      heapBytesPerStoredMessage: ((heap.at(-1)?.[1] ?? 0) * 1024) / stored,
      compactions,
      compactionUsPerTurn: (compactionMs * 1000) / size.turns,
      compactionShare: compactionMs / run.ms,
      storedMessages: stored,
      windowTokensAtEnd: state.context.tokens,
      peakTokensBeforeCompaction: maxTokens,
    },
  };
}

export const W6: Workload<LongSession> = {
  id: 'W6',
  title: 'long session',
  unit: 'µs CPU/turn',
  better: 'lower',
  sizes: {
    full: { turns: 1_000, window: 6_000, every: 50 },
    smoke: { turns: 40, window: 6_000, every: 10 },
  },
  describe: (size) =>
    `${size.turns} turns (prompt, one tool step, answer) in a ${size.window.toLocaleString('en')}-token window with ` +
    'compaction on; CPU per turn and heap sampled every ' +
    `${size.every} turns (slopes), and the compaction's own time per turn`,
  figure: (run) => Number(run.facts?.usPerTurn ?? 0),
  runs: { warmup: 0, measured: 3 },
  rounds: 1,
  labels: { 'troupe.uncompacted': 'Troupe, compaction off' },
  targets: [
    // Flat: the last tenth of the session costs at most 1.5× the first tenth per turn.
    {
      impl: 'troupe',
      baseline: 'absolute',
      bound: 'max',
      ratio: 1.5,
      metric: { fact: 'lastOverFirst', label: 'CPU per turn, last tenth ÷ first tenth' },
    },
  ],
  notes: ({ impl, median, facts: f }) => [
    `${impl}: ${median.toFixed(0)} µs CPU per turn; CPU slope ${Number(f.cpuSlopeUsPerTurnPer1k).toFixed(1)} µs per ` +
      `turn per 1,000 turns (last tenth ÷ first ${Number(f.lastOverFirst).toFixed(2)}×); heap slope ` +
      `${Number(f.heapSlopeBytesPerTurn).toFixed(0)} B/turn (${Number(f.heapBytesPerStoredMessage).toFixed(0)} B per ` +
      `stored message: the transcript keeps every fact); ${f.compactions} compactions, ` +
      `${Number(f.compactionUsPerTurn).toFixed(1)} µs of compaction per turn ` +
      `(${(Number(f.compactionShare) * 100).toFixed(1)} % of wall); window at the end ${f.windowTokensAtEnd} tokens.`,
  ],
  impls: {
    troupe: (size) => longSession(size, true),
    // The same session without compaction (the window is not enforced): what compaction adds, turn for turn.
    'troupe.uncompacted': (size) => longSession(size, false),
  },
};
